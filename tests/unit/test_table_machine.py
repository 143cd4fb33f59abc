"""The pure per-table state machine: every refusal code, the timer, duplicates, the chain."""

from __future__ import annotations

from datetime import timedelta

import pytest

from services.dealer_event.admission import AdmissionPolicy
from services.dealer_event.state import TableState, fold_into
from services.dealer_event.table_machine import MachineConfig, tick
from services.simulators.tables.inputs import InputFactory
from shared.cards import parse_card, parse_cards
from shared.events.chain import verify_chain
from shared.events.inputs import (
    Burn,
    CloseBetting,
    CutCard,
    EndShoe,
    NewShoe,
    OpenRound,
    ScanCard,
    ShoeFirstCard,
    VoidRound,
)
from shared.profile import load_profile
from shared.rounds import evaluate_round
from tests.unit.table_machine_support import Table, key_for, types


def test_a_baccarat_round_completes_by_the_tableau_and_chains():
    t = Table()
    t.shoe("sbo-baccarat")
    events = t.round("R1", "9S,2H,KD,5C")  # player natural 9: four cards
    assert types(events)[-2:] == ["card_dealt", "round_completed"]
    done = events[-1]
    assert [str(c) for c in done.cards] == ["9S", "2H", "KD", "5C"]
    assert evaluate_round(load_profile("sbo-baccarat"), done.cards).winner == "player"
    assert verify_chain(t.events) == []
    assert [e.seq for e in t.events] == list(range(1, len(t.events) + 1))


def test_surplus_card_after_completion_is_recorded_not_dealt():
    t = Table()
    t.shoe("baccarat-big-small")  # seed 002's tables replace the shoe after an extra card
    t.ok(ShoeFirstCard, card=parse_card("5H"))
    t.round("R1", "9S,2H,KD,5C", burns=1)
    assert types(t.ok(ScanCard, round_id="R1", card=parse_card("3H"))) == [
        "surplus_card_recorded"]


# --- refusals of the round lifecycle, one rule each ------------------------------------

@pytest.fixture
def shoe() -> Table:
    """A baccarat table with its shoe open and no round yet."""
    t = Table()
    t.shoe("sbo-baccarat")
    return t


@pytest.fixture
def betting(shoe) -> Table:
    """Round R1 open for bets."""
    shoe.ok(OpenRound, round_id="R1", dealer="Ayu")
    return shoe


@pytest.fixture
def completed(shoe) -> Table:
    """Round R1 dealt to completion (a player natural, four cards)."""
    shoe.round("R1", "9S,2H,KD,5C")
    assert shoe.state.round.phase == "completed"
    return shoe


@pytest.fixture
def voided(completed) -> Table:
    """Round R2 opened after R1 and voided."""
    completed.ok(OpenRound, round_id="R2", dealer="Ayu")
    completed.ok(VoidRound, round_id="R2", reason_code="card_dropped",
                 reason_text="card on floor")
    return completed


def test_no_round_opens_before_a_shoe():
    assert Table().refused(OpenRound, round_id="R0", dealer="Ayu") == "no_shoe"


def test_a_shoe_of_an_unknown_profile_is_refused():
    t = Table()
    assert t.refused(NewShoe, shoe_id="S1", profile="no-such") == "unknown_profile"
    assert t.state.shoe is None


def test_a_second_shoe_is_refused_while_one_is_open(shoe):
    assert shoe.refused(NewShoe, shoe_id="S2", profile="sbo-baccarat") == "shoe_already_open"


def test_a_start_burn_is_refused_where_the_profile_has_none(shoe):
    assert shoe.refused(ShoeFirstCard, card=parse_card("5H")) == "start_burn_not_expected"


def test_closing_an_unknown_round_is_refused(shoe):
    assert shoe.refused(CloseBetting, round_id="nope") == "round_not_found"


def test_no_second_round_opens_while_one_is_in_progress(betting):
    assert betting.refused(OpenRound, round_id="R2", dealer="Ayu") == "round_in_progress"


def test_the_shoe_does_not_end_while_a_round_is_in_progress(betting):
    assert betting.refused(EndShoe) == "round_in_progress"


def test_no_card_is_dealt_while_betting_is_open(betting):
    assert betting.refused(ScanCard, round_id="R1", card=parse_card("5H")) \
        == "betting_still_open"


def test_betting_closes_once(betting):
    betting.close("R1")
    assert betting.refused(CloseBetting, round_id="R1") == "betting_already_closed"


def test_no_burn_once_the_deal_started(betting):
    betting.close("R1")
    betting.ok(ScanCard, round_id="R1", card=parse_card("5H"))
    assert betting.refused(Burn) == "burn_during_deal"


def test_a_completed_round_cannot_be_voided(completed):
    assert completed.refused(VoidRound, round_id="R1", reason_code="misdeal",
                             reason_text="late") == "void_after_completion"


def test_a_round_id_is_never_reused(completed):
    assert completed.refused(OpenRound, round_id="R1", dealer="Ayu") == "round_id_reused"


def test_a_round_is_voided_once(voided):
    assert voided.refused(VoidRound, round_id="R2", reason_code="misdeal",
                          reason_text="again") == "round_already_voided"


def test_no_card_is_dealt_into_a_voided_round(voided):
    assert voided.refused(ScanCard, round_id="R2", card=parse_card("4H")) \
        == "round_not_in_progress"


def test_a_refusal_takes_no_place_in_the_chain(completed):
    before = len(completed.events)
    completed.refused(OpenRound, round_id="R1", dealer="Ayu")
    completed.ok(OpenRound, round_id="R2", dealer="Ayu")
    assert [e.seq for e in completed.events] == list(range(1, before + 2))
    assert verify_chain(completed.events) == []


def test_signatures_roles_and_time_windows():
    t = Table()
    assert t.send(t.make.make(NewShoe, shoe_id="S", profile="sbo-baccarat", sign=False)
                  ).refusal.code == "unsigned"
    forged = t.make.make(NewShoe, shoe_id="S", profile="sbo-baccarat").model_copy(
        update={"shoe_id": "S-evil"})
    assert t.send(forged).refusal.code == "bad_signature"
    other_table = InputFactory("T2", key_for, t.clock.now).make(
        NewShoe, shoe_id="S", profile="sbo-baccarat")
    retargeted = other_table.model_copy(update={"table_id": "T1"})
    assert t.send(retargeted).refusal.code == "bad_signature"
    assert t.refused(NewShoe, role="device", shoe_id="S", profile="sbo-baccarat") \
        == "role_not_allowed"
    old = t.clock.now() - timedelta(seconds=31)
    assert t.refused(NewShoe, shoe_id="S", profile="sbo-baccarat", sent_at=old) == "stale_input"
    ahead = t.clock.now() + timedelta(seconds=10)
    assert t.refused(NewShoe, shoe_id="S", profile="sbo-baccarat", sent_at=ahead) \
        == "input_from_future"


def test_the_same_input_twice_is_applied_once():
    t = Table()
    inp = t.make.make(NewShoe, shoe_id="S1", profile="sbo-baccarat")
    assert t.send(inp).refusal is None
    again = t.send(inp)
    assert again.refusal.code == "duplicate_input" and again.events == ()
    refused = t.make.make(NewShoe, shoe_id="S2", profile="sbo-baccarat")
    assert t.send(refused).refusal.code == "shoe_already_open"
    assert t.send(refused).refusal.code == "duplicate_input"
    assert len(t.events) == 1


def test_the_timer_closes_betting_with_an_injected_clock():
    t = Table()
    t.shoe("sbo-baccarat")
    t.ok(OpenRound, round_id="R1", dealer="Ayu")
    t.clock.advance(29)
    assert tick(t.state, t.clock.now()).events == ()
    t.clock.advance(1)
    closed = tick(t.state, t.clock.now())
    assert types(closed.events) == ["betting_closed"]
    assert closed.events[0].reason == "timer" and closed.events[0].input_id is None
    # an input after the deadline sees the automatic close first
    events = t.ok(ScanCard, round_id="R1", card=parse_card("9S"))
    assert types(events) == ["betting_closed", "card_dealt"]


def test_settings_override_the_profile_betting_window():
    t = Table()
    t.config = MachineConfig(AdmissionPolicy(key_for), betting_window_override=3)
    t.shoe("sbo-baccarat")
    opened = t.ok(OpenRound, round_id="R1", dealer="Ayu")[0]
    assert opened.betting_closes_at == t.clock.now() + timedelta(seconds=3)


def test_cut_card_during_a_round_makes_it_the_last():
    t = Table()
    t.shoe("sbo-baccarat")
    t.round("R1", "9S")
    assert types(t.ok(CutCard)) == ["cut_card_reached"]
    assert t.refused(CutCard) == "cut_card_already_reached"
    for card in parse_cards("2H,KD,5C"):
        t.ok(ScanCard, round_id="R1", card=card)
    assert t.refused(OpenRound, round_id="R2", dealer="Ayu") == "shoe_finished"
    assert t.refused(Burn) == "shoe_finished"
    assert types(t.ok(NewShoe, shoe_id="S2", profile="sbo-baccarat")) == [
        "shoe_ended", "shoe_started"]
    t.round("R2", "9S,2H,KD,5C")


def test_cut_card_between_rounds_needs_a_new_shoe():
    t = Table()
    t.shoe("sbo-baccarat")
    t.round("R1", "9S,2H,KD,5C")
    t.ok(CutCard)
    assert t.refused(OpenRound, round_id="R2", dealer="Ayu") == "shoe_finished"


def test_a_ninth_ace_of_spades_is_not_in_an_eight_deck_shoe():
    t = Table()
    t.shoe("sbo-baccarat")
    n = 0
    while t.state.shoe.remaining.get("AS"):
        n += 1
        t.ok(OpenRound, round_id=f"R{n}", dealer="Ayu")
        t.close(f"R{n}")
        t.ok(ScanCard, round_id=f"R{n}", card=parse_card("AS"))
        t.ok(VoidRound, round_id=f"R{n}", reason_code="misdeal", reason_text="test")
    assert n == 8
    t.ok(OpenRound, round_id="R9", dealer="Ayu")
    t.close("R9")
    assert t.refused(ScanCard, round_id="R9", card=parse_card("AS")) == "card_not_in_shoe"
    assert t.refused(ShoeFirstCard, card=parse_card("AS")) == "start_burn_not_expected"


def test_seed_004_shoe_start_burn_and_round_burn():
    t = Table()
    t.shoe("baccarat-big-small")
    assert t.refused(OpenRound, round_id="R1", dealer="Ayu") == "shoe_needs_first_card_burn"
    assert t.refused(Burn) == "shoe_needs_first_card_burn"
    burned = t.ok(ShoeFirstCard, card=parse_card("QH"))[0]
    assert burned.burn_count == 10 and t.state.shoe.position == 11
    assert t.refused(ShoeFirstCard, card=parse_card("AH")) == "start_burn_already_done"
    t.ok(OpenRound, round_id="R1", dealer="Ayu")
    t.close("R1")
    assert t.refused(ScanCard, round_id="R1", card=parse_card("9S")) == "burns_required"
    burn = t.ok(Burn, card=parse_card("4D"))[0]
    assert burn.round_id == "R1" and burn.shoe_position == 11
    t.ok(ScanCard, round_id="R1", card=parse_card("9S"))


def test_an_ace_first_card_burns_one_more():
    t = Table()
    t.shoe("baccarat-big-small")
    assert t.ok(ShoeFirstCard, card=parse_card("AC"))[0].burn_count == 1


def test_triple_face_fixed_needs_four_burns_and_takes_a_fresh_deck_each_round():
    t = Table()
    t.shoe("triple-face-id")
    t.ok(OpenRound, round_id="R1", dealer="Sari")
    t.close("R1")
    assert t.refused(ScanCard, round_id="R1", card=parse_card("JS")) == "burns_required"
    for card in parse_cards("2C,3C,4C,5C"):
        t.ok(Burn, card=card)
    assert t.refused(ScanCard, round_id="R1", card=parse_card("2C")) == "card_not_in_shoe"
    cards = parse_cards("JS,QS,KS,AH,2H,3H,4H,5H,6H,7H,8H,9H")
    events = []
    for card in cards[:5]:
        events += t.ok(ScanCard, round_id="R1", card=card)
    assert t.refused(ScanCard, round_id="R1", card=parse_card("JS")) == "duplicate_card_in_round"
    for card in cards[5:]:
        events += t.ok(ScanCard, round_id="R1", card=card)
    assert events[-1].type == "round_completed"
    assert t.refused(ScanCard, round_id="R1", card=parse_card("QS")) == "duplicate_card_in_round"
    t.ok(ScanCard, round_id="R1", card=parse_card("TD"))  # surplus from the same deck
    assert t.refused(CutCard) == "no_cut_card_in_game"
    # next round: a fresh deck, so the same cards are in it again
    t.round("R2", "JS,QS,KS,AH,2H,3H,4H,5H,6H,7H,8H,9H", burns=4)
    assert t.state.round.phase == "completed"
    assert t.refused(EndShoe, role="device") == "role_not_allowed"
    t.ok(EndShoe)
    assert t.state.shoe is None


def test_triple_face_first_card_counts_the_revealed_card():
    t = Table()
    t.shoe("triple-face-jp")
    events = t.round("R1", "AS,2S,3S,4S,5S,6S,7S,8S,9S,TS,JS,QS,KS")
    assert types(events)[-1] == "round_completed"
    assert len(events[-1].cards) == 13


def test_rebuilding_from_the_log_gives_the_same_state():
    t = Table()
    t.shoe("baccarat-big-small")
    t.ok(ShoeFirstCard, card=parse_card("5H"))
    t.round("R1", "9S,2H,KD,5C", burns=1)
    t.ok(OpenRound, round_id="R2", dealer="Ayu")
    rebuilt = TableState("T1")
    for event in t.events:
        fold_into(rebuilt, event)
    rebuilt.refused_inputs = dict(t.state.refused_inputs)
    assert rebuilt == t.state
    assert t.state.seq == len(t.events)


def test_a_table_out_of_play_refuses_every_input_and_others_play_on():
    """The machine's half of a table whose chain is not to be trusted (`TableState.corrupt`):
    every input refused `chain_corrupt`, no timer event; another table plays on. (Which
    tables are out of play was dealer-event's old rebuild of table.events to say; it now
    folds its own log, dealer.log, and no longer reads table.events.)"""
    t1, t2 = Table("T1"), Table("T2")
    for table in (t1, t2):
        table.ok(NewShoe, shoe_id=f"{table.state.table_id}-S1", profile="sbo-baccarat")
        table.ok(OpenRound, round_id=f"{table.state.table_id}-R1", dealer="Ayu")
    t1.state = t1.state.copy()
    t1.state.corrupt = "seq 2 does not continue seq 1"
    assert t1.refused(CloseBetting, round_id="T1-R1") == "chain_corrupt"
    assert t1.state.refused_inputs == {}, "not a decision on the input: it may come again"
    late = t1.clock.now() + timedelta(hours=2)  # the window long over, the round hanging
    assert tick(t1.state, late).events == ()
    assert t2.state.corrupt is None
    t2.close("T2-R1")
