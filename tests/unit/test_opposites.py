"""The opposite pairs (`shared.opposites`) are what the rules make of each shipped
profile: dealt rounds show exactly those pairs of offered bets (on one position) never
winning together and never losing together."""

from __future__ import annotations

import itertools
import random

import pytest

from shared.bets import GAME_RULES, Position, resolve
from shared.opposites import offered_opposites, shipped_opposites
from shared.profile import list_profiles, load_profile
from shared.rounds import evaluate_round
from shared.simulate import deal_rounds

ROUNDS = 1_500


@pytest.mark.parametrize("name", list_profiles())
def test_the_opposite_pairs_are_the_offered_bets_that_cover_each_other(name):
    profile = load_profile(name)
    rules = GAME_RULES[profile.game]
    spots: list[tuple[str, Position | None]] = [
        (bet, position) for bet in sorted(profile.bets)
        for position in (rules[bet].positions or (None,))]
    # pairs of spots that, in some round, did not cover each other: not one won while the
    # other lost, nor both pushed
    uncovered: set[tuple[tuple[str, Position | None], ...]] = set()
    dealer = deal_rounds(profile, random.Random(31))
    for _ in range(ROUNDS):
        result = evaluate_round(profile, next(dealer))
        outcome = {spot: resolve(rules[spot[0]], result, spot[1], profile).outcome
                   for spot in spots}
        for a, b in itertools.combinations(spots, 2):
            if sorted((outcome[a], outcome[b])) not in (["lose", "win"], ["push", "push"]):
                uncovered.add((a, b))
    covering = {(a[0], b[0]) for a, b in itertools.combinations(spots, 2)
                if a[1] == b[1] and (a, b) not in uncovered}
    assert covering == set(offered_opposites(profile))


def test_every_shipped_pair_is_searched_once():
    assert shipped_opposites() == (("banker", "player"), ("big", "small"), ("lose", "win"))
