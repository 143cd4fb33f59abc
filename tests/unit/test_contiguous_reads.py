"""An offset the stream skips is noticed, counted and named, so the reader re-reads it:
within a consumer generation against the record before, and the first record after a
rebalance against the offset the group committed (the e2e run lost seq 15 of a table
and a round's result those two ways)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from faust.types import TP

from croupier.services.infra import metrics
from croupier.services.infra.contiguous import ContiguousReads, WaitingPartitions

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


def _skips() -> float:
    return metrics.REWINDS.labels("svc", "table.events")._value.get()


def _admit_all(reads: ContiguousReads, reads_in: list[tuple[TP, int, int]]) -> list[int | None]:
    async def run() -> list[int | None]:
        return [await reads.admit(Event(Message(tp, offset, generation)))
                for tp, offset, generation in reads_in]
    return asyncio.run(run())


def _committed(offsets: dict[TP, int], asked: list[int] | None = None):
    async def committed() -> dict[TP, int]:
        if asked is not None:
            asked.append(1)
        return offsets
    return committed


def test_a_jump_within_a_generation_names_the_first_skipped_offset():
    reads = ContiguousReads("svc")
    before = _skips()
    assert _admit_all(reads, [(T2, o, 3) for o in (50, 51, 55, 56)]) == [None, None, 52, None]
    assert _skips() == before + 1


def test_in_order_reads_and_a_rebalance_count_nothing():
    reads = ContiguousReads("svc")
    before = _skips()
    admitted = _admit_all(reads, [(T2, 10, 3), (T2, 11, 3), (T2, 30, 4), (T2, 31, 4), (T2, 5, 5)])
    assert admitted == [None] * 5
    assert _skips() == before


def test_a_rewind_within_a_generation_is_not_a_skip():
    """A seek back to the committed offset re-delivers records: nothing was skipped."""
    reads = ContiguousReads("svc")
    offsets = (20, 21, 22, 19, 20, 21, 22, 23)
    assert _admit_all(reads, [(T2, o, 3) for o in offsets]) == [None] * 8


def test_the_first_record_after_a_rebalance_is_checked_against_the_committed_offset():
    asked: list[int] = []
    reads = ContiguousReads("svc", _committed({T2: 18, T3: 40}, asked))
    before = _skips()
    admitted = _admit_all(reads, [(T2, 19, 4), (T3, 40, 4), (T2, 20, 4), (T3, 38, 5)])
    assert admitted == [18, None, None, None]  # T2 skipped offset 18; T3 read from 40; 38 < 40
    assert _skips() == before + 1
    assert len(asked) == 2  # once per generation, not once per record


def test_unreadable_committed_offsets_leave_the_in_generation_check():
    async def failing() -> dict[TP, int]:
        raise ConnectionError("broker away")

    reads = ContiguousReads("svc", failing)
    assert _admit_all(reads, [(T2, 7, 1), (T2, 9, 1)]) == [None, 8]


def test_the_next_offset_of_a_partition_is_the_last_handed_on_else_committed_else_zero():
    T0 = TP("table.events", 0)
    reads = ContiguousReads("svc", _committed({T2: 18}))
    _admit_all(reads, [(T3, 40, 4), (T3, 41, 4)])
    assert asyncio.run(reads.next_offsets(4, {T0, T2, T3})) == {T0: 0, T2: 18, T3: 42}
    reads.read_up_to(T2, 25)  # the reader read 18..24 from the log itself
    assert asyncio.run(reads.next_offsets(4, {T2}))[T2] == 25
    assert asyncio.run(reads.next_offsets(5, {T2, T3})) == {T2: 18, T3: 0}  # a rebalance


def test_a_partition_whose_next_offset_stays_put_while_records_wait_is_stuck():
    waiting = WaitingPartitions(patience_s=10)
    ends = {T2: 30, T3: 50}
    assert waiting.stuck({T2: 20, T3: 50}, ends, now=0) == {}  # T3 has nothing waiting
    assert waiting.stuck({T2: 20, T3: 50}, ends, now=9) == {}  # not yet patient enough
    assert waiting.stuck({T2: 20, T3: 50}, ends, now=10) == {T2: (20, 30)}
    assert waiting.stuck({T2: 30, T3: 50}, ends, now=11) == {}  # read up to its end


def test_a_partition_that_moves_slowly_or_drains_is_never_stuck():
    waiting = WaitingPartitions(patience_s=10)
    for second, nxt in enumerate(range(100, 130)):  # one record a second, 400 waiting
        assert waiting.stuck({T2: nxt}, {T2: 500}, now=float(second)) == {}
    assert waiting.stuck({T2: 500}, {T2: 500}, now=100) == {}  # drained: waits no more
    assert waiting.stuck({T2: 500}, {T2: 501}, now=105) == {}  # a new record: patience anew
    assert waiting.stuck({T2: 500}, {T2: 501}, now=114) == {}
    assert waiting.stuck({T2: 500}, {T2: 501}, now=115) == {T2: (500, 501)}


def test_a_partition_moved_to_another_worker_is_forgotten():
    waiting = WaitingPartitions(patience_s=10)
    assert waiting.stuck({T2: 5}, {T2: 9}, now=0) == {}
    assert waiting.stuck({}, {}, now=5) == {}  # T2 revoked
    assert waiting.stuck({T2: 5}, {T2: 9}, now=12) == {}  # assigned again: patience anew
    assert waiting.stuck({T2: 5}, {T2: 9}, now=22) == {T2: (5, 9)}
