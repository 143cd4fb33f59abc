"""Test doubles for an agent's consume loop without a broker (Faust has no in-memory
transport): events as a Faust stream yields them, a stream that yields a list of them and
records their acks, and a broker standing in for the app's producer (`publish_all` and
`flush_all` as the services call them, and the producer `run_batches` flushes). Every step
lands in one ordered log, so a test can tell what happened before what.

The service code under test is the real one: the batch functions, `run_batches` and the
agents' bodies. Faust tables are replaced by dicts (the services only `get`, read and
assign keys), which is how they behave inside one partition of a running worker."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from types import SimpleNamespace

from faust.types import TP

from croupier.services.infra import batching

Record = tuple[str, bytes, bytes]
APPENDED = datetime(2026, 1, 1, tzinfo=UTC)  # when a fake broker appends (folds without expiry)


@dataclass
class Message:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    generation_id: int = 1
    timestamp: float | None = None

    @property
    def tp(self) -> TP:
        return TP(self.topic, self.partition)


class Event:
    """One record as a Faust stream yields it (weak-referenceable, as `processing` needs)."""

    def __init__(self, topic: str, offset: int, key: bytes | None, value: bytes | None,
                 partition: int = 0, timestamp: float | None = None) -> None:
        self.message = Message(topic, partition, offset, key, value, timestamp=timestamp)
        self.key, self.value = key, value


def events_on(topic: str, records: Iterable[tuple[bytes | None, bytes | None]],
              partition: int = 0, first_offset: int = 0) -> list[Event]:
    """`(key, value)` records as consecutive offsets of one partition."""
    return [Event(topic, first_offset + i, key, value, partition)
            for i, (key, value) in enumerate(records)]


class _Buffer:
    """The producer buffer `run_batches` tracks: nothing is ever left unacknowledged here."""

    def put(self, fut: asyncio.Future) -> None:  # the tables are dicts: never called
        raise AssertionError("a Faust table wrote through the producer in a unit test")


class Broker:
    """What the loop published and flushed, in order: `steps` holds ("publish", records),
    ("flush",) and ("ack", topic, offset) as they happened. `before_flush` callbacks run at
    each flush, before it returns (to look at what was already answered then)."""

    def __init__(self) -> None:
        self.steps: list[tuple] = []
        self.buffer = _Buffer()
        self.before_flush: list[Callable[[], None]] = []

    @property
    def published(self) -> list[Record]:
        return [record for step in self.steps if step[0] == "publish" for record in step[1]]

    def topics(self) -> list[str]:
        return [topic for topic, _, _ in self.published]

    def kinds(self) -> list[str]:
        return [step[0] for step in self.steps]

    async def publish_all(self, app, records: Iterable[Record]) -> None:
        records = list(records)
        if records:
            self.steps.append(("publish", records))

    async def flush_all(self, producer=None) -> None:
        for look in self.before_flush:
            look()
        self.steps.append(("flush",))

    async def flush(self) -> None:  # the producer's own flush, which run_batches calls
        await self.flush_all()


class Stream:
    """A stream of `events` for `run_batches`: `noack()` is itself; acks are logged."""

    def __init__(self, app_id: str, broker: Broker, events: list[Event]) -> None:
        self.app = SimpleNamespace(producer=broker, conf=SimpleNamespace(id=app_id))
        self.broker = broker
        self._events = events

    def noack(self) -> Stream:
        return self

    async def events(self):
        for event in self._events:
            yield event

    async def ack(self, event: Event) -> None:
        self.broker.steps.append(("ack", event.message.topic, event.message.offset))


async def _nothing_committed() -> dict:
    return {}


def run_agent(monkeypatch, agent, app_id: str, broker: Broker, events: list[Event],
              timeout_s: float = 10.0) -> None:
    """Run the agent's own body (the function a bootstrap registers, or a Faust agent's
    `fun`) over `events` until the stream ends. The group's committed offsets are none (a
    fresh group): nothing asks a broker."""
    monkeypatch.setattr(batching, "committed_offsets", lambda app, service: _nothing_committed)
    stream = Stream(app_id, broker, events)
    body = getattr(agent, "fun", agent)
    asyncio.run(asyncio.wait_for(body(stream), timeout_s))
