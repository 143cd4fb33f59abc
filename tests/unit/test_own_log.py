"""The own-log kernel's pure half (`services.infra.own_log`): a service's state is
the fold of its own log, and nothing else (docs/decisions/ledger.md).

- the chain fences zombies: an entry whose `prev` is not the head is void, skipped by
  every fold and counted;
- two writers racing on one partition: the log's order decides, and every fold of the log
  picks the same winner;
- a batch chains its entries on what the state has seen of the log (`state.end`) and
  knows, from where they landed, whether another writer came in between;
- the outbox: `published_through` and `unpublished` say which entries' outputs may not have
  been acknowledged, so a recovering worker publishes exactly those again;
- the scratch state a batch decides on reads through to the folded state and writes aside;
- expiry (opt-in): keys are forgotten a window after their group's last write, on the
  entries' clock, by the fold and by a batch's scratch alike.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from services.infra import packs
from services.infra.kernel import outputs_acked
from services.infra.own_log import (
    Batch,
    Landed,
    Overlay,
    PartitionState,
    Record,
    Writes,
    fold_entry,
    skip_to,
)
from services.infra.packs import records_of, unpack
from shared.events.sources import InputRef

INPUT = "commands"


@dataclass(frozen=True)
class Entry:
    """The least an own-log entry is: its id and chain link, its input and the outbox
    mark, and here one absolute value."""

    entry_id: str
    prev: str
    source: InputRef
    published_through: int
    key: str
    value: int
    also_decided: tuple[InputRef, ...] = ()

    @property
    def writer(self) -> str:
        return self.entry_id.rsplit(":", 1)[0]

    def model_dump_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), default=str)


class KeyValueFold:
    def apply(self, kv: Writes, entry: Entry) -> None:
        kv[entry.key] = entry.value

    def outputs(self, entry: Entry) -> list[Record]:
        return [("out", entry.key.encode(), str(entry.value).encode())]


FOLD = KeyValueFold()
IDS = itertools.count(1)


def src(offset: int, last: bool = True) -> InputRef:
    return InputRef(topic=INPUT, partition=0, offset=offset, last=last)


def entry(entry_id: str, prev: str, offset: int, key: str = "k", value: int = 0,
          through: int = -1, last: bool = True) -> Entry:
    return Entry(entry_id=entry_id, prev=prev, source=src(offset, last),
                 published_through=through, key=key, value=value)


def make(key: str, value: int, offset: int, last: bool = True):
    """What `decide` hands the batch: the entry, once its id and chain link are known."""
    def build(entry_id: str, prev: str, published_through: int) -> Entry:
        return entry(entry_id, prev, offset, key, value, published_through, last)
    return build


def writer(name: str):
    """A writer's fresh entry ids, as `OwnLog.new_id` makes them."""
    return lambda: f"{name}:{next(IDS)}"


def fold_log(log: list[tuple[int, Entry]]) -> PartitionState:
    state: PartitionState = PartitionState(0)
    for offset, e in log:
        fold_entry(state, offset, e, FOLD)
    return state


def chained(n: int) -> list[tuple[int, Entry]]:
    """n valid entries at offsets 0..n-1, from inputs 0..n-1, k<i> = i."""
    return [(i, entry(f"w0:{i}", f"w0:{i - 1}" if i else "", i, key=f"k{i}", value=i))
            for i in range(n)]


# --- the chain ----------------------------------------------------------------------------

def test_an_entry_chained_on_the_head_is_folded_and_moves_the_head_and_the_checkpoint():
    state = fold_log(chained(3))
    assert state.kv == {"k0": 0, "k1": 1, "k2": 2}
    assert (state.head, state.head_id, state.end, state.void) == (2, "w0:2", 3, 0)
    assert state.resume_at(INPUT, 0) == 3 and state.applied(INPUT, 0, 2)
    assert not state.applied(INPUT, 0, 3) and state.resume_at("other", 0) == 0


def test_a_zombies_entry_whose_prev_is_not_the_head_is_void_skipped_and_counted():
    state = fold_log(chained(2))
    before = (dict(state.kv), state.head, state.head_id, dict(state.inputs))
    zombie = entry("zombie:1", "w0:0", 7, key="k0", value=999)  # chained on 0, head is 1
    assert fold_entry(state, 2, zombie, FOLD) is False
    assert (state.kv, state.head, state.head_id, state.inputs) == before  # nothing written
    assert state.void == 1 and state.end == 3  # but the offset was seen
    assert [o for o, _ in state.unpublished] == [0, 1]  # a void entry has no outbox
    # the next valid entry chains on the head, over the void one
    assert fold_entry(state, 3, entry("w0:3", "w0:1", 8, key="k0", value=5), FOLD)
    assert state.kv["k0"] == 5 and state.head == 3 and state.resume_at(INPUT, 0) == 9


def test_an_entry_at_or_before_the_head_is_void_so_folding_a_log_twice_changes_nothing():
    log = chained(3)
    state = fold_log(log)
    for offset, e in log:  # a cache caught up from an offset it already reflects
        assert fold_entry(state, offset, e, FOLD) is False
    assert state.kv == fold_log(log).kv and state.head == 2 and state.void == 3


def test_a_record_is_applied_only_once_its_last_entry_folds():
    """One input record may write several entries: cut short by a crash, it is decided
    again (its checkpoint does not move until the last one lands)."""
    state = fold_log(chained(1))
    assert fold_entry(state, 1, entry("w0:a", "w0:0", 1, key="a", value=1, last=False), FOLD)
    assert state.resume_at(INPUT, 0) == 1  # record 1 is not applied yet
    assert fold_entry(state, 2, entry("w0:b", "w0:a", 1, key="b", value=2), FOLD)
    assert state.resume_at(INPUT, 0) == 2


def one_entry_a_record(monkeypatch) -> None:
    """Entries one to a record, as a batch sends them once it outgrows a pack: the chain's
    cases (a rival's record between two of a batch's) are about records."""
    monkeypatch.setattr(packs, "PACK_MAX_RECORDS", 1)


def _racing_batches() -> tuple[Batch, Batch]:
    """Two writers that both hold the partition folded through `chained(2)` (a rebalance:
    the old owner has not noticed), each deciding its own batch of two entries."""
    a = Batch(fold_log(chained(2)), FOLD, writer("A"))
    b = Batch(fold_log(chained(2)), FOLD, writer("B"))
    a.add(make("x", 1, 2))
    a.add(make("y", 1, 3))
    b.add(make("x", 2, 2))
    b.add(make("z", 2, 3))
    assert a.expected == b.expected == [2, 3]  # both chained on the same head
    assert a.entries[0].prev == b.entries[0].prev == "w0:1"
    return a, b


def _race(order: str) -> tuple[list[tuple[int, Entry]], Batch, Batch]:
    """The log after both writers' entries landed in `order` (A, B: whose is next)."""
    a, b = _racing_batches()
    queues = {"A": list(a.entries), "B": list(b.entries)}
    log = chained(2)
    for offset, who in enumerate(order, start=2):
        log.append((offset, queues[who].pop(0)))
    return log, a, b


def _valid(log: list[tuple[int, Entry]]) -> list[str]:
    """`writer:key` of each raced entry that a fold keeps, in log order."""
    state: PartitionState = PartitionState(0)
    return [f"{e.writer}:{e.key}" for offset, e in log
            if fold_entry(state, offset, e, FOLD) and offset >= 2]


ORDERS = ["AABB", "ABAB", "ABBA", "BAAB", "BABA", "BBAA"]


@pytest.mark.parametrize("order", ORDERS)
def test_two_writers_racing_the_fold_picks_the_first_valid_chain(order, monkeypatch):
    """Whoever lands first after the head wins its whole chain, however the two interleave;
    every entry of the other is void (chained on a head that is no longer the head, or on
    its own void entry), so no entry folds that was decided on a state the log never had."""
    one_entry_a_record(monkeypatch)
    log, a, b = _race(order)
    winner = order[0]
    kv = {"x": 1, "y": 1} if winner == "A" else {"x": 2, "z": 2}
    assert _valid(log) == [f"{winner}:{k}" for k in kv]
    state = fold_log(log)
    assert state.kv == {"k0": 0, "k1": 1, **kv} and state.void == 2
    # the loser's batch never lands as chained: it folds again and answers nobody for what
    # it sent; the winner's does only if nothing came between its entries (else it folds
    # again too, and keeps the answers its valid entries back)
    at = {w: landed(*(o for o, e in log[2:] if e.writer == w)) for w in "AB"}
    loser = b if winner == "A" else a
    assert not loser.landed_as_chained(at["B" if winner == "A" else "A"])
    won = a if winner == "A" else b
    assert won.landed_as_chained(at[winner]) == (order in ("AABB", "BBAA"))


@pytest.mark.parametrize("order", ORDERS)
def test_every_fold_of_a_raced_log_reads_the_same_winner(order, monkeypatch):
    """Whoever folds the log, whenever (the live writer, a restart, `croupier rebuild`), in
    one go or caught up from any offset it reflects: the same state."""
    one_entry_a_record(monkeypatch)
    log, _, _ = _race(order)
    whole = fold_log(log)
    for cut in range(len(log) + 1):  # a cache folded up to `cut`, then caught up
        state = fold_log(log[:cut])
        for offset, e in log[cut:]:
            fold_entry(state, offset, e, FOLD)
        assert (state.kv, state.head, state.head_id, state.void, state.inputs) == (
            whole.kv, whole.head, whole.head_id, whole.void, whole.inputs)


def test_a_batch_shifted_by_a_rivals_entry_folds_none_of_its_entries(monkeypatch):
    """The rival's entry took the offset the batch's first entry expected: the batch's
    second entry's link names the batch's first (void), never whatever landed there."""
    one_entry_a_record(monkeypatch)
    a, b = _racing_batches()
    log = [*chained(2), (2, b.entries[0]), (3, a.entries[0]), (4, a.entries[1])]
    assert _valid(log) == ["B:x"]
    assert fold_log(log).kv == {"k0": 0, "k1": 1, "x": 2}


# --- a batch ------------------------------------------------------------------------------

def test_a_batch_chains_on_the_state_end_and_decides_on_its_scratch(monkeypatch):
    one_entry_a_record(monkeypatch)
    state = fold_log(chained(3))
    skip_to(state, 5)  # offsets 3 and 4 hold no entry (a transaction's markers)
    batch = Batch(state, FOLD, writer("w1"))
    first = batch.add(make("k0", 100, 3))
    second = batch.add(make("k9", 9, 4))
    assert (first.prev, second.prev) == ("w0:2", first.entry_id)  # the head, then its own
    assert first.entry_id != second.entry_id and batch.expected == [5, 6]
    assert batch.scratch["k0"] == 100 and state.kv["k0"] == 0  # written aside only
    assert batch.landed_as_chained(landed(5, 6))
    committed = batch.commit(landed(5, 6))
    assert committed == [(5, first), (6, second)]
    assert state.kv["k0"] == 100 and state.kv["k9"] == 9
    assert (state.head, state.head_id) == (6, second.entry_id)


def test_a_batch_knows_when_a_foreign_record_landed_in_between(monkeypatch):
    one_entry_a_record(monkeypatch)
    state = fold_log(chained(2))
    batch = Batch(state, FOLD, writer("w1"))
    batch.add(make("a", 1, 2))
    batch.add(make("b", 2, 3))
    assert batch.landed_as_chained(landed(2, 3))
    assert not batch.landed_as_chained(landed(3, 4))  # someone else's record took offset 2
    assert not batch.landed_as_chained(landed(2, 4))  # ... or came between the two
    with pytest.raises(AssertionError):
        batch.commit(landed(3, 4))
    assert state.kv == fold_log(chained(2)).kv and state.head == 1  # nothing folded


def test_a_batchs_entries_are_sent_as_one_pack_and_fold_at_its_offset():
    """A batch's entries go as one record (a pack) while they fit: one offset expected, every
    entry folded at it, valid one after the other; a reader takes them back in order."""
    state = fold_log(chained(2))
    batch = Batch(state, FOLD, writer("w1"))
    first, second = batch.add(make("a", 1, 2)), batch.add(make("b", 2, 3))
    [(key, value)] = batch.records(lambda e: e.key.encode())
    assert key == b"a" and [json.loads(v)["entry_id"] for v in unpack(value)] == [
        first.entry_id, second.entry_id]
    assert batch.expected == [2] and not batch.landed_as_chained(landed(3))
    assert batch.commit(landed(2)) == [(2, first), (2, second)]
    assert (state.head, state.head_id, state.end) == (2, second.entry_id, 3)
    assert state.kv["b"] == 2 and state.resume_at(INPUT, 0) == 4


def test_a_pack_chained_on_a_head_that_moved_is_void_as_a_whole(monkeypatch):
    """A zombie's pack: its first entry names a head the log moved past, each later one the
    entry before it; none folds, whoever reads them (at one offset or several)."""
    one_entry_a_record(monkeypatch)
    a, b = _racing_batches()
    log = [*chained(2), (2, b.entries[0]), (3, a.entries[0]), (3, a.entries[1])]
    assert _valid(log) == ["B:x"] and fold_log(log).void == 2


def test_a_batch_past_a_packs_bounds_is_sent_as_several(monkeypatch):
    monkeypatch.setattr(packs, "PACK_MAX_RECORDS", 2)
    batch = Batch(fold_log(chained(1)), FOLD, writer("w1"))
    made = [batch.add(make(f"k{i}", i, i + 1)) for i in range(5)]
    records = batch.records(lambda e: e.key.encode())
    assert [k for k, _ in records] == [b"k0", b"k2", b"k4"]  # each keyed by its first
    assert [len(records_of(v)) for _, v in records] == [2, 2, 1]
    assert batch.expected == [1, 2, 3] and [batch.record_of(i) for i in range(5)] == [
        0, 0, 1, 1, 2]
    assert [o for o, _ in batch.commit(landed(1, 2, 3))] == [1, 1, 2, 2, 3]
    assert batch.state.head_id == made[-1].entry_id


def test_an_empty_batch_lands_as_chained_with_nothing_to_send():
    batch = Batch(fold_log(chained(1)), FOLD, writer("w1"))
    assert batch.entries == [] and batch.landed_as_chained(landed()) and batch.commit(landed()) == []


# --- the outbox ---------------------------------------------------------------------------

def test_entries_after_the_last_acknowledged_offset_are_unpublished():
    e0, e1, e2 = (entry("w0:0", "", 0, "a", 1), entry("w0:1", "w0:0", 1, "b", 2),
                  entry("w0:2", "w0:1", 2, "c", 3, through=0))
    state = fold_log([(0, e0), (1, e1)])
    assert state.published_through == -1 and state.unpublished == [(0, e0), (1, e1)]
    # the writer of entry 2 had seen entry 0's outputs acknowledged
    fold_entry(state, 2, e2, FOLD)
    assert state.published_through == 0 and state.unpublished == [(1, e1), (2, e2)]
    # a recovering worker publishes exactly these, then marks them acknowledged
    assert [r for _, e in state.unpublished for r in FOLD.outputs(e)] == [
        ("out", b"b", b"2"), ("out", b"c", b"3")]
    outputs_acked(state, state.head)
    assert state.published_through == 2 and state.unpublished == []
    outputs_acked(state, 1)  # an older acknowledgement never moves it back
    assert state.published_through == 2


def test_a_void_entry_never_reaches_the_outbox():
    state = fold_log(chained(1))
    fold_entry(state, 1, entry("zombie:1", "zombie:0", 1, "zombie", 1), FOLD)
    assert [o for o, _ in state.unpublished] == [0]


def test_a_batch_stamps_its_entries_with_what_the_state_knows_was_published():
    state = fold_log(chained(3))
    outputs_acked(state, 1)
    batch = Batch(state, FOLD, writer("w1"))
    assert batch.add(make("a", 1, 3)).published_through == 1


# --- the scratch state --------------------------------------------------------------------

def test_the_overlay_reads_through_and_writes_aside():
    base = {"a": 1, "b": 2}
    scratch = Overlay(base)
    assert scratch["a"] == 1 and scratch.get("zz") is None and scratch.get("zz", 0) == 0
    scratch["a"] = 10
    scratch["c"] = 3
    assert (scratch["a"], scratch.get("a"), scratch["c"]) == (10, 10, 3)
    assert base == {"a": 1, "b": 2}  # the folded state is untouched
    assert sorted(scratch) == ["a", "b", "c"] and len(scratch) == 3
    assert dict(scratch) == {"a": 10, "b": 2, "c": 3}
    with pytest.raises(KeyError):
        scratch["nope"]
    with pytest.raises(TypeError):
        del scratch["a"]  # a fold writes absolute values; it never deletes


def landed(*offsets: int) -> list[Landed]:
    """Where a batch's entries landed (a fold without an expiry has no use for the time)."""
    return [Landed(o, datetime(2026, 1, 1, tzinfo=UTC)) for o in offsets]


# --- expiry (opt-in): keys forgotten on the fold's clock --------------------------------

@dataclass(frozen=True)
class TimedEntry(Entry):
    recorded_at: datetime = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class PrefixExpiry:
    """Keys starting `t/` expire; `g/<name>/...` keys expire as the group `g/<name>`."""

    window: timedelta

    def expiring(self, entry: TimedEntry):
        if entry.key.startswith("t/"):
            yield entry.key, entry.key
        if entry.key.startswith("g/"):
            yield "/".join(entry.key.split("/")[:2]), entry.key


class ExpiringFold(KeyValueFold):
    expiry = PrefixExpiry(timedelta(hours=1))


T0 = datetime(2026, 1, 1, tzinfo=UTC)


def timed(i: int, key: str, minutes: float) -> TimedEntry:
    return TimedEntry(entry_id=f"w0:{i}", prev=f"w0:{i - 1}" if i else "", source=src(i),
                      published_through=-1, key=key, value=i,
                      recorded_at=T0 + timedelta(minutes=minutes))


def fold_timed(state: PartitionState, offset: int, e: TimedEntry,
               appended_at: datetime | None = None) -> bool:
    """Fold `e` as the broker appended it (by default when its writer says it wrote it)."""
    return fold_entry(state, offset, e, ExpiringFold(), appended_at or e.recorded_at)


def test_expiry_forgets_on_the_entries_clock_and_a_group_lives_from_its_last_write():
    log = [timed(0, "keep", 0), timed(1, "t/a", 0), timed(2, "g/x/1", 0),
           timed(3, "g/x/2", 50), timed(4, "t/b", 59)]
    state: PartitionState = PartitionState(0)
    for offset, e in enumerate(log):
        fold_timed(state, offset, e)
    assert set(state.kv) == {"keep", "t/a", "g/x/1", "g/x/2", "t/b"}
    fold_timed(state, 5, timed(5, "other", 60))  # t/a's hour is up; g/x was rewritten
    assert set(state.kv) == {"keep", "g/x/1", "g/x/2", "t/b", "other"}
    fold_timed(state, 6, timed(6, "other", 30))  # a clock behind: the fold's stays
    assert state.clock == T0 + timedelta(minutes=60)
    fold_timed(state, 7, timed(7, "other", 110))  # g/x's hour from its last write
    assert set(state.kv) == {"keep", "t/b", "other"}
    assert set(state.expires) == {"t/b"} and list(state.members) == []
    assert len(state.deadlines) == 1


def test_a_writer_whose_clock_runs_ahead_cannot_move_the_folds_clock():
    """Issue 29 (a): a worker's clock reset to a date ten days ahead writes an entry; the
    broker appended it a minute after the last one. The fold's clock is the broker's
    minute, not the writer's ten days: nothing anyone else wrote expires."""
    state: PartitionState = PartitionState(0)
    fold_timed(state, 0, timed(0, "t/a", 0))
    ahead = timed(1, "other", 10 * 24 * 60)
    fold_timed(state, 1, ahead, appended_at=T0 + timedelta(minutes=1))
    assert state.clock == T0 + timedelta(minutes=1) and "t/a" in state.kv
    # a broker whose clock runs ahead is held to the writer's the same way
    fold_timed(state, 2, timed(2, "other", 2), appended_at=T0 + timedelta(days=10))
    assert state.clock == T0 + timedelta(minutes=2) and "t/a" in state.kv
    # the hour passes on both clocks: t/a is forgotten then, and only then
    fold_timed(state, 3, timed(3, "other", 61))
    assert "t/a" not in state.kv


def test_a_fold_with_an_expiry_refuses_an_entry_without_the_brokers_time():
    state: PartitionState = PartitionState(0)
    with pytest.raises(ValueError, match="broker's time"):
        fold_entry(state, 0, timed(0, "t/a", 0), ExpiringFold())


def test_a_batch_decides_on_its_states_clock_and_the_landed_entries_expire_by_theirs():
    """A batch cannot know when the broker will append its entries: it decides on the
    clock its state was folded to (nothing expires in its scratch, so what it decides
    never rests on a key its own writer's clock forgot); once they land, the fold forgets
    what their times say, live state and rebuild alike."""
    log = [timed(0, "t/a", 0), timed(1, "g/x/1", 10), timed(2, "t/b", 20)]
    state: PartitionState = PartitionState(0)
    for offset, e in enumerate(log):
        fold_timed(state, offset, e)
    batch = Batch(state, ExpiringFold(), writer("w0"))
    views = []
    for i, (key, minutes) in enumerate([("t/c", 65), ("g/x/2", 69), ("t/d", 130)], start=3):
        batch.add(lambda entry_id, prev, through, k=key, m=minutes, i=i: TimedEntry(
            entry_id=entry_id, prev=prev, source=src(i), published_through=through, key=k,
            value=i, recorded_at=T0 + timedelta(minutes=m)))
        views.append(set(batch.scratch))
    assert views == [{"t/a", "g/x/1", "t/b", "t/c"}, {"t/a", "g/x/1", "t/b", "t/c", "g/x/2"},
                     {"t/a", "g/x/1", "t/b", "t/c", "g/x/2", "t/d"}]
    # one pack, appended once its last entry was written
    committed = batch.commit([Landed(batch.expected[0], T0 + timedelta(minutes=130))])
    assert set(state.kv) == {"t/d"}  # the fold of the landed entries, by their times
    rebuilt: PartitionState = PartitionState(0)
    for offset, e in [*enumerate(log), *committed]:
        fold_timed(rebuilt, offset, e)
    assert rebuilt.kv == state.kv and rebuilt.clock == state.clock


def test_an_empty_batch_sends_no_record():
    batch = Batch(fold_log(chained(1)), FOLD, writer("w1"))
    assert batch.records(lambda e: e.key.encode()) == [] and batch.expected == []
