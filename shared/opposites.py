"""Opposite bets: two bets of one round that cover each other, so that two accounts staking
about the same on each side move money between themselves at the cost of the house edge
(bonus abuse, money moved between accounts: `croupier risk opposite`, docs/decisions/
risk.md).

Two bets are opposite when, on every result, exactly one of them wins or both push: they
never both win and never both lose. Which bets those are follows from the rules
(`shared.bets`); a profile offers a pair when it offers both bets:

- Baccarat: Player and Banker (a tie pushes both), Big and Small (4 cards or 5-6 cards).
- Triple Face: Win and Lose on the same position (the same player hand against the
  Banker's; a tie pushes both). Win on one position and Lose on another are not opposite
  (both may win).

Side bets are not: Player Pair and Banker Pair, the Dragon Bonuses, Big and Small Tiger
and the like can all lose together. `tests/unit/test_opposites.py` deals rounds of every
shipped profile and checks that the pairs below are exactly the pairs of its offered bets
that never win together and never lose together.
"""

from __future__ import annotations

from shared.profile import AnyProfile, list_profiles, load_profile

# per game, each pair in name order; Triple Face pairs oppose only on the same position
OPPOSITE_BETS: dict[str, tuple[tuple[str, str], ...]] = {
    "baccarat": (("banker", "player"), ("big", "small")),
    "triple_face": (("lose", "win"),),
}


def offered_opposites(profile: AnyProfile) -> tuple[tuple[str, str], ...]:
    """The opposite pairs `profile` offers (both bets on its table)."""
    return tuple(pair for pair in OPPOSITE_BETS[profile.game]
                 if pair[0] in profile.bets and pair[1] in profile.bets)


def shipped_opposites() -> tuple[tuple[str, str], ...]:
    """Every opposite pair some shipped profile offers, each once, in name order: what a
    search over every table's bets looks for (the bets of one round are all of one table,
    so of one game: a pair's names never meet across games)."""
    pairs = {pair for name in list_profiles() for pair in offered_opposites(load_profile(name))}
    return tuple(sorted(pairs))
