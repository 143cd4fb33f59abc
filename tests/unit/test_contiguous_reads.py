"""No offset of a partition is skipped: when Faust's stream drops a record (fetched under
the generation before a rebalance), the reader seeks back and reads it again. The e2e run
lost seq 15 of a table this way: its round never got a result."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from faust.types import TP

from services.infra import contiguous
from services.infra.contiguous import ContiguousReads

T2 = TP("table.events", 2)
T3 = TP("table.events", 3)


@dataclass
class Message:
    tp: TP
    offset: int
    generation_id: int = 3


@dataclass
class Event:
    message: Message


class Consumer:
    def __init__(self) -> None:
        self.seeks: list[tuple[TP, int]] = []

    async def seek(self, tp: TP, offset: int) -> None:
        self.seeks.append((tp, offset))


def _feed(reads: ContiguousReads, offsets, tp=T2, generation=3) -> list[int]:
    async def go():
        return [o for o in offsets
                if await reads.admit(Event(Message(tp, o, generation)))]
    return asyncio.run(go())


def test_in_order_reads_pass_untouched():
    consumer = Consumer()
    reads = ContiguousReads(consumer, "svc")
    assert _feed(reads, [43, 44, 45, 46]) == [43, 44, 45, 46]
    assert consumer.seeks == []


def test_a_dropped_record_is_read_again_and_what_came_after_it_is_dropped_until_then():
    consumer = Consumer()
    reads = ContiguousReads(consumer, "svc")
    taken = _feed(reads, [50, 51, 53, 54, 55, 52, 53, 54, 55, 56])
    assert consumer.seeks == [(T2, 52)]
    assert taken == [50, 51, 52, 53, 54, 55, 56]


def test_partitions_are_followed_apart_and_a_rebalance_starts_afresh():
    consumer = Consumer()
    reads = ContiguousReads(consumer, "svc")
    assert _feed(reads, [10, 11], tp=T2) == [10, 11]
    assert _feed(reads, [7, 8], tp=T3) == [7, 8]
    assert _feed(reads, [30], tp=T2, generation=4) == [30]  # positions reset by Faust
    assert consumer.seeks == []


def test_a_record_read_again_is_taken():
    consumer = Consumer()
    reads = ContiguousReads(consumer, "svc")
    assert _feed(reads, [5, 6, 7, 5, 6, 7, 8]) == [5, 6, 7, 5, 6, 7, 8]


def test_a_missing_offset_that_never_comes_back_is_given_up_after_a_while(monkeypatch):
    consumer = Consumer()
    reads = ContiguousReads(consumer, "svc")
    monkeypatch.setattr(contiguous, "REWIND_PATIENCE_S", 0.0)
    assert _feed(reads, [1, 3, 4]) == [1, 4]  # 3 made it seek; past the patience, 4 goes on
    assert consumer.seeks == [(T2, 2)]


def test_a_first_record_dropped_after_a_rebalance_is_read_again_from_the_committed_offset():
    """The e2e run's lost result: right after bet-settlement's new owner took a partition,
    its first record (offset 4) never reached the agent and Faust committed past it."""
    consumer = Consumer()
    reads = ContiguousReads(consumer, "svc", lambda: {("table.events", 2): 4})
    assert _feed(reads, [5, 6, 4, 5, 6, 7]) == [4, 5, 6, 7]
    assert consumer.seeks == [(T2, 4)]


def test_the_committed_offset_is_where_reading_starts_when_nothing_was_dropped():
    consumer = Consumer()
    reads = ContiguousReads(consumer, "svc", lambda: {("table.events", 2): 4})
    assert _feed(reads, [4, 5, 6]) == [4, 5, 6]
    assert consumer.seeks == []


def test_the_committed_offsets_are_read_once_per_rebalance_and_a_failure_is_not_a_rewind():
    calls = []

    def committed():
        calls.append(1)
        if len(calls) == 2:
            raise ConnectionError("broker away")
        return {("table.events", 2): 10, ("table.events", 3): 20}

    consumer = Consumer()
    reads = ContiguousReads(consumer, "svc", committed)
    assert _feed(reads, [10, 11]) == [10, 11]
    assert _feed(reads, [20], tp=T3) == [20]
    assert _feed(reads, [50], tp=T2, generation=4) == [50]  # could not read: trusted
    assert len(calls) == 2 and consumer.seeks == []
