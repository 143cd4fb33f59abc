"""dealer-event resumes `dealer.inputs` from its own log, not from the group's commit.

faust-streaming can commit past a record nobody processed (upstream #606). Here the group's
commit is moved past an input by hand, with the worker stopped: the restarted worker still
decides that input, because its own log (`dealer.log`, one entry per decided input) says
where its decisions stopped (docs/decisions/kernel.md, "dealer-event on the kernel").
And a zombie's entry on `dealer.log` that lands before the owner's wins: the owner's input
is decided again on it and answered as the log says.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from kafka import KafkaProducer, TopicPartition

from services.infra.kafka_security import ADMIN, kafka_python_options
from services.infra.log_reader import read_to_end
from services.infra.own_log import entries_of
from services.infra.settings import Settings
from shared.events.dealer_log import DealerEntry
from shared.events.inputs import CloseBetting, NewShoe, OpenRound
from shared.events.table import BettingClosed, seal
from shared.topics import DEALER_INPUTS_TOPIC, DEALER_LOG_TOPIC
from tests.conftest import instance_for
from tests.integration.tables_live_support import (
    HandDriver,
    commit_past,
    rejections,
    running_services,
    table_events,
)

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("croupier-checkpoints")


@pytest.fixture(scope="module")
def services(platform_kafka, home):
    with running_services(platform_kafka, home, ["dealer-event"],
                          CROUPIER_BETTING_WINDOW_SECONDS="30") as procs:
        yield procs


def _decided(bootstrap: str, table_id: str, input_id: str) -> bool:
    events = table_events(bootstrap, {table_id}).get(table_id, [])
    return (any(e.input_id == input_id for e in events)
            or any(r.input_id == input_id for r in rejections(bootstrap, {table_id})))


def test_an_input_the_group_committed_past_is_still_decided_after_restart(
        services, platform_kafka, home):
    dealer = services["dealer-event"]
    hand = HandDriver(dealer.base_url, f"CKPT-{uuid.uuid4().hex[:6]}")
    hand.ok(NewShoe, shoe_id="S1", profile="sbo-baccarat")
    hand.ok(OpenRound, round_id="R1", dealer="Ayu")
    dealer.stop()

    # an input the worker never saw, and the group's commit moved past it
    skipped = hand.make.make(CloseBetting, round_id="R1", role="supervisor",
                             reason_text="test: the input the commit skipped")
    producer = KafkaProducer(bootstrap_servers=platform_kafka, **kafka_python_options(ADMIN))
    meta = producer.send(DEALER_INPUTS_TOPIC, key=hand.table_id.encode(),
                         value=skipped.model_dump_json().encode()).get(timeout=30)
    producer.close()
    tp = TopicPartition(DEALER_INPUTS_TOPIC, meta.partition)
    commit_past(platform_kafka, f"{instance_for(home)}-dealer-event", tp, meta.offset + 1)

    dealer.start()
    dealer.wait_ready(90)
    # the next input on the partition comes after the commit: the stream hands it on
    later = hand.send(hand.make.make(OpenRound, round_id="R2", dealer="Ayu"))
    deadline = time.monotonic() + 30
    while not _decided(platform_kafka, hand.table_id, skipped.input_id):
        assert time.monotonic() < deadline, (
            f"input {skipped.input_id} at offset {meta.offset} of {tp} was never decided "
            f"(then: {later})")
        time.sleep(0.5)
    events = table_events(platform_kafka, {hand.table_id})[hand.table_id]
    closed = [e for e in events if e.input_id == skipped.input_id]
    assert [e.type for e in closed] == ["betting_closed"], closed


def test_an_input_decided_after_a_rivals_entry_is_answered_as_the_log_says(
        services, platform_kafka):
    """A zombie (a worker that lost the table without noticing) writes the next entry of
    dealer.log on the owner's head first: it closes the round's betting. The owner's entry
    for the next input lands after it and is void (its chain does not continue the log's);
    the owner folds the log again (real acks, a real read of dealer.log), publishes the
    zombie's valid event from its outbox, decides the input again on it and answers that
    decision, never the void one (docs/decisions/dealer-fencing.md)."""
    dealer = services["dealer-event"]
    dealer.wait_ready(90)
    hand = HandDriver(dealer.base_url, f"FENCE-{uuid.uuid4().hex[:6]}")
    hand.ok(NewShoe, shoe_id="S1", profile="sbo-baccarat")
    hand.ok(OpenRound, round_id="R1", dealer="Ayu")
    head = table_events(platform_kafka, {hand.table_id})[hand.table_id][-1]
    last = _last_entry(platform_kafka, hand.table_id)
    key = Settings().table_events_key_bytes
    closed = seal(BettingClosed, table_id=hand.table_id, seq=head.seq + 1,
                  prev_hash=head.hash, occurred_at=datetime.now(UTC), round_id="R1",
                  reason="timer", key=key)
    zombie = DealerEntry(entry_id="zombie-worker:1", prev=last.entry_id, source=last.source,
                         published_through=last.published_through,
                         recorded_at=datetime.now(UTC), table_id=hand.table_id,
                         events=(closed,))
    producer = KafkaProducer(bootstrap_servers=platform_kafka, **kafka_python_options(ADMIN))
    producer.send(DEALER_LOG_TOPIC, key=hand.table_id.encode(),
                  value=zombie.model_dump_json().encode()).get(timeout=30)
    producer.close()

    close = hand.make.make(CloseBetting, round_id="R1", role="supervisor",
                           reason_text="test: the owner's close, decided on the old head")
    status, body = hand.post(close.model_dump_json().encode())
    assert body.get("reason_code") == "betting_already_closed", (status, body)
    events = table_events(platform_kafka, {hand.table_id})[hand.table_id]
    assert [e.hash for e in events if e.seq == head.seq + 1] == [closed.hash], \
        "the zombie's close is the chain's, published once; the owner's void one never"
    table = httpx.get(f"{dealer.base_url}/tables/{hand.table_id}", timeout=30).json()
    assert table["head_hash"] == closed.hash and table["round"]["phase"] == "dealing", table


def _last_entry(bootstrap: str, table_id: str) -> DealerEntry:
    """The newest entry of the dealer.log partition that holds `table_id` (whatever its
    table: a zombie chains on the partition's head)."""
    records = [(r.partition, e) for r in read_to_end(bootstrap, DEALER_LOG_TOPIC)
               for e in entries_of(r.value, DealerEntry.model_validate_json)]
    partitions = {p for p, e in records if e.table_id == table_id}
    assert len(partitions) == 1, f"{table_id}'s entries are on partitions {partitions}"
    (partition,) = partitions
    return [e for p, e in records if p == partition][-1]
