"""Table procedures as the operator sheets state them (issue 12), continued: each seed
profile's stated settings, and clauses named later (issue 19). Named as in
test_table_procedures.py; decisions: docs/decisions/procedures.md.
"""

from __future__ import annotations

import json
from importlib import resources

import pytest

from shared.events.inputs import (
    AnnulRounds,
    Burn,
    OpenRound,
    ReportMisdeal,
    VoidRound,
)
from shared.profile import ProfileError, load_profile, parse_profile
from tests.unit import table_procedures_support as procedures
from tests.unit.round_book_support import placed
from tests.unit.table_machine_support import Table, types

# --- item 11: profile validation -----------------------------------------------------------

def _profile_data(name: str) -> dict:
    return json.loads(resources.files("shared.profiles").joinpath(f"{name}.json")
                      .read_text("utf-8"))


def test_seed002_super_six_only_on_no_commission_tables():
    """"Jenis taruhan Super Six hanya tersedia di meja Super Six (Baccarat Non Komisi)." """
    data = _profile_data("sbo-super-six")
    commission = {**data, "banker_mode": "commission",
                  "bets": {**data["bets"], "banker": {**data["bets"]["banker"],
                                                      "pays": {"win": {"num": 19, "den": 20}}}}}
    with pytest.raises(ProfileError, match="super_six is offered only at no-commission"):
        parse_profile(commission)


def test_seed001_triple_face_jp_takes_tie_and_pair_plus_from_seed000():
    """Seed 001 names the odds of neither ("各ベットのオッズとペアプラスはPAYOFFをご覧ください";
    "ペアプラスのオッズは以下の通りです" is followed by no table): triple-face-jp pays what seed
    000 states, "Taruhan Side Bet untuk TIE pembayarannya adalah 8 : 1" and "Straight Flush
    40:1 Three of a Kind 30:1 Straight 6:1 Flush 3:1 Pairs 1:1" (a decision; procedures.md
    §13.3)."""
    jp, id_ = load_profile("triple-face-jp"), load_profile("triple-face-id")
    for bet in ("tie", "pair_plus"):
        assert jp.bets[bet].pays == id_.bets[bet].pays, bet
    assert {line: (f.num, f.den) for line, f in jp.bets["pair_plus"].pays.items()} == {
        "straight_flush": (40, 1), "three_of_a_kind": (30, 1), "straight": (6, 1),
        "flush": (3, 1), "pair": (1, 1)}
    assert {line: (f.num, f.den) for line, f in jp.bets["tie"].pays.items()} == {"win": (8, 1)}
    assert "three_knights" not in jp.bets  # seed 001 lists Win, Lose, Tie, Pair Plus only


def test_two_cards_by_the_card_rules_never_voids_for_them():
    data = _profile_data("baccarat-big-small")
    with pytest.raises(ProfileError, match="two_cards_policy"):
        parse_profile({**data, "shoe_ends_on": ["card_exposed", "two_cards_dealt"]})


def test_burn_error_policy_fits_the_burn_count():
    data = _profile_data("sbo-baccarat")
    with pytest.raises(ProfileError, match="burn_error_policy"):
        parse_profile({**data, "burn_error_policy": "void"})
    with pytest.raises(ProfileError, match="burn_error_policy"):
        parse_profile({**data, "burn_per_round": 1, "burn_error_policy": "none"})
    with pytest.raises(ProfileError, match="Triple Face procedure"):
        parse_profile({**data, "burn_per_round": 1, "burn_error_policy": "redeal"})


STATED = ("decks", "burn_per_round", "betting_window_seconds", "misdeal_policy",
          "burn_error_policy", "shoe_ends_on", "table_closes_on", "extra_card_ends_shoe")
SHEETS = {  # profile: burns, decks, timer, misdeal, burn error, shoe ends on, table closes on
    "sbo-baccarat": (0, 8, 30, "correct", "none", {"two_cards_dealt", "card_dropped"}),
    "sbo-super-six": (0, 8, 30, "correct", "none", {"two_cards_dealt", "card_dropped"}),
    "sbo-tiger": (0, 8, 30, "correct", "none", {"two_cards_dealt", "card_dropped"}),
    "baccarat-big-small": (1, 8, 30, "correct", "void", {"card_exposed", "card_dropped"}),
    "triple-face-id": (4, 1, 30, "correct", "redeal", set()),
    "triple-face-jp": (0, 1, 30, "void", "none", set()),
}


def test_each_seed_profile_states_its_burns_decks_timer_and_void_policy():
    for name, (burns, decks, window, misdeal, burn_error, shoe_ends) in SHEETS.items():
        data = _profile_data(name)
        assert set(STATED) <= set(data), (name, set(STATED) - set(data))
        profile = load_profile(name)
        assert (profile.burn_per_round, profile.decks, profile.betting_window_seconds,
                profile.misdeal_policy, profile.burn_error_policy) \
            == (burns, decks, window, misdeal, burn_error), name
        assert set(profile.shoe_ends_on) == shoe_ends, name
        assert set(profile.table_closes_on) == {"system_failure"}, name
        assert profile.extra_card_ends_shoe == name.startswith("sbo-"), name
        # seed 004 §6 keeps the hand of two cards drawn at once; the others void it
        assert profile.two_cards_policy == (
            "card_rules" if name == "baccarat-big-small" else "void"), name


# --- issue 19 item 7: clauses that already worked, now named -------------------------------

def test_seed000_s2_card_exposed_during_betting_voids_the_hand():
    """"Apabila terjadi pembukaan kartu secara tidak sengaja pada waktu penawaran taruhan,
    maka Hand akan di void." """
    t = Table()
    t.shoe("triple-face-id")
    for _ in range(4):
        t.ok(Burn)
    t.ok(OpenRound, round_id="R1", dealer="Ayu")
    assert t.state.round.phase == "betting"  # bets are still being offered
    void = {"round_id": "R1", "reason_code": "card_exposed", "reason_text": "a card flashed"}
    assert t.refused(VoidRound, role="device", **void) == "role_not_allowed"
    events = t.ok(VoidRound, **void)
    assert types(events) == ["round_voided"] and events[0].reason_code == "card_exposed"
    bets = [placed("a", bet="win", position=1, stake=1000),
            placed("b", bet="pair_plus", position="banker", stake=5000, player="p2")]
    assert [(s.bet_id, s.outcome, s.returned) for s in procedures.settled(t, "R1", bets)] == [
        ("a", "void_refund", 1000), ("b", "void_refund", 5000)]
    t.round("R2", procedures.TF_ROUND, burns=4)  # a fresh deck each round: the table goes on
    assert t.state.round_status == {"R1": "voided", "R2": "completed"}
    procedures.assert_rebuilds(t)


# a round dealt P3 -> P2 -> P1 -> Banker each time round: what lies in each box, and the
# shoe order that makes (the authoritative order, RULES §4.1)
LAID = {"player3": "AC,AD,8D", "player2": "3S,3D,TS", "player1": "9S,KH,QH",
        "banker": "5H,TH,2H"}
LAID_ORDER = ("player3", "player2", "player1", "banker")
REVERSED_SHOE = ",".join(LAID[hand].split(",")[i] for i in range(3) for hand in LAID_ORDER)


def test_seed000_s5_a_round_laid_in_reverse_order_swaps_player1_and_player3():
    """"Hasil akan diubah apabila dealer membagi dengan pola dari Player 3 -> Player 2 ->
    Player 1 -> Banker untuk keseluruhan kartu. Hasil antara Player 1 akan ditukar dengan
    Player 3." """
    t = Table()
    t.shoe("triple-face-id")
    done = t.round("R1", REVERSED_SHOE, burns=4)
    assert done[-1].type == "round_completed"
    correction = t.ok(ReportMisdeal, round_id="R1", reason_text="laid P3 -> P2 -> P1 -> Banker")
    assert types(correction) == ["misdeal_corrected"]  # recorded; the result stands
    [published] = procedures.results_of(t)
    hands = {name: ",".join(str(c) for c in hand.cards)
             for name, hand in published.result.hands.items()}
    # Player 1's result is the hand laid in Player 3's box, and the other way round
    assert hands == {"player1": LAID["player3"], "player2": LAID["player2"],
                     "player3": LAID["player1"], "banker": LAID["banker"]}
    assert (published.result.winners["player1"], published.result.winners["player3"]) == (
        "banker", "player3")
    bets = [placed("p1", bet="win", position=1, stake=1000),
            placed("p3", bet="win", position=3, stake=1000)]
    assert [(s.bet_id, s.outcome, s.returned) for s in procedures.settled(t, "R1", bets)] == [
        ("p1", "lose", 0), ("p3", "win", 2000)]
    procedures.assert_rebuilds(t)


def test_seed000_s6_a_card_stuck_in_the_shuffler_lets_management_void_the_hand():
    """"Apabila ada kartu yang tersangkut di mesin pengocok, pihak manajemen berhak
    membatalkan / void Hand yang ada." """
    t = Table()
    t.shoe("triple-face-id")
    t.round("R1", "JS,QS,KS", burns=4)
    void = {"round_id": "R1", "reason_code": "shuffler_stuck",
            "reason_text": "a card stuck in the shuffler"}
    assert t.refused(VoidRound, role="device", **void) == "role_not_allowed"  # management's
    events = t.ok(VoidRound, **void)
    assert types(events) == ["round_voided"] and events[0].reason_code == "shuffler_stuck"
    assert events[0].supervisor == "supervisor-1"
    bets = [placed("a", bet="tie", position=2, stake=2000)]
    assert [(s.outcome, s.returned) for s in procedures.settled(t, "R1", bets)] == [("void_refund", 2000)]
    t.round("R2", procedures.TF_ROUND, burns=4)
    assert t.state.round_status["R2"] == "completed"
    procedures.assert_rebuilds(t)


def test_seed004_s5_big_small_a_dealing_error_is_corrected_while_the_cards_are_on_the_table():
    """"Kesalahan pada pembagaian kartu akan di koreksi selama kartu masih di meja.
    Sebaliknya kejujuran dalam bermain, Pihak manajemen memiliki wewenang untuk membatalkan
    ..." and "pihak manajemen memiliki kebijakan untuk melanjutkan atau membatalkan
    permainan", at the Big/Small table."""
    t = procedures.big_small()
    t.round("R1", "9S,2H", burns=1)
    events = t.ok(ReportMisdeal, round_id="R1", reason_text="banker's card in the player's box")
    assert types(events) == ["misdeal_corrected"]
    assert t.state.round.phase == "dealing"  # corrected: the game goes on
    assert types(procedures.scan(t, "R1", "KD,5C"))[-1] == "round_completed"  # P 9S KD = 9, B 2H 5C = 7
    bets = [placed("s", bet="small", stake=1000), placed("g", bet="big", stake=1000),
            placed("p", bet="player", stake=1000)]
    assert [(s.bet_id, s.outcome, s.returned) for s in procedures.settled(t, "R1", bets)] == [
        ("s", "win", 2500), ("g", "lose", 0), ("p", "win", 2000)]  # 4 cards: Small, 1.5:1
    # or management voids the hand (the shoe goes on) or, once complete, annuls it
    t.round("R2", "9S,2H", burns=1)
    events = t.ok(VoidRound, round_id="R2", reason_code="misdeal", reason_text="not correctable")
    assert types(events) == ["round_voided"]
    t.round("R3", "9S,2H,KD,5C", burns=1)
    assert t.state.round_status["R3"] == "completed"
    events = t.ok(AnnulRounds, round_id="R1", reason_code="misdeal", reason_text="video review")
    assert types(events) == ["round_annulled"]
    procedures.assert_rebuilds(t)
