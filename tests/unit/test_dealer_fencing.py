"""Zombie fencing of dealer-event (issue 17, docs/decisions/dealer-fencing.md): two workers
race on one table, the real runtime on an in-memory log. The log's first seq wins; the
loser's events are void for every reader (skipped, never flagged), its waiters are told to
resend, never given the void outcome; a forged event still flags."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from services.bet_settlement.settlement_fold import Lookups
from services.dealer_event.rebuild import fold_events
from services.dealer_event.runtime import LOST_RACE
from services.game_evaluation.evaluator import EvaluationState, observe_verified
from services.infra.clock import ManualClock
from services.operator.audit import Books
from services.operator.rebuild import _rounds_from_table_events
from services.operator.replay import replay_round
from services.wallet.table_views import TableViews
from shared.events.chain import follow_chain
from shared.events.event_auth import VOID, TableFlagged
from shared.events.inputs import CloseBetting, NewShoe, OpenRound, VoidRound
from shared.events.table import VoidReason, parse_table_event, seal
from shared.topics import DEAD_LETTERS_TOPIC, TABLE_EVENTS_TOPIC
from tests.unit.agent_loop_support import Event
from tests.unit.dealer_runtime_support import PARTITIONS, World
from tests.unit.settlement_log_support import LogBroker, Worker

KEY = b"test-table-events-key"
P = PARTITIONS["A"]


def run(coro):
    return asyncio.run(coro)


def table_events(w: World) -> list[bytes]:
    return w.events("A")


@dataclass
class Race:
    owner: World
    zombie: World
    zombie_records: list[bytes]  # the table events the zombie wrote (void)
    zombie_answers: list[dict]  # what its waiters were given
    zombie_reports: list[dict | None]
    owner_last: list[dict | None]  # the owner's reports on its batch after the zombie's

    def winner_only(self) -> list[bytes]:
        return [v for v in table_events(self.owner) if v not in self.zombie_records]


def inputs(w: World, *specs) -> tuple[list, list]:
    """(items for handle_batch at dealer.inputs offsets, (input_id, signature) each)."""
    items, ids = [], []
    for offset, kind, fields in specs:
        inp = w.make["A"].make(kind, **fields)
        items.append((inp.model_dump_json().encode(), P, offset))
        ids.append((inp.input_id, inp.signature))
    return items, ids


def race() -> Race:
    """Both workers hold table A at seq 1 (a shoe). The zombie lost the partition without
    noticing; the new owner opens round R1 (seq 2). Then the zombie, on its stale state,
    opens R9 and a supervisor closes it (its seq 2 and 3, chained on its own seq 2) and
    refuses R10 (a round in progress, its R9). Then the owner closes R1 (seq 3)."""
    owner = World(events_key=KEY, tag="own")
    zombie = World(log=owner.log, events_key=KEY, tag="zom")

    async def go():
        items, _ = inputs(owner, (0, NewShoe, dict(shoe_id="S1", profile="sbo-baccarat")))
        await owner.runtime.handle_batch(items)
        await zombie.runtime.ensure_ready()  # it had the partition: rebuilt at seq 1
        items, _ = inputs(owner, (1, OpenRound, dict(round_id="R1", dealer="Ayu")))
        await owner.runtime.handle_batch(items)
        before = len(table_events(owner))
        items, ids = inputs(zombie, (2, OpenRound, dict(round_id="R9", dealer="Zed")),
                            (3, CloseBetting, dict(round_id="R9", role="supervisor",
                                                   reason_text="test: close now")),
                            # refused on the zombie's own (void) round: no event of its own
                            (4, OpenRound, dict(round_id="R10", dealer="Zed")))
        waiters = [zombie.runtime.expect(i, P, s) for i, s in ids]
        reports = await zombie.runtime.handle_batch(items)
        written = table_events(owner)[before:]
        items, _ = inputs(owner, (5, CloseBetting, dict(round_id="R1", role="supervisor",
                                                        reason_text="test: close now")))
        last = await owner.runtime.handle_batch(items)
        return Race(owner, zombie, written, [w.result() for w in waiters if w.done()],
                    reports, last)

    return run(go())


# --- the writer -------------------------------------------------------------------------------

def test_the_losers_waiters_are_told_to_resend_never_given_its_void_outcome():
    r = race()
    assert len(r.zombie_records) == 2, "the zombie did write its seq 2 and 3"
    # the refusal too: it was decided on a table another writer had moved
    assert [a["status"] for a in r.zombie_answers] == [LOST_RACE] * 3
    assert [rep["status"] for rep in r.zombie_reports] == [LOST_RACE] * 3
    assert not any("events" in a for a in r.zombie_answers), "no void event is shown"
    # it dropped its states and rebuilt them from the log (in the background; ensure_ready
    # waits for it): the owner's round, and its own inputs not counted as decided
    async def again():
        await r.zombie.runtime.ensure_ready()
    run(again())
    rebuilt, owner = r.zombie.runtime.tables["A"], r.owner.runtime.tables["A"]
    assert (rebuilt.seq, rebuilt.head_hash, rebuilt.round) == (owner.seq, owner.head_hash,
                                                               owner.round)
    assert rebuilt.round.round_id == "R1" and rebuilt.applied_inputs == owner.applied_inputs
    # a rejection has no chain: the zombie's stays in the log as a refusal of its input
    # (dealer-fencing.md, "What is left"); its waiter was still told to resend
    assert rebuilt.refused_inputs == {"A-zom-3": "round_in_progress"}
    assert not r.zombie.runtime.inputs[P].applied(2) and not r.zombie.runtime.inputs[P].applied(3)


def test_the_winner_answers_as_before_even_with_void_records_before_its_own():
    """The owner's close landed after the zombie's two void events (not at the end it
    knew): re-read and folded, it is valid, so it is answered and the states move on."""
    r = race()
    assert [rep["status"] for rep in r.owner_last] == ["accepted"]
    assert r.owner.runtime.ready and r.owner.runtime.tables["A"].seq == 3
    assert r.owner.runtime.events_end[P] == len(table_events(r.owner))


def test_a_void_events_input_is_not_counted_as_decided():
    r = race()
    states, checkpoints = {}, {}
    fold_events(states, [(b"A", v) for v in table_events(r.owner)], KEY, inputs=checkpoints)
    assert not checkpoints[P].applied(2) and not checkpoints[P].applied(3)
    assert checkpoints[P].applied(1) and checkpoints[P].applied(5)


def test_whoever_lands_second_loses_even_the_rightful_owner():
    """The log decides, not ownership: the zombie's event lands first (it is valid, and
    the zombie answers it), the owner's lands after it on the same head and is void; the
    owner's waiter is told to resend."""
    owner = World(events_key=KEY, tag="own")
    zombie = World(log=owner.log, events_key=KEY, tag="zom")

    async def go():
        items, _ = inputs(owner, (0, NewShoe, dict(shoe_id="S1", profile="sbo-baccarat")))
        await owner.runtime.handle_batch(items)
        await zombie.runtime.ensure_ready()
        items, ids = inputs(owner, (1, OpenRound, dict(round_id="R1", dealer="Ayu")))
        zitems, _ = inputs(zombie, (2, OpenRound, dict(round_id="R9", dealer="Zed")))

        async def zombie_writes_first(_records):  # lands before the owner's batch
            await zombie.runtime.handle_batch(zitems)
        owner.log.before_publish = zombie_writes_first
        waiter = owner.runtime.expect(ids[0][0], P, ids[0][1])
        await owner.runtime.handle_batch(items)
        await owner.runtime.ensure_ready()
        return waiter.result()

    answer = run(go())
    assert answer["status"] == LOST_RACE
    assert zombie.runtime.tables["A"].round.round_id == "R9", "the zombie's landed in place"
    assert owner.runtime.tables["A"].round.round_id == "R9", "the owner rebuilt the log's"


# --- the readers ------------------------------------------------------------------------------

def _evaluate(raws):
    view = EvaluationState(table_id="A")
    voids = 0
    for raw in raws:
        seen = observe_verified(view, parse_table_event(raw), KEY)
        voids += seen.void is not None
        view = seen.view
    return view, voids


def test_game_evaluation_follows_the_winner_and_flags_nothing():
    r = race()
    full, voids = _evaluate(table_events(r.owner))
    alone, _ = _evaluate(r.winner_only())
    assert _no_tips(full) == alone and full.flagged is None and voids == 2
    assert full.void_tips == (parse_table_event(r.zombie_records[-1]).hash,)
    assert full.round.round_id == "R1"


def _settle(raws):
    worker = Worker(LogBroker(), ManualClock(), key=KEY, accept_unsigned=False)
    for offset, raw in enumerate(raws):
        worker.apply([Event(TABLE_EVENTS_TOPIC, offset, b"A", raw)])
    letters = [v for t, _, v in worker.broker.published if t == DEAD_LETTERS_TOPIC]
    return worker, letters


def test_bet_settlement_follows_the_winner_and_flags_nothing():
    r = race()
    full, letters = _settle(table_events(r.owner))
    alone, _ = _settle(r.winner_only())
    assert letters == []
    watch = Lookups(full.kv()).watch("A")
    assert watch.head.hash == Lookups(alone.kv()).watch("A").head.hash and watch.flagged is None
    assert watch.void_tips == (parse_table_event(r.zombie_records[-1]).hash,)
    assert Lookups(full.kv()).header("A", "R9") is None
    assert Lookups(full.kv()).header("A", "R1") == Lookups(alone.kv()).header("A", "R1")


def _views(raws):
    views = TableViews(KEY, False, ManualClock())
    for raw in raws:
        views.apply(raw)
    return views.get("A")


def test_the_wallets_view_follows_the_winner_and_flags_nothing():
    r = race()
    full = _views(table_events(r.owner))
    assert _no_tips(full) == _views(r.winner_only()) and full.flagged is None
    assert "R9" not in full.rounds and full.rounds["R1"].phase == "dealing"


def test_dealer_events_rebuild_follows_the_winner_and_keeps_the_table_in_play():
    r = race()
    full, alone = {}, {}
    fold_events(full, [(b"A", v) for v in table_events(r.owner)], KEY)
    fold_events(alone, [(b"A", v) for v in r.winner_only()], KEY)
    assert full["A"].corrupt is None and full["A"].seq == 3
    assert full["A"].void_tips == (parse_table_event(r.zombie_records[-1]).hash,)
    full["A"].void_tips = ()
    assert full == alone


def _replay(raws):
    events = [parse_table_event(v) for v in raws]
    return replay_round("A", "R1", events, None, None, [], [], [], events_key=KEY)


def test_replay_shows_the_void_events_as_a_zombies_and_rebuilds_the_round_without_them():
    r = race()
    full, alone = _replay(table_events(r.owner)), _replay(r.winner_only())
    void_notes = [n for n in full.notes if VOID in n]
    assert len(void_notes) == 2 and all("zombie" in n for n in void_notes)
    assert full.model_copy(update={"notes": alone.notes}) == alone
    assert not [d for d in full.differences if "chain" in str(d)]


def test_the_operators_rebuild_names_the_void_events_and_finds_no_difference():
    r = race()
    events = [parse_table_event(v) for v in table_events(r.owner)]
    void: list[str] = []
    assert _rounds_from_table_events({"A": events}, Books(), KEY, False, void) == (0, [])
    assert len(void) == 2 and all(VOID in v for v in void)
    # without the key nothing tells a lost race from tampering: a break
    _, differences = _rounds_from_table_events({"A": events}, Books())
    assert differences


# --- a longer zombie chain ---------------------------------------------------------------------

def _zombie_next(prev_raw: bytes) -> bytes:
    """The zombie's next event, chained on its `prev_raw` and signed (as its runtime would
    seal it on its own stale state)."""
    prev = parse_table_event(prev_raw)
    fields = prev.model_dump(exclude={"hash", "auth", "type", "event_id", "seq", "prev_hash"})
    return seal(type(prev), **{**fields, "seq": prev.seq + 1, "prev_hash": prev.hash},
                key=KEY).model_dump_json().encode()


def long_race() -> tuple[list[bytes], list[bytes], World]:
    """`race`, then the zombie goes on: four more events chained on its own (six in all,
    seq 2..7), interleaved with the owner's void of R1 and its R2 opened and closed (seq
    4..6), so part of the zombie's chain runs past the winner's head + 1. The log, and the
    zombie's records, and the owner."""
    r = race()
    owner = r.owner
    zombie = list(r.zombie_records)

    def zombie_writes(n: int) -> None:
        for _ in range(n):
            zombie.append(_zombie_next(zombie[-1]))
            owner.log._append([(TABLE_EVENTS_TOPIC, b"A", zombie[-1])])

    async def go():
        zombie_writes(2)
        items, _ = inputs(owner, (6, VoidRound, dict(round_id="R1",
                                                     reason_code=VoidReason.MISDEAL,
                                                     reason_text="test: void")))
        reps = await owner.runtime.handle_batch(items)
        assert [rep["status"] for rep in reps] == \
            ["accepted"], reps
        zombie_writes(1)
        items, _ = inputs(owner, (7, OpenRound, dict(round_id="R2", dealer="Ayu")))
        await owner.runtime.handle_batch(items)
        zombie_writes(1)
        items, _ = inputs(owner, (8, CloseBetting, dict(round_id="R2", role="supervisor",
                                                        reason_text="test: close now")))
        reps = await owner.runtime.handle_batch(items)
        assert [rep["status"] for rep in reps] == \
            ["accepted"], reps
    run(go())
    return table_events(owner), zombie, owner


def _no_tips(model):
    return model.model_copy(update={"void_tips": ()})


def test_a_long_zombie_chain_is_void_for_every_reader_and_the_winner_applies():
    log, zombie, owner = long_race()
    winner = [v for v in log if v not in zombie]
    assert len(zombie) == 6 and len(winner) == 6
    heads = {}  # the winner's head when each zombie event came
    seq = 0
    for v in log:
        if v in zombie:
            heads[v] = seq
        else:
            seq = parse_table_event(v).seq
    assert any(parse_table_event(z).seq > heads[z] + 1 for z in zombie), \
        "part of the zombie's chain is past the winner's head + 1"
    # game-evaluation
    full, voids = _evaluate(log)
    alone, _ = _evaluate(winner)
    assert voids == 6 and full.flagged is None and _no_tips(full) == alone
    assert full.void_tips == (parse_table_event(zombie[-1]).hash,), "one tip per zombie chain"
    # bet-settlement
    settled, letters = _settle(log)
    watch = Lookups(settled.kv()).watch("A")
    assert letters == [] and watch.flagged is None
    assert watch.head.hash == Lookups(_settle(winner)[0].kv()).watch("A").head.hash
    assert Lookups(settled.kv()).header("A", "R2") is not None
    # the wallet's view
    view = _views(log)
    assert view.flagged is None and _no_tips(view) == _views(winner)
    assert view.rounds["R2"].phase == "dealing" and "R9" not in view.rounds
    # dealer-event's rebuild
    states, alone_states = {}, {}
    fold_events(states, [(b"A", v) for v in log], KEY)
    fold_events(alone_states, [(b"A", v) for v in winner], KEY)
    assert states["A"].corrupt is None and states["A"].seq == 6
    # the owner's live state, which saw the zombie's records only on re-reading its own
    # batches' landing, holds the tips the rebuild's fold gives: one fold
    live = owner.runtime.tables["A"]
    assert live.void_tips == states["A"].void_tips == full.void_tips
    assert (live.seq, live.head_hash) == (states["A"].seq, states["A"].head_hash)
    states["A"].void_tips = ()
    assert states == alone_states
    # the operator's chain check and rebuild
    events = [parse_table_event(v) for v in log]
    followed = follow_chain(events, authenticated=True)
    assert followed.breaks == [] and len(followed.void) == 6 and len(followed.valid) == 6
    void: list[str] = []
    assert _rounds_from_table_events({"A": events}, Books(), KEY, False, void)[1] == []
    assert len(void) == 6


def test_a_gap_another_writer_left_puts_the_table_out_of_play_for_the_owner_too():
    """An authentic event past the owner's head + 1 on no void event (its predecessor
    missing from the log) is not a lost race: the owner's batch landing after it has the
    states rebuilt, and the rebuild's fold puts the table out of play, as every reader
    flags it."""
    r = race()
    owner = r.owner
    head = parse_table_event(table_events(owner)[-1])
    fields = head.model_dump(exclude={"hash", "auth", "type", "event_id", "seq", "prev_hash"})
    gap = seal(type(head), **{**fields, "seq": head.seq + 2, "prev_hash": "e" * 64}, key=KEY)
    owner.log._append([(TABLE_EVENTS_TOPIC, b"A", gap.model_dump_json().encode())])

    async def go():
        items, _ = inputs(owner, (6, VoidRound, dict(round_id="R1",
                                                     reason_code=VoidReason.MISDEAL,
                                                     reason_text="test: void")))
        await owner.runtime.handle_batch(items)
        await owner.runtime.ensure_ready()
    run(go())
    assert owner.runtime.tables["A"].corrupt
    with pytest.raises(TableFlagged, match="out of order"):
        _evaluate(table_events(owner))


# --- a forgery is still tampering -------------------------------------------------------------

def test_a_forged_event_off_the_chain_still_flags():
    r = race()
    head = parse_table_event(table_events(r.owner)[-1])
    forged = seal(type(head), **{**head.model_dump(exclude={"hash", "auth", "type", "event_id"}),
                                 "seq": head.seq + 1, "prev_hash": "f" * 64},
                  key=b"not-the-key")
    raws = [*table_events(r.owner), forged.model_dump_json().encode()]
    view, _ = _evaluate(raws[:-1])
    with pytest.raises(TableFlagged, match="forged"):
        observe_verified(view, forged, KEY)
    assert _views(raws).flagged is not None
    _, letters = _settle(raws)
    assert len(letters) == 1
