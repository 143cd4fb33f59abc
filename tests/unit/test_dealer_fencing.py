"""Zombie fencing of dealer-event (issue 17, docs/decisions/dealer-fencing.md).

The writer: dealer-event's state is the fold of its own log, dealer.log, whose entries are
chained by ids (services/infra/kernel.py, services/infra/own_log.py). Two workers on one
log (tests/unit/dealer_support.py): a zombie that lost table A's partition without
noticing decides on its stale fold while the owner writes first. Whoever lands second
loses: its entries are void in dealer.log, their events and refusals are never published
on table.events or dealer.rejections, its waiters are told to resend (`lost_race`), never
given the void outcome, and the resend is decided on the log. The workers here decide the
same records at different times (the zombie decided, then stalled before its entries
landed: `MemoryLog.before_send`), which is what makes their decisions differ.

The readers: game-evaluation, bet-settlement, the wallet's view, replay, the operator's
rebuild and `chain.follow_chain` each follow table.events' first seq and take a zombie's
chained, signed events for void (skipped, never flagged), while a forged event or a gap
still flags. dealer-event no longer writes such a log, but the readers must still defend
against one: written by dealer-event before it moved onto its own log, or by anything else
holding the table-events key. So that log is built here as an old runtime's zombie wrote
it: the pure table machine (`table_machine.step`) on a stale state, its events signed
with `event_auth`.

Dropped with dealer-event's rebuild of table.events (it folds its own log, dealer.log, and
never reads table.events now): `test_dealer_events_rebuild_follows_the_winner_and_keeps_
the_table_in_play`, the dealer side of `test_a_gap_another_writer_left_puts_the_table_out_
of_play_for_the_owner_too` (its readers' side is kept) and the rebuild's checks in the long
zombie chain's test, including the owner's live void tips.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

import pytest

from services.bet_settlement.settlement_fold import Lookups
from services.dealer_event.admission import AdmissionPolicy
from services.dealer_event.dealer_fold import DEALER_FOLD
from services.dealer_event.decisions import LOST_RACE
from services.dealer_event.state import TableState
from services.dealer_event.table_machine import MachineConfig, step
from services.game_evaluation.evaluator import EvaluationState, observe_verified
from services.infra.clock import ManualClock
from services.infra.own_log import PartitionState, fold_entry
from services.operator.audit import Books
from services.operator.rebuild import _rounds_from_table_events
from services.operator.replay import replay_round
from services.simulators.tables.inputs import InputFactory
from services.wallet.table_views import TableViews
from shared.cards import parse_card
from shared.events.chain import follow_chain
from shared.events.dealer_log import DealerEntry
from shared.events.event_auth import VOID, TableFlagged
from shared.events.inputs import CloseBetting, NewShoe, OpenRound, ScanCard, VoidRound
from shared.events.table import VoidReason, event_auth, parse_table_event, seal
from shared.topics import DEAD_LETTERS_TOPIC, TABLE_EVENTS_TOPIC
from tests.crashsim.consume import Event as InputRecord
from tests.unit.agent_loop_support import APPENDED, Event
from tests.unit.dealer_support import PARTITIONS, World
from tests.unit.settlement_log_support import LogBroker, Worker
from tests.unit.table_machine_support import key_for

KEY = b"test-table-events-key"
P = PARTITIONS["A"]
WINDOW = 5  # the worlds' betting window (s): R1, opened at t0, closes at t0 + 5


def run(coro):
    return asyncio.run(coro)


# --- the writer: two workers on one dealer.log --------------------------------------------------

def folded(w: World) -> tuple[list[DealerEntry], list[DealerEntry], PartitionState]:
    """dealer.log's partition of table A folded from its start, as any worker recovering
    it folds it: its valid entries, its void ones, and the state."""
    state: PartitionState = PartitionState(P)
    valid, void = [], []
    for offset, entry in w.log.logged(P):  # a pack's entries at its record's offset
        (valid if fold_entry(state, offset, entry, DEALER_FOLD, APPENDED) else void).append(entry)
    return valid, void, state


def published(w: World) -> tuple[set[str], list[dict]]:
    """The hashes of the events on table.events and the refusals on dealer.rejections
    (each may be there more than once: the outbox publishes again after a recovery)."""
    return {parse_table_event(v).hash for v in w.events("A")}, w.rejections("A")


def refusals_of(entries: list[DealerEntry]) -> list[dict]:
    return [e.rejection.model_dump(mode="json") for e in entries if e.rejection is not None]


def assert_only_the_log_is_published(w: World) -> None:
    """Every event and refusal published is a valid entry's; none of a void entry's is."""
    valid, void, _ = folded(w)
    hashes, rejections = published(w)
    assert hashes == {e.hash for entry in valid for e in entry.events}
    assert not hashes & {e.hash for entry in void for e in entry.events}
    assert all(r in refusals_of(valid) for r in rejections)
    assert not [r for r in rejections if r in refusals_of(void)]


def pair() -> tuple[World, World]:
    """The owner opened round R1 at t0 (table A at seq 2, betting open until t0 + 5); the
    zombie folded dealer.log then, and lost the partition without noticing. The zombie's
    clock is then at t0 + 3 (betting open), the owner's at t0 + 6 (the window over)."""
    owner = World(events_key=KEY, tag="own", writer="own")
    zombie = World(log=owner.log, events_key=KEY, tag="zom", writer="zom")
    reports = run(owner.handle([owner.raw("A", NewShoe, shoe_id="S1", profile="sbo-baccarat"),
                                owner.raw("A", OpenRound, round_id="R1", dealer="Ayu")]))
    assert [r["status"] for r in reports] == ["accepted", "accepted"]
    run(zombie.recover())
    assert zombie.tables == owner.tables
    zombie.clock.advance(3)
    owner.clock.advance(6)
    return owner, zombie


@dataclass
class Raced:
    answers: list[dict | None]  # what the loser's waiters were told (None: nothing)
    reports: list[dict | None]  # the loser's reports
    winner_reports: list[dict | None]


def statuses(answers: list[dict | None]) -> list[str | None]:
    return [a["status"] if a else None for a in answers]


def race(loser: World, winner: World, records: list[InputRecord],
         winner_decides: list[InputRecord] | None = None) -> Raced:
    """`loser` decides `records` on its fold, a device waiting on each (as the HTTP door
    does), and stalls before its entries land; meanwhile `winner` decides
    `winner_decides` (by default the same records) and its entries land first."""
    got: dict = {}

    async def winner_first() -> None:
        got["winner"] = await winner.handle(records if winner_decides is None
                                            else winner_decides)

    async def go() -> Raced:
        waiters = [loser.decisions.expect(*_waiter_of(r)) for r in records]
        loser.log.before_send = winner_first
        reports = await loser.handle(records)
        return Raced([w.result() if w.done() else None for w in waiters], reports,
                     got["winner"])

    return run(go())


def _waiter_of(record: InputRecord) -> tuple[str, int, str]:
    """What the HTTP door expects for the input on `record`: its id, partition, signature."""
    inp = json.loads(record.message.value)
    return inp["input_id"], record.message.partition, inp["signature"]


def zombie_loses() -> tuple[World, World, Raced]:
    """At t0 + 3 the zombie decides three records on its fold: a supervisor's early close
    of R1 (its seq 3), a card (its seq 4), and a new round R2 (refused: R1 is in progress).
    It stalls before its entries land; meanwhile the owner decides the same records at
    t0 + 6, the window over: the timer's close first (seq 3), so the supervisor's close is
    refused `betting_already_closed`, then the card (seq 4), and R2 refused too. The
    owner's entries land first; the zombie's after them."""
    owner, zombie = pair()
    records = [zombie.raw("A", CloseBetting, round_id="R1", role="supervisor",
                          reason_text="test: close now"),
               zombie.raw("A", ScanCard, round_id="R1", card=parse_card("8H")),
               zombie.raw("A", OpenRound, round_id="R2", dealer="Zed")]
    return owner, zombie, race(zombie, owner, records)


def test_the_losers_waiters_are_told_to_resend_never_given_its_void_outcome():
    owner, zombie, r = zombie_loses()
    assert statuses(r.winner_reports) == ["refused", "accepted", "refused"]
    assert [rep.get("reason_code") for rep in r.winner_reports] == [
        "betting_already_closed", None, "round_in_progress"]
    # the zombie decided otherwise (its close accepted) and wrote it: void in dealer.log
    valid, void, state = folded(owner)
    assert [e.entry_id.split(":")[0] for e in void] == ["zom"] * 3
    assert [[e.type for e in entry.events] for entry in void] == [
        ["betting_closed"], ["card_dealt"], []]
    assert void[0].events[0].reason == "supervisor" and void[2].rejection is not None
    assert state.void == 3 and all(e.entry_id.startswith("own:") for e in valid)
    # its waiters, its refusal's too, are told to resend; no void event is shown
    assert statuses(r.answers) == [LOST_RACE] * 3
    assert statuses(r.reports) == [LOST_RACE] * 3
    assert not any("events" in a or "reason_code" in a for a in r.answers if a)
    # nothing of the zombie's is published: table.events and dealer.rejections are the log's
    assert_only_the_log_is_published(owner)
    kinds = [parse_table_event(v) for v in owner.events("A")]
    assert {(e.seq, e.type, getattr(e, "reason", None)) for e in kinds} >= {
        (3, "betting_closed", "timer"), (4, "card_dealt", None)}
    assert not [e for e in kinds if getattr(e, "reason", None) == "supervisor"]
    assert {(j["input_id"], j["reason_code"], j["received_at"]) for j in owner.rejections("A")
            } == {("A-zom-1", "betting_already_closed", "2026-01-01T00:00:06Z"),
                  ("A-zom-3", "round_in_progress", "2026-01-01T00:00:06Z")}
    # the zombie folded the log again: its tables are the owner's
    assert zombie.tables == owner.tables
    assert zombie.tables["A"].round.cards == ["8H"] and zombie.tables["A"].seq == 4


def test_the_owners_decisions_stand_and_it_answers_past_the_void_entries():
    """The owner's next entry lands after the zombie's three void ones (one record, a pack:
    not at the end it had folded): folded again, it is valid, so it is answered, and every
    worker folding the log has the owner's table."""
    owner, _, _ = zombie_loses()
    (report,) = run(owner.handle([owner.raw("A", ScanCard, round_id="R1",
                                            card=parse_card("KD"))]))
    assert report["status"] == "accepted" and [e["seq"] for e in report["events"]] == [5]
    assert owner.tables["A"].seq == 5 and owner.tables["A"].round.cards == ["8H", "KD"]
    later = World(log=owner.log, events_key=KEY, writer="w3")  # the partition's next worker
    run(later.recover())
    assert later.tables == owner.tables
    assert_only_the_log_is_published(owner)


def test_a_zombies_refusal_is_not_answered_when_the_log_decided_otherwise():
    """The zombie refuses a card on its stale table (`betting_still_open`, at t0 + 3); the
    owner, deciding the same record at t0 + 6 and landing first, deals it. The device is
    told to resend, never "refused"; the refusal is void in dealer.log and never
    published; the resent input is decided on the log (already applied)."""
    owner, zombie = pair()
    card = zombie.raw("A", ScanCard, round_id="R1", card=parse_card("8H"))
    r = race(zombie, owner, [card])
    assert statuses(r.winner_reports) == ["accepted"]
    assert r.answers == [{"status": LOST_RACE, "input_id": "A-zom-1", "table_id": "A"}]
    assert statuses(r.reports) == [LOST_RACE]
    _, void, _ = folded(owner)
    (refused,) = void
    assert refused.entry_id.startswith("zom:") and refused.events == ()
    assert refused.rejection.reason_code == "betting_still_open"
    assert owner.rejections("A") == [], "the zombie's refusal is never published"
    assert_only_the_log_is_published(owner)
    table = zombie.tables["A"]
    assert table == owner.tables["A"] and table.round.cards == ["8H"]
    assert "A-zom-1" in table.applied_inputs and table.refused_inputs == {}
    # the device resends: decided on the log, which applied it
    (resent,) = run(owner.handle([owner.put("A", card.message.value)]))
    assert (resent["status"], resent["reason_code"]) == ("refused", "duplicate_input")
    assert "already applied" in resent["message"]
    assert owner.tables["A"].round.cards == ["8H"]


def test_whoever_lands_second_loses_even_the_rightful_owner():
    """The log decides, not ownership: the zombie's entry lands first (it is valid, and the
    zombie answers it), the owner's lands after it on the same head and is void; the
    owner's waiter is told to resend, and the owner folds the zombie's decision."""
    owner, zombie = pair()
    closing = owner.raw("A", CloseBetting, round_id="R1", role="supervisor",
                        reason_text="test: close now")
    r = race(owner, zombie, [closing])
    assert statuses(r.answers) == [LOST_RACE]
    assert statuses(r.reports) == [LOST_RACE]
    assert statuses(r.winner_reports) == ["accepted"]
    valid, void, _ = folded(owner)
    assert valid[-1].entry_id.startswith("zom:") and void[0].entry_id.startswith("own:")
    # the owner's timer close and refusal are void: the log has the supervisor's close
    assert void[0].rejection.reason_code == "betting_already_closed"
    assert owner.rejections("A") == []
    assert_only_the_log_is_published(owner)
    assert owner.tables == zombie.tables
    assert parse_table_event(owner.events("A")[-1]).reason == "supervisor"


def test_a_record_only_the_losers_void_entry_decided_is_decided_again_on_the_log():
    """The zombie decides two records; the owner, writing first, has decided only the
    first. The zombie's entries are void; the second record is not counted as decided by
    them: folded again, the zombie decides it on the log, and that entry is valid."""
    owner, zombie = pair()
    first = zombie.raw("A", ScanCard, round_id="R1", card=parse_card("8H"))
    second = zombie.raw("A", CloseBetting, round_id="R1", role="supervisor",
                        reason_text="test: close now")
    r = race(zombie, owner, [first, second], winner_decides=[first])
    assert statuses(r.reports) == [LOST_RACE, "refused"]
    assert statuses(r.answers) == [LOST_RACE, "refused"]
    # decided again at t0 + 3 on the log's table (betting closed by the owner's timer)
    assert r.reports[1]["reason_code"] == "betting_already_closed"
    valid, void, state = folded(owner)
    assert [e.entry_id.split(":")[0] for e in void] == ["zom", "zom"]
    assert valid[-1].entry_id.startswith("zom:") and valid[-1].source.offset == \
        second.message.offset
    assert state.resume_at(second.message.topic, P) == second.message.offset + 1
    assert_only_the_log_is_published(owner)


# --- the readers: a table.events a zombie wrote ------------------------------------------------

class OldWriter:
    """A dealer-event worker of before dealer.log, as the readers saw it: the pure table
    machine on the state it holds, each event signed with the table-events key and
    appended to table.events at once (no fence)."""

    def __init__(self, log: list[bytes], tag: str, state: TableState | None = None,
                 clock: ManualClock | None = None) -> None:
        self.log = log
        self.clock = clock or ManualClock()
        self.state = state.copy() if state is not None else TableState("A")
        self.config = MachineConfig(AdmissionPolicy(key_for), betting_window_override=WINDOW,
                                    table_events_key=KEY)
        self.make = InputFactory("A", key_for, self.clock.now, run_tag=tag)
        self.written: list[bytes] = []

    def decide(self, kind, **fields) -> str | None:
        """The input decided and its events written; its refusal code, if refused."""
        outcome = step(self.state, self.make.make(kind, **fields), self.clock.now(),
                       self.config)
        self.state = outcome.state
        for event in outcome.events:
            raw = event.model_copy(update={"auth": event_auth(KEY, event.hash)})
            self.written.append(raw.model_dump_json().encode())
            self.log.append(self.written[-1])
        return outcome.refusal.code if outcome.refusal else None

    def close(self, round_id: str) -> None:
        assert self.decide(CloseBetting, round_id=round_id, role="supervisor",
                           reason_text="test: close now") is None


@dataclass
class OldRace:
    log: list[bytes]
    owner: OldWriter
    zombie: OldWriter

    @property
    def zombie_records(self) -> list[bytes]:
        return self.zombie.written

    def winner_only(self) -> list[bytes]:
        return [v for v in self.log if v not in self.zombie.written]


def old_race() -> OldRace:
    """table.events as a zombie of the old runtime left it: both workers held table A at
    seq 1 (a shoe); the owner opens R1 (seq 2); the zombie, on its stale state, opens R9
    and closes it (its seq 2 and 3, chained on its own seq 2) and refuses R10 (no event);
    then the owner closes R1 (seq 3)."""
    log: list[bytes] = []
    owner = OldWriter(log, "own")
    assert owner.decide(NewShoe, shoe_id="S1", profile="sbo-baccarat") is None
    zombie = OldWriter(log, "zom", owner.state, owner.clock)
    assert owner.decide(OpenRound, round_id="R1", dealer="Ayu") is None
    assert zombie.decide(OpenRound, round_id="R9", dealer="Zed") is None
    zombie.close("R9")
    assert zombie.decide(OpenRound, round_id="R10", dealer="Zed") == "round_in_progress"
    owner.close("R1")
    assert [parse_table_event(v).seq for v in log] == [1, 2, 2, 3, 3]
    return OldRace(log, owner, zombie)


def _evaluate(raws):
    view = EvaluationState(table_id="A")
    voids = 0
    for raw in raws:
        seen = observe_verified(view, parse_table_event(raw), KEY)
        voids += seen.void is not None
        view = seen.view
    return view, voids


def _no_tips(model):
    return model.model_copy(update={"void_tips": ()})


def test_game_evaluation_follows_the_winner_and_flags_nothing():
    r = old_race()
    full, voids = _evaluate(r.log)
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
    r = old_race()
    full, letters = _settle(r.log)
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
    r = old_race()
    full = _views(r.log)
    assert _no_tips(full) == _views(r.winner_only()) and full.flagged is None
    assert "R9" not in full.rounds and full.rounds["R1"].phase == "dealing"


def _replay(raws):
    events = [parse_table_event(v) for v in raws]
    return replay_round("A", "R1", events, None, None, [], [], [], events_key=KEY)


def test_replay_shows_the_void_events_as_a_zombies_and_rebuilds_the_round_without_them():
    r = old_race()
    full, alone = _replay(r.log), _replay(r.winner_only())
    void_notes = [n for n in full.notes if VOID in n]
    assert len(void_notes) == 2 and all("zombie" in n for n in void_notes)
    assert full.model_copy(update={"notes": alone.notes}) == alone
    assert not [d for d in full.differences if "chain" in str(d)]


def test_the_operators_rebuild_names_the_void_events_and_finds_no_difference():
    r = old_race()
    events = [parse_table_event(v) for v in r.log]
    void: list[str] = []
    assert _rounds_from_table_events({"A": events}, Books(), KEY, False, void) == (0, [])
    assert len(void) == 2 and all(VOID in v for v in void)
    # without the key nothing tells a lost race from tampering: a break
    _, differences = _rounds_from_table_events({"A": events}, Books())
    assert differences


# --- a longer zombie chain ---------------------------------------------------------------------

ZOMBIE_CARDS = ["2H", "4D", "3H", "2D"]  # player 5 draws: R9 is still being dealt after them


def long_race() -> tuple[list[bytes], list[bytes]]:
    """`old_race`, then the zombie deals four cards on its R9 (six events in all, seq
    2..7), interleaved with the owner's void of R1 and its R2 opened and closed (seq 4..6),
    so part of the zombie's chain runs past the winner's head + 1. The log, and the
    zombie's records."""
    r = old_race()
    cards = iter(ZOMBIE_CARDS)

    def zombie_deals(n: int) -> None:
        for _ in range(n):
            assert r.zombie.decide(ScanCard, round_id="R9", card=parse_card(next(cards))) \
                is None

    zombie_deals(2)
    assert r.owner.decide(VoidRound, round_id="R1", reason_code=VoidReason.MISDEAL,
                          reason_text="test: void") is None
    zombie_deals(1)
    assert r.owner.decide(OpenRound, round_id="R2", dealer="Ayu") is None
    zombie_deals(1)
    r.owner.close("R2")
    return r.log, r.zombie_records


def test_a_long_zombie_chain_is_void_for_every_reader_and_the_winner_applies():
    log, zombie = long_race()
    winner = [v for v in log if v not in zombie]
    assert len(zombie) == 6 and len(winner) == 6
    assert [parse_table_event(v).seq for v in zombie] == [2, 3, 4, 5, 6, 7]
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
    # the operator's chain check and rebuild
    events = [parse_table_event(v) for v in log]
    followed = follow_chain(events, authenticated=True)
    assert followed.breaks == [] and len(followed.void) == 6 and len(followed.valid) == 6
    void: list[str] = []
    assert _rounds_from_table_events({"A": events}, Books(), KEY, False, void)[1] == []
    assert len(void) == 6


def test_a_gap_another_writer_left_flags_every_reader():
    """An authentic event past the winner's head + 1 on no void event (its predecessor
    missing from the log) is not a lost race: every reader flags the table."""
    r = old_race()
    head = parse_table_event(r.log[-1])
    fields = head.model_dump(exclude={"hash", "auth", "type", "event_id", "seq", "prev_hash"})
    gap = seal(type(head), **{**fields, "seq": head.seq + 2, "prev_hash": "e" * 64}, key=KEY)
    raws = [*r.log, gap.model_dump_json().encode()]
    with pytest.raises(TableFlagged, match="out of order"):
        _evaluate(raws)
    assert _views(raws).flagged is not None
    _, letters = _settle(raws)
    assert len(letters) == 1
    assert follow_chain([parse_table_event(v) for v in raws], authenticated=True).breaks


# --- a forgery is still tampering -------------------------------------------------------------

def test_a_forged_event_off_the_chain_still_flags():
    r = old_race()
    head = parse_table_event(r.log[-1])
    forged = seal(type(head), **{**head.model_dump(exclude={"hash", "auth", "type", "event_id"}),
                                 "seq": head.seq + 1, "prev_hash": "f" * 64},
                  key=b"not-the-key")
    raws = [*r.log, forged.model_dump_json().encode()]
    view, _ = _evaluate(raws[:-1])
    with pytest.raises(TableFlagged, match="forged"):
        observe_verified(view, forged, KEY)
    assert _views(raws).flagged is not None
    _, letters = _settle(raws)
    assert len(letters) == 1

