"""Issue 17: bet-settlement's state is the fold of its own log, `settlement.log`.

- a round's state rebuilt from the log's entries alone equals the live one (the annulment
  of a settled round too);
- a 10,000-bet round's settlement is split over entries of about 48 KB (at most 200 bet
  entries), the header in the last one, sent as records (packs of entries while they fit:
  `services.infra.packs`) each under scale.md's 64 KB, far under Kafka's 1 MB limit;
- a record whose entries reached the log only in part (the worker died between them)
  changed nothing: the accepted bets are still there to settle, the round is not stuck,
  and when the record is decided again every bet is settled exactly once (the store-ahead
  restart of issue 17 left accepted bets past the header's count never settled)."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

import pytest

from services.bet_settlement import round_book
from services.bet_settlement.settlement_fold import SETTLEMENT_FOLD, Lookups
from services.infra import packs
from services.infra.clock import ManualClock
from services.infra.own_log import PartitionState, fold_entry
from services.infra.packs import records_of
from shared.events.bet_events import BetSettled
from shared.events.settlement_log import BETS_PER_ENTRY, ENTRY_BYTES, SettlementEntry
from shared.events.table import RoundAnnulled, RoundOpened, seal
from shared.topics import (
    BETS_DECISIONS_TOPIC,
    BETS_PLACED_TOPIC,
    BETS_SETTLED_TOPIC,
    ROUND_RESULTS_TOPIC,
    SETTLEMENT_LOG_TOPIC,
    TABLE_EVENTS_TOPIC,
)
from tests.round_builder import RecordedRound
from tests.unit.agent_loop_support import Event
from tests.unit.round_book_support import NOW, PROFILE, opened, placed, result
from tests.unit.settlement_log_support import LogBroker, Worker, own_log, patch_kernel, rebuilt
from tests.unit.test_settlement_agent_loop import BETS, round_records

MB = 1_000_000


@pytest.fixture
def broker(monkeypatch) -> LogBroker:
    fake = LogBroker()
    patch_kernel(monkeypatch, fake)
    return fake


class Feed:
    """Records of the three inputs of partition 0, each topic counting its own offsets."""

    def __init__(self) -> None:
        self.offsets: dict[str, int] = {}

    def __call__(self, topic: str, record) -> Event:
        self.offsets[topic] = offset = self.offsets.get(topic, -1) + 1
        return Event(topic, offset, b"T1", record.model_dump_json().encode())


def settled(broker: LogBroker) -> list[BetSettled]:
    return [BetSettled.model_validate_json(v) for t, _, v in broker.published
            if t == BETS_SETTLED_TOPIC]


def written(broker: LogBroker, before: int) -> tuple[list[bytes], list[bytes]]:
    """The records of partition 0 from offset `before`, and each entry they hold as it was
    written (a pack's entries, or a record's one)."""
    records = broker.log[0][before:]
    return records, [v for record in records for v in records_of(record)]


def big_round(worker: Worker, feed: Feed, bets: int) -> None:
    """Round R1 of table T1 opened and `bets` bets of distinct players accepted."""
    worker.apply([feed(TABLE_EVENTS_TOPIC, opened())])
    records = [feed(BETS_PLACED_TOPIC, placed(f"b{i}", player=f"p{i}", stake=1000))
               for i in range(bets)]
    for start in range(0, bets, 500):
        worker.apply(records[start:start + 500])


def test_a_round_rebuilt_from_its_entries_alone_equals_the_live_one(broker):
    rec = RecordedRound(bets=BETS)
    worker = Worker(broker, ManualClock(rec.t0 + timedelta(minutes=1)))
    records = round_records(rec)
    annul = rec.annul()
    records.append(Event(TABLE_EVENTS_TOPIC, records[-2].message.offset + 1, b"T1",
                         annul.model_dump_json().encode()))
    for record in records:
        worker.apply([record])
    live = worker.kv()
    header = Lookups(live).header("T1", rec.round_id)
    assert header is not None and header.status == "annulled" and header.accepted == 3
    assert rebuilt(broker) == live
    # the fold alone, entry by entry, gives the same
    state: PartitionState = PartitionState(0)
    for offset, entry in broker.logged():  # a pack's entries at its record's offset
        assert fold_entry(state, offset, entry, SETTLEMENT_FOLD)
    assert state.kv == live
    assert state.inputs == {(TABLE_EVENTS_TOPIC, 0): annul.seq - 1, (BETS_PLACED_TOPIC, 0): 2,
                            (ROUND_RESULTS_TOPIC, 0): 0}


def test_a_10000_bet_settlement_is_chunked_under_1_mb_per_entry(broker):
    worker = Worker(broker, ManualClock(NOW + timedelta(minutes=1)))
    feed = Feed()
    big_round(worker, feed, 10_000)
    before = len(broker.log[0])
    broker.steps.clear()
    worker.apply([feed(ROUND_RESULTS_TOPIC, result())])
    records, raw = written(broker, before)
    entries = [SettlementEntry.model_validate_json(v) for v in raw]
    assert entries == broker.entries(0, before)  # as the kernel reads them back
    assert sum(len(e.bets) for e in entries) == 10_000
    assert all(0 < len(e.bets) <= BETS_PER_ENTRY for e in entries)
    largest = max(len(v) for v in raw)
    assert largest < ENTRY_BYTES + 4096 < 64 * 1024 < MB, largest
    # and every record sent (a pack of entries while they fit, else one alone) under a
    # pack's bound: well under the broker's 1 MB record limit, and scale.md's 64 KB
    assert max(len(v) for v in records) <= packs.PACK_MAX_BYTES < 64 * 1024 < MB
    assert [e.source.part for e in entries] == list(range(len(entries)))
    assert [e.source.last for e in entries] == [False] * (len(entries) - 1) + [True]
    assert [len(e.headers) for e in entries] == [0] * (len(entries) - 1) + [1]
    assert entries[-1].headers[0].status == "settled"
    out = settled(broker)
    assert len(out) == len({s.settlement_id for s in out}) == 10_000
    assert out[-1].last_of_round and not any(s.last_of_round for s in out[:-1])
    print(f"a 10,000-bet settlement: {len(raw)} entries, the largest {largest} bytes, in "
          f"{len(records)} records, the largest {max(len(v) for v in records)} bytes")


def test_a_record_whose_entries_landed_in_part_is_decided_again_without_double_settlement(
        broker):
    worker = Worker(broker, ManualClock(NOW + timedelta(minutes=1)))
    feed = Feed()
    big_round(worker, feed, 1_000)
    the_result = feed(ROUND_RESULTS_TOPIC, result())
    before = len(broker.log[0])
    # the result's entries are more than one record holds (a pack's bounds): its first two
    # records reach the log, then the worker dies
    broker.fail_after = 2
    with pytest.raises(ConnectionError):
        worker.apply([the_result])
    partial = broker.entries(0, before)
    assert len(broker.log[0]) == before + 2 and len(partial) >= 2
    assert [(e.source.topic, e.source.part, e.source.last) for e in partial] == [
        (ROUND_RESULTS_TOPIC, part, False) for part in range(len(partial))]
    assert settled(broker) == []  # nothing of a record is published before all of it landed

    broker.fail_after = None
    broker.steps.clear()
    again = Worker(broker, ManualClock(NOW + timedelta(minutes=2)), writer="w1")
    state = rebuilt(broker)
    look = Lookups(state)
    header = look.header("T1", "R1")
    assert header is not None and header.status == "open" and header.accepted == 1_000
    bets = look.bets("T1", "R1")
    assert all(bets.entry(f"b{i}").settlement is None for i in range(1_000))  # type: ignore
    assert state == rebuilt(broker)  # the partial entries are held, never applied

    again.apply([the_result])  # redelivered: the log never said it was applied
    out = settled(broker)
    assert len(out) == len({s.settlement_id for s in out}) == 1_000
    header = Lookups(again.kv()).header("T1", "R1")
    assert header is not None and header.status == "settled"
    assert rebuilt(broker) == again.kv()
    assert again.own.states[0].resume_at(ROUND_RESULTS_TOPIC, 0) == the_result.message.offset + 1
    # and settled once for good: read once more, nothing is settled again
    broker.steps.clear()
    again.apply([the_result])
    assert settled(broker) == []


def test_the_fold_keeps_no_repair_fields():
    """Entries write absolute values: a spot total is a total, a bet entry its facts."""
    assert set(round_book.SpotTotal.model_fields) == {"total"}
    assert not {"spot_before", "spot_prev"} & set(round_book.BetEntry.model_fields)
    assert not hasattr(round_book, "effective_spot")


def test_an_annulment_of_a_large_round_is_chunked_and_publishes_each_reversal_then_refund(
        broker):
    worker = Worker(broker, ManualClock(NOW + timedelta(minutes=1)))
    feed = Feed()
    big_round(worker, feed, 600)
    worker.apply([feed(ROUND_RESULTS_TOPIC, result())])
    before = len(broker.log[0])
    broker.steps.clear()
    annul = seal(RoundAnnulled, table_id="T1", seq=2, prev_hash=opened().hash,
                 occurred_at=NOW, round_id="R1", reason_code="card_exposed",
                 reason_text="exposed", supervisor="Sari")
    worker.apply([feed(TABLE_EVENTS_TOPIC, annul)])
    records, raw = written(broker, before)
    assert len(raw) > 1 and max(len(v) for v in raw) < 64 * 1024  # chunked into entries
    assert max(len(v) for v in records) < 64 * 1024  # and so is every record sent
    out = [json.loads(v) for t, _, v in broker.published if t == BETS_SETTLED_TOPIC]
    assert [r["type"] for r in out] == ["settlement_reversed", "bet_settled"] * 600
    assert [r["bet_id"] for r in out[::2]] == [r["bet_id"] for r in out[1::2]]
    assert len({r["bet_id"] for r in out}) == 600
    assert rebuilt(broker) == worker.kv()
    header = Lookups(worker.kv()).header("T1", "R1")
    assert header is not None and header.status == "annulled"


def test_bets_read_before_their_round_opened_wait_in_the_log_then_are_decided_or_expire(
        broker):
    worker = Worker(broker, ManualClock(NOW + timedelta(minutes=1)))
    feed = Feed()
    worker.apply([feed(BETS_PLACED_TOPIC, placed("early", round_id="R0")),
                  feed(BETS_PLACED_TOPIC, placed("b1"))])
    assert Lookups(worker.kv()).pending("T1") == ("R0", "R1")
    worker.apply([feed(TABLE_EVENTS_TOPIC, opened())])  # R1 opens: R0 never will
    look = Lookups(rebuilt(broker))
    assert look.pending("T1") == ()
    assert look.header("T1", "R0").status == "unknown"  # type: ignore[union-attr]
    decided = {r["bet_id"]: r.get("reason_code", r["type"]) for r in (
        json.loads(v) for t, _, v in broker.published if t == BETS_DECISIONS_TOPIC)}
    assert decided == {"early": "unknown_round", "b1": "bet_accepted"}
    assert rebuilt(broker) == worker.kv()


def test_a_bet_read_before_an_older_rounds_opening_waits_for_its_own(broker):
    """Seed 2774: the topics are read independently, so a bet of R2 can be read before the
    RoundOpened of R1. The bet names the seq of the RoundOpened the wallet saw (2): R1's
    opening (seq 1) does not expire R2, R2's opening decides the bet by its time. A bet
    naming a seq the chain passed without opening its round is rejected unknown_round."""
    worker = Worker(broker, ManualClock(NOW + timedelta(minutes=1)))
    feed = Feed()
    one = opened("R1", seq=1)
    two = seal(RoundOpened, table_id="T1", seq=2, prev_hash=one.hash, occurred_at=NOW,
               round_id="R2", shoe_id="s1", round_number=2, dealer="D", profile=PROFILE,
               betting_closes_at=NOW + timedelta(seconds=30))
    worker.apply([feed(BETS_PLACED_TOPIC, placed("b2", round_id="R2").model_copy(
                      update={"opened_seq": 2})),
                  feed(BETS_PLACED_TOPIC, placed("ghost", round_id="R9").model_copy(
                      update={"opened_seq": 2})),
                  feed(TABLE_EVENTS_TOPIC, one)])
    look = Lookups(rebuilt(broker))
    assert look.pending("T1") == ("R2", "R9"), "R1's opening is older than both"
    worker.apply([feed(TABLE_EVENTS_TOPIC, two),
                  feed(BETS_PLACED_TOPIC, placed("late", round_id="R8").model_copy(
                      update={"opened_seq": 2}))])
    look = Lookups(rebuilt(broker))
    assert look.pending("T1") == ()
    decided = {r["bet_id"]: r.get("reason_code", r["type"]) for r in (
        json.loads(v) for t, _, v in broker.published if t == BETS_DECISIONS_TOPIC)}
    assert decided == {"b2": "bet_accepted", "ghost": "unknown_round", "late": "unknown_round"}
    assert rebuilt(broker) == worker.kv()


class _Reads(LogBroker):
    """Counts the reads of input topics (a gap the kernel fills from the log)."""

    def __init__(self) -> None:
        super().__init__()
        self.input_reads: list[tuple[str, int]] = []

    async def read(self, topic, partition, start):
        if topic != SETTLEMENT_LOG_TOPIC:
            self.input_reads.append((topic, start))
        return await super().read(topic, partition, start)


def test_records_that_write_nothing_are_not_read_again_and_the_next_entry_logs_them():
    """The CI e2e of 6 December: a wallet worker re-read every command since its last
    entry on each batch (refusals write nothing), so its gap grew to a hundred records a
    batch and intake fell to a quarter. A record decided that wrote nothing (here a table
    event seen again) is passed over in memory; the next entry names it (`also_decided`),
    so a worker folding the log resumes after it too."""
    broker = _Reads()
    worker = Worker(broker, ManualClock(NOW + timedelta(minutes=1)))
    feed = Feed()
    first = opened()
    worker.apply([feed(TABLE_EVENTS_TOPIC, first)])
    entries = len(broker.log[0])
    worker.apply([feed(TABLE_EVENTS_TOPIC, first), feed(TABLE_EVENTS_TOPIC, first)])  # seen again
    assert len(broker.log[0]) == entries, "a record seen again writes nothing"
    state = worker.own.states[0]
    assert state.resume_at(TABLE_EVENTS_TOPIC, 0) == 3 and state.inputs[(TABLE_EVENTS_TOPIC, 0)] == 0
    worker.apply([feed(TABLE_EVENTS_TOPIC, first)])  # offset 3: no gap to fill
    assert broker.input_reads == []
    worker.apply([feed(BETS_PLACED_TOPIC, placed("b1"))])
    assert [(r.topic, r.offset) for r in broker.entries()[-1].also_decided] == [
        (TABLE_EVENTS_TOPIC, 3)]
    folded = asyncio.run(own_log(broker, "rebuilder").recover(0))
    assert folded.resume_at(TABLE_EVENTS_TOPIC, 0) == 4 and folded.passed == {}
