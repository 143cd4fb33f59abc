"""Exact return to player of every bet of a profile, by complete enumeration.

Every way the cards can fall is counted without replacement, in integers, and
divided once at the end, so each figure is an exact `Fraction`. To stay fast
the enumeration groups cards into the classes a bet can tell apart (baccarat
point values; ranks only for the first four cards, where pairs live; Triple
Face value/picture classes), then settles one representative round per
outcome class through the very same `bets.resolve` the services use. The
representative is dealt by the real engine and checked against its class, so
the fast enumeration and the engine cannot silently disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from fractions import Fraction
from functools import cache
from itertools import combinations, combinations_with_replacement
from math import comb
from typing import Any

from pydantic import BaseModel, ConfigDict

from shared import baccarat, triple_face
from shared.baccarat import banker_draws
from shared.bets import GAME_RULES, Basis, resolve
from shared.cards import DECK, RANKS, SUITS, Card, card_for_value, parse_card
from shared.money import Odds
from shared.profile import AnyProfile
from shared.rounds import AnyResult

# class key -> (integer weight, representative result); weights share one denominator
Key = tuple[Any, ...]  # an outcome class: what its rule reads of the round
Classes = tuple[dict[Key, tuple[int, AnyResult]], int]


class LineOdds(BaseModel):
    """One outcome line of a bet: its exact probability and what it returns per unit staked."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    probability: Fraction
    returns: Fraction


class BetReturn(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    bet: str
    outcomes: dict[str, LineOdds]

    @property
    def rtp(self) -> Fraction:
        return sum((o.probability * o.returns for o in self.outcomes.values()), Fraction(0))

    @property
    def house_edge(self) -> Fraction:
        return 1 - self.rtp

    @property
    def variance(self) -> Fraction:
        """Variance of the amount returned per unit staked (for simulation z-scores)."""
        second = sum((o.probability * o.returns**2 for o in self.outcomes.values()), Fraction(0))
        return second - self.rtp**2


class RtpReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    profile: str
    bets: dict[str, BetReturn]


def exact_rtp(profile: AnyProfile) -> RtpReport:
    """Each offered bet's exact outcome distribution (Triple Face: position 1; all
    positions are symmetric because the hands are exchangeable)."""
    rules = GAME_RULES[profile.game]
    bets = {}
    for bet_id, spec in profile.bets.items():
        rule = rules[bet_id]
        classes, total = outcome_classes(rule.basis, profile.decks)
        position = rule.positions[0] if rule.positions else None
        weights: dict[str, int] = {}
        for weight, result in classes.values():
            line = resolve(rule, result, position, profile).line
            weights[line] = weights.get(line, 0) + weight
        order = [*spec.pays, "push", "lose"]
        bets[bet_id] = BetReturn(
            bet=bet_id,
            outcomes={
                line: LineOdds(
                    probability=Fraction(weights[line], total),
                    returns=_returns(line, spec.pays),
                )
                for line in order
                if weights.get(line)
            },
        )
    return RtpReport(profile=profile.name, bets=bets)


def _returns(line: str, pays: dict[str, Odds]) -> Fraction:
    if line == "lose":
        return Fraction(0)
    if line == "push":
        return Fraction(1)
    return 1 + pays[line].fraction


def outcome_classes(basis: Basis, decks: int) -> Classes:
    return _BUILDERS[basis](decks)


# --- baccarat: point values ---------------------------------------------------

@cache
def _point_classes(decks: int) -> Classes:
    """Key (player points, banker points, player cards, banker cards), weighted over
    N(N-1)...(N-5) so rounds of 4, 5 and 6 cards share one denominator."""
    counts = [16 * decks] + [4 * decks] * 9  # value 0 is T J Q K
    n = 52 * decks
    tail4, tail5 = (n - 4) * (n - 5), n - 5
    draws = [[banker_draws(bt, p3) for p3 in range(10)] for bt in range(10)]
    acc: dict[Key, int] = {}
    paths: dict[Key, Key] = {}

    def add(key: Key, weight: int, path: Key) -> None:
        if key in acc:
            acc[key] += weight
        else:
            acc[key] = weight
            paths[key] = path

    for p1 in range(10):
        w1 = counts[p1]
        counts[p1] -= 1
        for p2 in range(p1, 10):
            w2 = w1 * counts[p2] * (1 if p1 == p2 else 2)  # the two player orders
            counts[p2] -= 1
            pt = (p1 + p2) % 10
            for b1 in range(10):
                w3 = w2 * counts[b1]
                counts[b1] -= 1
                for b2 in range(b1, 10):
                    w4 = w3 * counts[b2] * (1 if b1 == b2 else 2)
                    if not w4:
                        continue
                    counts[b2] -= 1
                    bt = (b1 + b2) % 10
                    first4 = (p1, b1, p2, b2)
                    if pt >= 8 or bt >= 8 or (pt >= 6 and bt >= 6):
                        add((pt, bt, 2, 2), w4 * tail4, first4)
                    elif pt >= 6:  # player stands, banker draws on 0-5
                        for b3 in range(10):
                            if counts[b3]:
                                add((pt, (bt + b3) % 10, 2, 3), w4 * counts[b3] * tail5,
                                    (*first4, b3))
                    else:
                        for p3 in range(10):
                            w5 = w4 * counts[p3]
                            if not w5:
                                continue
                            counts[p3] -= 1
                            pf = (pt + p3) % 10
                            if draws[bt][p3]:
                                for b3 in range(10):
                                    if counts[b3]:
                                        add((pf, (bt + b3) % 10, 3, 3), w5 * counts[b3],
                                            (*first4, p3, b3))
                            else:
                                add((pf, bt, 3, 2), w5 * tail5, (*first4, p3))
                            counts[p3] += 1
                    counts[b2] += 1
                counts[b1] += 1
            counts[p2] += 1
        counts[p1] += 1

    total = n * (n - 1) * (n - 2) * (n - 3) * (n - 4) * (n - 5)
    classes: dict[Key, tuple[int, AnyResult]] = {}
    for key, weight in acc.items():
        cards = [card_for_value(v, SUITS[i % 4]) for i, v in enumerate(paths[key])]
        result = baccarat.deal(cards)
        _check(key, (result.player_points, result.banker_points,
                     len(result.player), len(result.banker)))
        classes[key] = (weight, result)
    return classes, total


# --- baccarat: ranks of the first four cards (pairs) --------------------------

@cache
def _pair_classes(decks: int) -> Classes:
    """Key (player pair, banker pair, both pairs of one rank) over the first four cards."""
    per_rank = 4 * decks
    n = 52 * decks
    acc: dict[Key, int] = {}
    paths: dict[Key, Key] = {}
    counts = [per_rank] * 13
    for ranks in _sequences(13, 4):  # P1 B1 P2 B2
        weight = 1
        for r in ranks:
            weight *= counts[r]
            counts[r] -= 1
        for r in ranks:
            counts[r] += 1
        if not weight:
            continue
        p_pair, b_pair = ranks[0] == ranks[2], ranks[1] == ranks[3]
        key = (p_pair, b_pair, p_pair and b_pair and ranks[0] == ranks[1])
        acc[key] = acc.get(key, 0) + weight
        paths.setdefault(key, ranks)
    classes: dict[Key, tuple[int, AnyResult]] = {}
    for key, weight in acc.items():
        cards = [parse_card(RANKS[r] + SUITS[i]) for i, r in enumerate(paths[key])]
        # two tens complete any tableau; they are never part of the pair facts
        result = baccarat.deal([*cards, card_for_value(0, "S"), card_for_value(0, "H")])
        twin = result.player_pair and result.banker_pair and (
            result.player[0].rank == result.banker[0].rank)
        _check(key, (result.player_pair, result.banker_pair, twin))
        classes[key] = (weight, result)
    return classes, n * (n - 1) * (n - 2) * (n - 3)


def _sequences(size: int, length: int) -> Iterator[tuple[int, ...]]:
    if length == 0:
        yield ()
        return
    for head in range(size):
        for tail in _sequences(size, length - 1):
            yield (head, *tail)


# --- Triple Face: one player hand against the Banker --------------------------

# classes: values 1-9 (4 cards each), the ten (4), pictures J Q K (12)
_TF_CLASS_CARDS: list[list[Card]] = [
    [c for c in DECK if c.rank == RANKS[v - 1]] for v in range(1, 10)
] + [[c for c in DECK if c.rank == "T"], [c for c in DECK if c.is_picture]]
_TF_VALUES = list(range(1, 10)) + [0, 0]
_PICTURE = 10


@cache
def _versus_classes(decks: int) -> Classes:
    """Key (player hand strength, banker strength) over ordered pairs of disjoint hands."""
    sizes = [len(cards) for cards in _TF_CLASS_CARDS]
    hands = list(combinations_with_replacement(range(11), 3))
    acc: dict[Key, int] = {}
    paths: dict[Key, Key] = {}
    for mine in hands:
        left = sizes.copy()
        ways_mine = 1
        for c in set(mine):
            k = mine.count(c)
            ways_mine *= comb(left[c], k)
            left[c] -= k
        strength_mine = _strength(mine)
        for theirs in hands:
            ways = ways_mine
            for c in set(theirs):
                ways *= comb(left[c], theirs.count(c))
            if ways:
                key = (strength_mine, _strength(theirs))
                acc[key] = acc.get(key, 0) + ways
                paths.setdefault(key, (mine, theirs))
    classes: dict[Key, tuple[int, AnyResult]] = {}
    for key, weight in acc.items():
        my_cards, their_cards = _concrete(*paths[key])
        result = triple_face.from_hands(
            "fixed", {"player1": my_cards, "player2": my_cards, "player3": my_cards,
                      "banker": their_cards}
        )
        _check(key, (result.hands["player1"].strength, result.hands["banker"].strength))
        classes[key] = (weight, result)
    return classes, comb(52, 3) * comb(49, 3)


def _strength(hand: tuple[int, ...]) -> int:
    pictures = hand.count(_PICTURE)
    if pictures == 3:
        return 30
    return 3 * (sum(_TF_VALUES[c] for c in hand) % 10) + pictures


def _concrete(*hands: tuple[int, ...]) -> list[list[Card]]:
    """Distinct real cards for class multisets (first hand takes the first cards)."""
    used = [0] * 11
    out = []
    for hand in hands:
        cards = []
        for c in hand:
            cards.append(_TF_CLASS_CARDS[c][used[c]])
            used[c] += 1
        out.append(cards)
    return out


# --- Triple Face: one hand's own three cards ----------------------------------

@cache
def _single_classes(decks: int) -> Classes:
    """Key (Pair Plus category, three pictures) over all 3-card hands of one deck."""
    acc: dict[Key, int] = {}
    reps: dict[Key, tuple[Card, ...]] = {}
    for hand in combinations(DECK, 3):
        key = (triple_face.pair_plus(hand), all(card.is_picture for card in hand))
        acc[key] = acc.get(key, 0) + 1
        reps.setdefault(key, hand)
    classes: dict[Key, tuple[int, AnyResult]] = {}
    for key, weight in acc.items():
        cards = list(reps[key])
        held = dict.fromkeys(triple_face.HAND_NAMES, cards)
        classes[key] = (weight, triple_face.from_hands("fixed", held))
    return classes, comb(52, 3)


def _check(expected: Key, got: Key) -> None:
    if expected != got:  # the enumeration and the engine disagree: a bug, never data
        raise AssertionError(f"RTP class {expected} dealt by the engine as {got}")


_BUILDERS: dict[str, Callable[[int], Classes]] = {
    "points": _point_classes,
    "pairs": _pair_classes,
    "versus": _versus_classes,
    "single": _single_classes,
}
