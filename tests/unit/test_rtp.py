"""Exact RTP: published 8-deck figures, exact fractions, and the simulator agreeing."""

import random
from fractions import Fraction
from math import comb

import pytest

from shared.profile import load_profile, parse_profile
from shared.rtp import exact_rtp
from shared.simulate import deal_rounds, simulate


def _rtp(name: str) -> dict[str, float]:
    return {bet: float(r.rtp) for bet, r in exact_rtp(load_profile(name)).bets.items()}


def test_eight_deck_main_bets_match_published_values():
    rtp = _rtp("sbo-baccarat")
    assert rtp["banker"] == pytest.approx(0.989421, abs=1e-6)
    assert rtp["player"] == pytest.approx(0.987649, abs=1e-6)
    assert rtp["tie"] == pytest.approx(0.856404, abs=1e-6)
    assert rtp["player_pair"] == rtp["banker_pair"] == pytest.approx(0.896386, abs=1e-6)
    assert rtp["dragon_bonus_player"] == pytest.approx(0.973483, abs=1e-6)
    assert rtp["dragon_bonus_banker"] == pytest.approx(0.906269, abs=1e-6)
    assert _rtp("sbo-super-six")["banker"] == pytest.approx(0.985419, abs=1e-6)
    tiger = _rtp("sbo-tiger")
    assert tiger["big_tiger"] == pytest.approx(0.847467, abs=1e-6)
    assert tiger["small_tiger"] == pytest.approx(0.856675, abs=1e-6)
    assert tiger["tiger_pair"] == pytest.approx(0.838783, abs=1e-6)


def test_probabilities_are_exact_and_sum_to_one():
    for name in ("sbo-tiger", "baccarat-big-small", "triple-face-id"):
        for bet in exact_rtp(load_profile(name)).bets.values():
            total = sum(o.probability for o in bet.outcomes.values())
            assert total == 1 and isinstance(total, Fraction)


def test_pair_probability_closed_form():
    pair = exact_rtp(load_profile("sbo-baccarat")).bets["player_pair"]
    # the second card matches the first's rank: (4*8 - 1) of the other 415 cards
    assert pair.outcomes["win"].probability == Fraction(31, 415)
    assert pair.rtp == Fraction(31, 415) * 12


def test_triple_face_closed_forms():
    bets = exact_rtp(load_profile("triple-face-id")).bets
    assert bets["three_knights"].outcomes["win"].probability == Fraction(comb(12, 3), comb(52, 3))
    pair_plus = bets["pair_plus"].outcomes
    assert pair_plus["straight_flush"].probability == Fraction(48, 22100)
    assert pair_plus["three_of_a_kind"].probability == Fraction(52, 22100)
    assert pair_plus["straight"].probability == Fraction(720, 22100)
    assert pair_plus["flush"].probability == Fraction(1096, 22100)
    assert pair_plus["pair"].probability == Fraction(3744, 22100)
    win, lose = bets["win"], bets["lose"]
    assert win.outcomes == lose.outcomes  # player k and Banker are exchangeable
    assert win.outcomes["push"].probability == bets["tie"].outcomes["win"].probability


def test_six_decks_also_work():
    raw = load_profile("sbo-baccarat").model_dump(mode="json")
    six = exact_rtp(parse_profile({**raw, "decks": 6})).bets
    assert float(six["banker"].rtp) == pytest.approx(0.989442, abs=1e-6)  # edge 1.0558 %


@pytest.mark.parametrize("name", ["baccarat-big-small", "sbo-tiger", "triple-face-jp"])
def test_simulation_agrees_with_exact(name):
    profile = load_profile(name)
    report = simulate(profile, 3000, random.Random(11), exact_rtp(profile))
    for bet in report.values():
        assert abs(bet.z) < 4.5, bet


def test_simulated_dealer_follows_burns_and_cut_card():
    profile = load_profile("baccarat-big-small")
    dealer = deal_rounds(profile, random.Random(5))
    rounds = [next(dealer) for _ in range(200)]  # spans several 416-card shoes
    assert all(4 <= len(cards) <= 6 for cards in rounds)
    tf = deal_rounds(load_profile("triple-face-jp"), random.Random(5))
    assert all(len(set(next(tf))) == 13 for _ in range(50))
