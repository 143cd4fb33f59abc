"""bet-settlement's state does not grow with the round: per-bet facts under their own keys,
a bounded round header, an order-independent manifest digest kept one bet at a time, and
O(1) point reads per bet whatever the round's size."""

import random
from datetime import timedelta
from itertools import permutations

from services.bet_settlement import decision_metrics, round_book
from shared.events.bet_events import (
    EMPTY_DIGEST,
    BetAccepted,
    BetSettled,
    IntakeMark,
    RoundManifest,
    digest_add,
    manifest_digest,
)
from shared.events.table import BettingClosed, RoundVoided
from tests.unit.round_book_support import NOW, event, kinds, opened, placed, result

VOID = dict(reason_code="misdeal", reason_text="x", supervisor="S")


class CountingStore:
    """A round's bets in a dict, counting the point reads intake makes."""

    def __init__(self) -> None:
        self.header: round_book.RoundHeader | None = None
        self.entries: dict[str, round_book.BetEntry] = {}
        self.order: dict[int, str] = {}
        self.spots: dict[str, round_book.SpotTotal] = {}
        self.reads = 0

    def entry(self, bet_id):
        self.reads += 1
        return self.entries.get(bet_id)

    def bet_at(self, k):
        self.reads += 1
        return self.order.get(k)

    def spot(self, key):
        self.reads += 1
        return self.spots.get(key)

    def run(self, transition_of) -> round_book.Transition:
        self.reads = 0
        t = transition_of(self.header, self)
        self.header = t.header
        self.entries.update(t.entries)
        self.order.update(t.order)
        self.spots.update(t.spots)
        return t


def test_digest_is_order_independent_and_kept_one_bet_at_a_time():
    ids = ["a", "b", "c", "bet:with:colons"]
    digests = {manifest_digest(p) for p in permutations(ids)}
    assert len(digests) == 1
    running = EMPTY_DIGEST
    for bet_id in reversed(ids):
        running = digest_add(running, bet_id)
    assert running == digests.pop() and len(running) == 64
    assert manifest_digest([]) == EMPTY_DIGEST
    assert manifest_digest(["a", "b"]) != manifest_digest(["a", "c"])
    assert manifest_digest(iter(["b", "a"])) == manifest_digest(("a", "b"))  # any iterable


def test_a_bet_costs_a_constant_number_of_reads_and_writes_of_bounded_size():
    store = CountingStore()
    store.run(lambda h, b: round_book.apply_table_event(h, b, opened(), NOW))
    sizes, reads = [], []
    for i in range(2000):
        t = store.run(lambda h, b, i=i: round_book.place(h, b, placed(f"b{i}", stake=1000 + i % 7,
                                                                    player=f"p{i % 50}"), NOW))
        assert len(t.entries) == len(t.order) == 1 and len(t.out) == 1
        reads.append(store.reads)
        sizes.append(len(t.header.model_dump_json()))
        sizes += [len(e.model_dump_json()) for e in t.entries.values()]
    # two point reads per bet (its entry, its spot's total), whatever the round's size
    assert set(reads) == {2}
    assert max(sizes) < 2048
    t = store.run(lambda h, b: round_book.apply_table_event(h, b, event(BettingClosed, 2,
                                                                    reason="timer"), NOW))
    assert store.reads == 0 and t.out == []  # closing: waits for the wallet's intake mark
    t = store.run(lambda h, b: round_book.apply_mark(h, b, IntakeMark(
        table_id="T1", round_id="R1", partitions=(0,), partition_count=1, worker="w",
        through=NOW), NOW))
    assert store.reads == 0  # the manifest comes from the header alone
    manifest = t.out[0][2]
    assert isinstance(manifest, RoundManifest)
    assert (manifest.bet_count, manifest.total_stake) == (
        2000, sum(1000 + i % 7 for i in range(2000)))
    assert manifest.digest == manifest_digest(f"b{i}" for i in range(2000))
    assert len(t.header.model_dump_json()) < 2048

    t = store.run(lambda h, b: round_book.apply_result(h, b, result(), NOW))
    assert store.reads == 2 * 2000  # one index read and one entry read per bet
    settled = [r for _, _, r in t.out if isinstance(r, BetSettled)]
    assert len(settled) == 2000 and [s.last_of_round for s in settled].count(True) == 1
    assert settled[-1].last_of_round
    assert max(len(e.model_dump_json()) for e in t.entries.values()) < 2048
    assert t.header.status == "settled" and t.header.cause == result().result_id


def test_redelivered_result_republishes_the_same_settlements_and_counts_none():
    store = CountingStore()
    store.run(lambda h, b: round_book.apply_table_event(h, b, opened(), NOW))
    for bet_id, bet in [("a", "player"), ("b", "banker"), ("c", "tie")]:
        store.run(lambda h, b, bet_id=bet_id, bet=bet: round_book.place(h, b, placed(bet_id, bet=bet),
                                                                    NOW))
    first = store.run(lambda h, b: round_book.apply_result(h, b, result(), NOW))
    later = NOW + timedelta(seconds=9)
    before = store.header
    again = store.run(lambda h, b: round_book.apply_result(h, b, result(), later))
    assert again.out == first.out[1:] and again.entries == {} and again.header == before
    assert decision_metrics.fresh(store, again.header, [r for *_, r in again.out]).settlements == []
    assert round_book.conflicts(store.header, store, result()) == []
    assert round_book.conflicts(store.header, store, event(RoundVoided, 5, **VOID)) != []


def test_pending_bets_wait_under_their_own_keys_and_a_clashing_id_is_rejected():
    early, _ = round_book.on_bet(None, placed("early"), NOW)
    assert early.status == "pending" and early.header.received == 1
    assert early.entry("early").decision is None and early.bet_at(1) == "early"
    again, out = round_book.on_bet(early, placed("early"), NOW)
    assert out == [] and again == early  # redelivered while waiting: still waiting
    clash, out = round_book.on_bet(early, placed("early", player="p2"), NOW)
    assert [r.reason_code for _, _, r in out] == ["duplicate_bet_id"] and clash == early
    state, _ = round_book.on_bet(early, placed("second", stake=3000), NOW)
    state, out = round_book.on_table_event(state, opened(), NOW)
    assert [type(r) for _, _, r in out] == [BetAccepted, BetAccepted]
    assert (state.header.accepted, state.header.total_stake) == (2, 5000)
    assert state.header.digest == manifest_digest(["second", "early"])


def test_void_of_a_pending_round_rejects_its_bets_and_refunds_nothing():
    state, _ = round_book.on_bet(None, placed("x"), NOW)
    voided, out = round_book.on_table_event(state, event(RoundVoided, 3, **VOID), NOW)
    assert [r.reason_code for _, _, r in out] == ["unknown_round"]
    assert voided.status == "voided" and voided.settlements == {}


def test_rejected_and_late_bets_are_kept_but_never_settled():
    state = round_book.on_table_event(None, opened(), NOW)[0]
    for b in [placed("a"), placed("bad", bet="big"), placed("b", bet="banker")]:
        state, _ = round_book.on_bet(state, b, NOW)
    state, _ = round_book.on_table_event(state, event(BettingClosed, 2, reason="timer"), NOW)
    state, late = round_book.on_bet(state, placed("late"), NOW)
    assert [r.reason_code for _, _, r in late] == ["round_closed"]
    _, again = round_book.on_bet(state, placed("late"), NOW + timedelta(seconds=3))
    assert again == late  # the stored rejection, not a new one
    settled, out = round_book.on_result(state, result(), NOW)
    assert kinds(out) == ["RoundManifest", "BetSettled", "BetSettled"]  # the result closed it
    assert [r.bet_id for _, _, r in out[1:]] == ["a", "b"] and out[-1][2].last_of_round
    assert settled.header.received == 4 and settled.header.accepted == 2


def test_a_random_round_settles_the_same_whatever_the_order_of_its_bets():
    bets = [placed(f"r{i}", bet=random.Random(i).choice(["player", "banker", "tie"]),
                   stake=1000 * (1 + i % 5)) for i in range(50)]
    outcomes = []
    for seed in (1, 2):
        shuffled = bets[:]
        random.Random(seed).shuffle(shuffled)
        state = round_book.on_table_event(None, opened(), NOW)[0]
        for b in shuffled:
            state, _ = round_book.on_bet(state, b, NOW)
        state, out = round_book.on_result(state, result(), NOW)
        outcomes.append((out[0][2].digest, sorted((r.bet_id, r.returned) for _, _, r in out[1:])))
    assert outcomes[0] == outcomes[1]
