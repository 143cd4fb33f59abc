"""dealer-event's own input checkpoints: each record it writes names its dealer.inputs
record and how far the partition was decided before; the rebuild folds those into where
each partition resumes (docs/decisions/dealer-checkpoints.md). No broker."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from types import SimpleNamespace

from faust.types import TP

from services.dealer_event import app as dealer_app
from services.dealer_event.rebuild import (
    Checkpoints,
    InputCheckpoint,
    fold_events,
    fold_rejections,
)
from services.infra import consume_loop
from services.infra.consumer import Owners
from shared.events.inputs import NewShoe, OpenRound
from shared.events.rejections import InputRefused
from shared.events.sources import InputPosition
from shared.events.table import ShoeStarted, parse_table_event, seal
from shared.topics import DEALER_INPUTS_TOPIC, DEALER_REJECTIONS_TOPIC, TABLE_EVENTS_TOPIC
from tests.unit.dealer_runtime_support import World, close


def at(item: tuple[bytes, int], offset: int) -> tuple[bytes, int, int]:
    raw, partition = item
    return raw, partition, offset


def checkpoints(records, events_key: bytes | None = None) -> Checkpoints:
    """The rebuild's fold of every partition of table.events and dealer.rejections."""
    inputs: Checkpoints = {}
    states: dict = {}
    fold_events(states, [(k, v) for t, k, v in records if t == TABLE_EVENTS_TOPIC], events_key,
                inputs=inputs)
    fold_rejections(states, [v for t, k, v in records if t == DEALER_REJECTIONS_TOPIC], inputs)
    return inputs


def refs(records) -> list[tuple[str, InputPosition | None]]:
    out = []
    for topic, _, value in records:
        record = (parse_table_event(value) if topic == TABLE_EVENTS_TOPIC
                  else InputRefused.model_validate_json(value))
        out.append((topic, record.input_ref))
    return out


def two_batches(w: World) -> None:
    """Tables A and C on partition 0, B on partition 1; events and refusals of both kinds."""
    shoe = {"shoe_id": "S1", "profile": "sbo-baccarat"}
    first = [at(w.raw("A", NewShoe, **shoe), 0), at(w.raw("C", NewShoe, **shoe), 1),
             at(w.raw("A", OpenRound, round_id="R1", dealer="Ayu"), 2),
             at(w.raw("B", OpenRound, round_id="R1", dealer="Ayu"), 0),  # no shoe: refused
             at(w.raw("B", NewShoe, **shoe), 1)]
    second = [at(w.raw("C", OpenRound, round_id="R1", dealer="Ayu"), 3),
              at(close(w, "R1"), 4),
              at(w.raw("A", NewShoe, shoe_id="S2", profile="sbo-baccarat"), 5),  # refused
              (b'{"table_id": "B", "input_id": "junk"}', 1, 2)]  # malformed: not a decision

    async def go():
        await w.runtime.handle_batch(first)
        await w.runtime.handle_batch(second)

    asyncio.run(go())


def test_every_record_names_its_input_and_how_far_its_partition_was_decided():
    w = World()
    two_batches(w)
    named = refs(w.log.records)
    assert all(ref is not None for _, ref in named)
    assert (DEALER_REJECTIONS_TOPIC, InputPosition(partition=1, offset=0, decided_through=-1)) \
        in named
    assert (TABLE_EVENTS_TOPIC, InputPosition(partition=0, offset=4, decided_through=2)) in named
    assert (DEALER_REJECTIONS_TOPIC, InputPosition(partition=1, offset=2, decided_through=1)) \
        in named


def test_the_rebuild_resumes_each_partition_after_what_its_records_decided():
    w = World()
    two_batches(w)
    inputs = checkpoints(w.log.records)
    assert inputs == {0: InputCheckpoint(2, {3, 4, 5}), 1: InputCheckpoint(1, {2})}
    assert inputs[0].resume_at() == 3 and inputs[1].resume_at() == 2
    assert [o for o in range(7) if inputs[0].applied(o)] == [0, 1, 2, 3, 4, 5]
    # the same records in any order (the topics are read one after the other) fold the same
    assert checkpoints(list(reversed(w.log.records))) == inputs


def test_a_worker_skips_what_the_log_decided_and_decides_the_rest():
    w = World()
    two_batches(w)
    written = len(w.log.records)
    fresh = World(log=w.log)  # a restarted worker on the same log
    again = [at(w.raw("C", OpenRound, round_id="R1", dealer="Ayu"), 3),  # redelivered
             at(w.raw("A", NewShoe, shoe_id="S2", profile="sbo-baccarat"), 5),  # redelivered
             at(w.raw("C", OpenRound, round_id="R2", dealer="Ayu"), 6)]  # new

    reports = asyncio.run(fresh.runtime.handle_batch(again))
    assert reports[:2] == [None, None], "decided by the log: skipped, nothing written again"
    assert reports[2]["status"] == "refused"  # R1 is in progress on C
    assert refs(w.log.records[written:]) == [
        (DEALER_REJECTIONS_TOPIC, InputPosition(partition=0, offset=6, decided_through=2))]
    assert fresh.runtime.inputs[0] == InputCheckpoint(6, set())


def test_a_batch_cut_between_the_topics_decides_again_only_what_is_missing():
    """A crash acknowledged the event of offset 4 but not the refusal of offset 3 (two
    topics: no order between them): the checkpoint stays at 2, offset 4 is known decided;
    the retry decides offset 3 again and writes nothing for offset 4."""
    w = World()
    two_batches(w)
    lost: list = []

    async def torn(records) -> None:
        for record in records:
            (lost if record[0] == DEALER_REJECTIONS_TOPIC else w.log.records).append(record)
        raise ConnectionError("broker gone")

    publish, w.runtime._publish_all = w.runtime._publish_all, torn
    batch = [at(w.raw("B", NewShoe, shoe_id="S2", profile="sbo-baccarat"), 3),  # refused
             at(w.raw("B", OpenRound, round_id="R1", dealer="Ayu"), 4)]
    try:
        asyncio.run(w.runtime.handle_batch(batch))
    except ConnectionError:
        pass
    assert [r[0] for r in lost] == [DEALER_REJECTIONS_TOPIC]
    inputs = checkpoints(w.log.records)
    assert inputs[1] == InputCheckpoint(2, {4}) and inputs[1].resume_at() == 3

    written = len(w.log.records)
    w.runtime._publish_all = publish
    reports = asyncio.run(w.runtime.handle_batch(batch))  # the agent's retry
    # decided again on the log's state, where offset 4 opened a round (it was never
    # answered: the waiters are answered only after every ack)
    assert reports[0]["reason_code"] == "round_in_progress" and reports[1] is None
    assert refs(w.log.records[written:]) == [
        (DEALER_REJECTIONS_TOPIC, InputPosition(partition=1, offset=3, decided_through=2))]


def test_records_from_before_the_field_existed_fall_back_to_the_groups_commit():
    """Records that name no input (written before `input_ref` existed, or without offsets)
    give no checkpoint: the partition resumes where the group committed, as before."""
    w = World()
    asyncio.run(w.runtime.handle_batch([
        w.raw("A", NewShoe, shoe_id="S1", profile="sbo-baccarat"),
        w.raw("B", OpenRound, round_id="R1", dealer="Ayu")]))  # no offsets: as old records
    assert refs(w.log.records) == [(TABLE_EVENTS_TOPIC, None), (DEALER_REJECTIONS_TOPIC, None)]
    assert checkpoints(w.log.records) == {}
    assert InputCheckpoint().resume_at() is None

    async def own() -> dict[int, int | None]:
        return {0: 3, 1: None, 2: None}  # partition 2: nothing committed either

    class Runtime:
        resume_offsets = staticmethod(own)

    service = SimpleNamespace(runtime=Runtime())  # what resume_at reads of the DealerEvent
    at = {p: asyncio.run(dealer_app.resume_at(service, TP(DEALER_INPUTS_TOPIC, p)))  # type: ignore[arg-type]
          for p in (0, 1, 2)}
    assert at == {0: 3, 1: None, 2: None}
    # the kernel's loop: None is the group's commit where there is one, else the start
    consumer = PositionedConsumer({DEALER_INPUTS_TOPIC: {1: 7}})
    owners = Owners("http://h:1", "g", held={TP(DEALER_INPUTS_TOPIC, p) for p in (0, 1, 2)})
    asyncio.run(consume_loop._position(consumer, owners, dealer_app_at(at), "dealer-event"))
    assert consumer.seeks == {(DEALER_INPUTS_TOPIC, 0): 3, (DEALER_INPUTS_TOPIC, 1): 7,
                              (DEALER_INPUTS_TOPIC, 2): 0}
    assert owners.ready == owners.held and consumer.resumed == set(consumer.seeks)


def dealer_app_at(at: dict[int, int | None]):
    async def position(tp: TP) -> int | None:
        return at[tp.partition]
    return position


class PositionedConsumer:
    """What `consume_loop._position` asks of the consumer: the group's commit, seek, resume."""

    def __init__(self, committed: dict[str, dict[int, int]]) -> None:
        self.committed_offsets = committed
        self.seeks: dict[tuple[str, int], int] = {}
        self.resumed: set[tuple[str, int]] = set()

    async def committed(self, tp) -> int | None:
        return self.committed_offsets.get(tp.topic, {}).get(tp.partition)

    def seek(self, tp, offset: int) -> None:
        self.seeks[(tp.topic, tp.partition)] = offset

    def resume(self, tp) -> None:
        self.resumed.add((tp.topic, tp.partition))


def test_a_forged_event_moves_no_checkpoint():
    key = b"k" * 32
    genuine = seal(ShoeStarted, table_id="A", seq=1, prev_hash="0" * 64,
                   occurred_at=datetime(2024, 1, 1, tzinfo=UTC), key=key, shoe_id="S1",
                   profile="sbo-baccarat", decks=8,
                   input_ref=InputPosition(partition=0, offset=4, decided_through=3))
    forged = seal(ShoeStarted, table_id="A", seq=2, prev_hash=genuine.hash,
                  occurred_at=datetime(2024, 1, 1, tzinfo=UTC), key=b"x" * 32, shoe_id="S1",
                  profile="sbo-baccarat", decks=8,
                  input_ref=InputPosition(partition=0, offset=999, decided_through=998))
    records = [(TABLE_EVENTS_TOPIC, b"A", e.model_dump_json().encode()) for e in (genuine, forged)]
    assert checkpoints(records, events_key=key) == {0: InputCheckpoint(3, {4})}
