"""Triple Face (Three Pictures / 3 Face Baccarat): dealing, the 31-rank ladder, Pair Plus.

The order of the cards out of the shoe is authoritative (RULES §4.1); the
dealing procedure only decides which hand each card belongs to. That is why a
result is a function of (procedure, cards) alone, and why a wrongly laid card
never changes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from shared.cards import Card, points

Procedure = Literal["fixed", "first_card"]
HandName = Literal["player1", "player2", "player3", "banker"]
HAND_NAMES: tuple[HandName, ...] = ("player1", "player2", "player3", "banker")
PLAYER_HANDS: tuple[HandName, ...] = HAND_NAMES[:3]
PairPlus = Literal["straight_flush", "three_of_a_kind", "straight", "flush", "pair", "nothing"]
CARDS_PER_HAND = 3
ROUND_CARDS = CARDS_PER_HAND * len(HAND_NAMES)

# first_card procedure: the revealed card's rank chooses who gets the first dealt card.
START_BY_RANK: dict[str, HandName] = {
    **dict.fromkeys("A59K", "banker"),
    **dict.fromkeys("26T", "player1"),
    **dict.fromkeys("37J", "player2"),
    **dict.fromkeys("48Q", "player3"),
}


class HandRank(BaseModel):
    """A hand's place on the ladder: `3P`, then points 9..0, within points 2P > P > none."""

    model_config = ConfigDict(frozen=True)

    points: int
    pictures: int

    @property
    def label(self) -> str:
        if self.pictures == 3:
            return "3P"
        prefix = {0: "", 1: "P", 2: "2P"}[self.pictures]
        return f"{prefix}{self.points}"

    @property
    def strength(self) -> int:
        """30 for 3P down to 0 for plain 0; equal strength is a tie."""
        return 30 if self.pictures == 3 else 3 * self.points + self.pictures


def hand_rank(cards: Sequence[Card]) -> HandRank:
    return HandRank(points=points(cards), pictures=sum(card.is_picture for card in cards))


def pair_plus(cards: Sequence[Card]) -> PairPlus:
    """The best Pair Plus category of three cards; the ace plays high or low (no K-A-2)."""
    orders = sorted(card.order for card in cards)
    distinct = len(set(orders))
    flush = len({card.suit for card in cards}) == 1
    straight = distinct == 3 and (orders[2] - orders[0] == 2 or orders == [1, 12, 13])
    if straight and flush:
        return "straight_flush"
    if distinct == 1:
        return "three_of_a_kind"
    if straight:
        return "straight"
    if flush:
        return "flush"
    if distinct == 2:
        return "pair"
    return "nothing"


class TripleFaceHand(BaseModel):
    model_config = ConfigDict(frozen=True)

    cards: tuple[Card, ...]
    rank: str
    points: int
    pictures: int
    strength: int
    pair_plus: PairPlus


class TripleFaceResult(BaseModel):
    """One Triple Face round: four hands, their ranks, and each player hand against the Banker."""

    model_config = ConfigDict(frozen=True)

    game: Literal["triple_face"] = "triple_face"
    procedure: Procedure
    first_card: Card | None = None
    hands: dict[HandName, TripleFaceHand]
    # per player hand: the winning hand's name, or "tie"
    winners: dict[HandName, str]
    cards_dealt: int
    surplus: tuple[Card, ...] = ()


def round_cards(procedure: Procedure) -> int:
    """Cards a round uses, burns excluded (the revealed first card included)."""
    return ROUND_CARDS + (1 if procedure == "first_card" else 0)


def cards_needed(procedure: Procedure, cards: Sequence[Card]) -> int:
    return max(0, round_cards(procedure) - len(cards))


def dealing_order(procedure: Procedure, first_card: Card | None = None) -> list[HandName]:
    """The hand receiving each of the 12 dealt cards, in shoe order."""
    if procedure == "fixed":
        start = 0
    elif first_card is None:
        raise ValueError(f"the {procedure} procedure starts from the revealed first card")
    else:
        start = HAND_NAMES.index(START_BY_RANK[first_card.rank])
    return [HAND_NAMES[(start + i) % 4] for i in range(ROUND_CARDS)]


def deal(procedure: Procedure, cards: Sequence[Card]) -> TripleFaceResult:
    """Assign `cards` (shoe order, burns excluded; for `first_card` the revealed card
    first) to the four hands. Raises ValueError when there are too few."""
    needed = round_cards(procedure)
    if len(cards) < needed:
        raise ValueError(
            f"too few cards: {len(cards)} given, a {procedure} round needs {needed}"
        )
    first_card = cards[0] if procedure == "first_card" else None
    dealt = cards[needed - ROUND_CARDS : needed]
    held: dict[HandName, list[Card]] = {name: [] for name in HAND_NAMES}
    for name, card in zip(dealing_order(procedure, first_card), dealt, strict=True):
        held[name].append(card)
    return from_hands(procedure, held, first_card=first_card, surplus=cards[needed:])


def from_hands(
    procedure: Procedure,
    held: Mapping[HandName, Sequence[Card]],
    first_card: Card | None = None,
    surplus: Sequence[Card] = (),
) -> TripleFaceResult:
    """Derive ranks, Pair Plus categories and winners from four finished hands."""
    hands = {name: _hand(held[name]) for name in HAND_NAMES}
    banker = hands["banker"].strength
    winners: dict[HandName, str] = {}
    for name in PLAYER_HANDS:
        mine = hands[name].strength
        winners[name] = name if mine > banker else "banker" if banker > mine else "tie"
    return TripleFaceResult(
        procedure=procedure,
        first_card=first_card,
        hands=hands,
        winners=winners,
        cards_dealt=sum(len(hand.cards) for hand in hands.values()),
        surplus=tuple(surplus),
    )


def _hand(cards: Sequence[Card]) -> TripleFaceHand:
    rank = hand_rank(cards)
    return TripleFaceHand(
        cards=tuple(cards),
        rank=rank.label,
        points=rank.points,
        pictures=rank.pictures,
        strength=rank.strength,
        pair_plus=pair_plus(cards),
    )
