"""Issue 11, deliverable 1: a record a service cannot apply is written to dead.letters and
the consumer moves on; only transient broker errors are retried, with bounded backoff."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from datetime import UTC, datetime

import pytest
from aiokafka.errors import KafkaConnectionError, MessageSizeTooLargeError

from services.infra import metrics
from services.infra.batching import retried_on_transient
from services.infra.dead_letters import apply_each
from shared.events.dead_letters import KEEP_VALUE_BYTES, DeadLetter
from shared.topics import DEAD_LETTERS_TOPIC, TABLE_EVENTS_TOPIC
from tests.unit.agent_loop_support import Message

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


class Event:
    def __init__(self, offset: int, value: bytes | None, key: bytes | None = b"T1") -> None:
        self.message = Message(TABLE_EVENTS_TOPIC, 2, offset, key, value)
        self.value = value


def parse_and_echo(event: Event) -> list[tuple[str, bytes, bytes]]:
    """A consumer's domain code: parses the record, raises on anything it cannot apply."""
    data = json.loads(event.value)
    if data.get("profile") == "no-such-profile":
        raise LookupError("unknown profile 'no-such-profile'")
    return [("out", b"k", event.value)]


def letters(records) -> list[DeadLetter]:
    return [DeadLetter.model_validate_json(v) for t, _, v in records if t == DEAD_LETTERS_TOPIC]


def test_poison_records_are_dead_lettered_and_the_good_ones_applied():
    deep = b"[" * 100_000 + b"]" * 100_000  # RecursionError in the parser (issue 11, 1)
    batch = [Event(10, b'{"ok": 1}'), Event(11, deep), Event(12, b"\x00garbage bytes\xff"),
             Event(13, b'{"profile": "no-such-profile"}'), Event(14, None), Event(15, b'{"ok": 2}')]
    before = metrics.DEAD_LETTERS.labels("svc", TABLE_EVENTS_TOPIC, "RecursionError")._value.get()
    records = apply_each("svc", batch, parse_and_echo, lambda: NOW)
    assert [v for t, _, v in records if t == "out"] == [b'{"ok": 1}', b'{"ok": 2}']
    dead = letters(records)
    assert [d.offset for d in dead] == [11, 12, 13, 14]
    assert all(d.topic == TABLE_EVENTS_TOPIC and d.partition == 2 and d.service == "svc"
               for d in dead)
    assert dead[0].dead_letter_id == "svc:table.events:2:11"
    assert dead[2].error_type == "LookupError" and "no-such-profile" in dead[2].error
    assert metrics.DEAD_LETTERS.labels("svc", TABLE_EVENTS_TOPIC, "RecursionError")._value.get() \
        == before + 1


def test_a_dead_letter_keeps_the_bytes_or_their_digest():
    small, big = b"\xff\xfe not json", b"x" * (KEEP_VALUE_BYTES + 1)
    dead = letters(apply_each("svc", [Event(1, small, key=b"\x80key"), Event(2, big)],
                              parse_and_echo, lambda: NOW))
    assert base64.b64decode(dead[0].value_b64) == small
    assert base64.b64decode(dead[0].key_b64) == b"\x80key"
    assert dead[1].value_b64 is None and dead[1].value_size == len(big)
    assert dead[1].value_sha256 == hashlib.sha256(big).hexdigest()
    assert all(len(v) < 1_000_000 for _, _, v in
               apply_each("svc", [Event(3, big)], parse_and_echo, lambda: NOW))


def test_a_long_error_is_cut():
    def explode(event):
        raise ValueError("e" * 10_000)

    (dead,) = letters(apply_each("svc", [Event(1, b"{}")], explode, lambda: NOW))
    assert len(dead.error) == 2000


def _run(apply, batch=("r",)):
    return asyncio.run(retried_on_transient(apply, "test", first_pause_s=0.001, max_pause_s=0.004)(
        list(batch)))


def test_transient_broker_errors_are_retried_until_they_pass():
    calls = []

    async def flaky(batch):
        calls.append(len(batch))
        if len(calls) < 4:
            raise KafkaConnectionError("broker away")

    _run(flaky)
    assert len(calls) == 4


@pytest.mark.parametrize("error", [MessageSizeTooLargeError(), ValueError("a bug"),
                                   RecursionError()])
def test_other_errors_are_not_retried(error):
    calls = []

    async def failing(batch):
        calls.append(1)
        raise error

    with pytest.raises(type(error)):
        _run(failing)
    assert calls == [1]
