"""A lost race is told apart from a gap (docs/decisions/dealer-fencing.md, "Void tips"): an
authentic event that does not continue the head is void only if it forks at the head
(seq <= head + 1) or hangs off an event the reader already judged void (a tip); an
authentic event past head + 1 on nothing void is a gap, flagged as before the fencing.
The tips are bounded per table: a zombie chain evicted from them turns into a flag, never
into silence. Older records (no tips) read and dump the same.

These are the readers' checks (game-evaluation, bet-settlement, the wallet's view,
`chain.follow_chain`, `event_auth`). dealer-event no longer reads table.events (its state is
the fold of its own log, dealer.log, whose entries chain by ids), so the test of its old
rebuild putting a gapped table.events out of play went with that rebuild."""

from __future__ import annotations

import pytest

from services.bet_settlement.settlement_fold import watch_of
from services.game_evaluation.evaluator import EvaluationState, observe_verified
from services.wallet.rounds_view import TableRounds, fold_checked
from shared.events.chain import follow_chain
from shared.events.evaluation_log import EvaluationEntry
from shared.events.event_auth import (
    VOID_TIPS,
    ChainHead,
    TableEventRefused,
    TableFlagged,
    TableWatch,
    advance,
    verify_next,
)
from shared.events.settlement_log import ChainWatch
from shared.events.table import TableEventBase, seal
from tests.unit.test_table_event_auth import KEY, Chain, opened_round


def _gapped() -> tuple[Chain, list[TableEventBase]]:
    """The round's events with seq 3 (betting closed) lost from the log."""
    chain = opened_round()
    return chain, [e for e in chain.events if e.seq != 3]


def _next_of(prev: TableEventBase, tag: str) -> TableEventBase:
    """An authentic event chained on `prev` (a zombie's next event): sealed with the key."""
    fields = prev.model_dump(exclude={"hash", "auth", "type", "event_id", "seq", "prev_hash"})
    return seal(type(prev), **{**fields, "seq": prev.seq + 1, "prev_hash": prev.hash,
                               "input_id": tag}, key=KEY)


def _fork_of(event: TableEventBase, tag: str) -> TableEventBase:
    """Another writer's event at `event`'s seq on the same prev (a lost race)."""
    fields = event.model_dump(exclude={"hash", "auth", "type", "event_id"})
    return seal(type(event), **{**fields, "input_id": tag}, key=KEY)


# --- a gap is a break again ------------------------------------------------------------------

def test_an_authentic_event_past_the_next_seq_is_refused_not_void():
    chain, _ = _gapped()
    head = ChainHead(chain.events[1].seq, chain.events[1].hash)
    with pytest.raises(TableEventRefused, match="out of order"):
        verify_next(chain.events[3], head, KEY)
    watch = TableWatch()
    for event in chain.events[:2]:
        watch, _ = advance(watch, event, KEY)
    with pytest.raises(TableFlagged) as flagged:
        advance(watch, chain.events[3], KEY)
    assert flagged.value.watch.flagged and "out of order" in flagged.value.watch.flagged


def test_game_evaluation_flags_a_gap():
    _, events = _gapped()
    view = EvaluationState(table_id="T1")
    for event in events[:2]:
        view = observe_verified(view, event, KEY).view
    with pytest.raises(TableFlagged, match="out of order"):
        observe_verified(view, events[2], KEY)


def test_the_wallets_view_flags_a_gap():
    _, events = _gapped()
    view, refused = None, None
    for event in events:
        view, refused, _ = fold_checked(view, event, KEY)
        if refused is not None:
            break
    assert refused is not None and view.flagged


def test_follow_chain_names_the_missing_seq():
    _, events = _gapped()
    followed = follow_chain(events, authenticated=True)
    assert followed.void == []
    assert [str(b) for b in followed.breaks] == [
        "chain breaks at seq 4: seq 3 missing (dropped or out of order)",
        "chain breaks at seq 4: prev_hash does not match the previous event"]


def test_a_gap_after_a_lost_race_is_still_a_gap():
    """A void fork at the head does not make every later event void: the winner's next
    event but one, with the one between lost, is on no void tip."""
    chain = opened_round()
    rival = _fork_of(chain.events[-1], "zombie")
    w7 = chain.card("2S", 3)
    w8 = chain.card("3S", 4)
    watch = TableWatch()
    for event in chain.events[:-2]:
        watch, _ = advance(watch, event, KEY)
    watch, verdict = advance(watch, rival, KEY)
    assert verdict == "void" and watch.void_tips == (rival.hash,)
    with pytest.raises(TableFlagged, match="out of order"):
        advance(watch, w8, KEY)
    events = [*chain.events[:-2], rival, w8]
    followed = follow_chain(events, authenticated=True)
    assert followed.void == [rival] and followed.breaks
    assert w7.seq + 1 == w8.seq


# --- the bound --------------------------------------------------------------------------------

def test_the_tips_stay_bounded_and_an_evicted_zombie_chain_flags():
    chain = opened_round()
    head = chain.events[-1]
    watch = TableWatch()
    for event in chain.events:
        watch, _ = advance(watch, event, KEY)
    zombies = []
    for i in range(VOID_TIPS + 1):  # one zombie more than the tips hold
        first = _fork_of(head, f"z{i}")  # seq == head's, another hash
        second = _next_of(first, f"z{i}")
        for event in (first, second):
            watch, verdict = advance(watch, event, KEY)
            assert verdict == "void" and len(watch.void_tips) <= VOID_TIPS
        zombies.append(second)
    assert len(watch.void_tips) == VOID_TIPS
    # the latest zombies' chains are still void, however long
    last = zombies[-1]
    for _ in range(5):
        last = _next_of(last, "z-last")
        watch, verdict = advance(watch, last, KEY)
        assert verdict == "void"
    assert len(watch.void_tips) == VOID_TIPS and watch.flagged is None
    # the oldest zombie's tip was evicted: its next event is a flag, never silence
    with pytest.raises(TableFlagged, match="out of order"):
        advance(watch, _next_of(zombies[0], "z0"), KEY)
    assert TableWatch.from_json(watch.to_json()) == watch


def test_a_long_zombie_chain_keeps_one_tip():
    chain = opened_round()
    zombie = [_fork_of(chain.events[-1], "z")]
    for _ in range(6):
        zombie.append(_next_of(zombie[-1], "z"))
    winner = [chain.card(c, 3 + i) for i, c in enumerate(["2S", "3S"])]
    # the winner's two events interleaved with the zombie's seven
    events = [*chain.events[:6], zombie[0], zombie[1], winner[0], zombie[2], zombie[3],
              winner[1], zombie[4], zombie[5], zombie[6]]
    watch = TableWatch()
    verdicts = []
    for event in events:
        watch, verdict = advance(watch, event, KEY)
        verdicts.append((event in zombie, verdict))
    assert all(v == ("void" if z else "apply") for z, v in verdicts)
    assert watch.void_tips == (zombie[-1].hash,) and watch.head.hash == winner[-1].hash
    # the zombie's last record written twice (a producer's retry): void again, no new tip
    assert advance(watch, zombie[-1], KEY) == (watch, "void")
    followed = follow_chain(events, authenticated=True)
    assert followed.void == zombie and followed.breaks == []


# --- records written before the tips -----------------------------------------------------------

OLD_STATE = '{"table_id":"T1","last_seq":7,"last_hash":"' + "a" * 64 + \
    '","round":null,"flagged":null}'


def test_a_state_written_before_the_tips_reads_and_dumps_the_same():
    state = EvaluationState.model_validate_json(OLD_STATE)
    assert state.void_tips == ()
    assert state.model_dump_json() == OLD_STATE
    tipped = state.model_copy(update={"void_tips": ("b" * 64,)})
    assert EvaluationState.model_validate_json(tipped.model_dump_json()) == tipped


def test_an_evaluation_entry_written_before_the_tips_reads_and_dumps_the_same():
    old = ('{"entry_id":"w1:1","prev":"","source":{"topic":"table.events","partition":0,'
           '"offset":3,"last":true,"part":0},"published_through":-1,"recorded_at":"2026-11-30T12:00:00Z",'
           '"schema_version":1,"type":"evaluation_entry","state":' + OLD_STATE +
           ',"result":null,"dead_letter":null}')
    entry = EvaluationEntry.model_validate_json(old)
    assert entry.model_dump_json() == old


def test_watches_written_before_the_tips_read_the_same():
    old = {"table_id": "T1", "seq": 7, "hash": "a" * 64, "flagged": None}
    watch = ChainWatch.model_validate(old)
    assert watch.model_dump() == old
    assert TableWatch.from_json(old) == TableWatch(ChainHead(7, "a" * 64))
    tipped = TableWatch(ChainHead(7, "a" * 64, ("b" * 64,)))
    assert TableWatch.from_json(watch_of("T1", tipped).model_dump()) == tipped
    assert TableRounds.model_validate({"table_id": "T1"}).void_tips == ()

