"""The game-agnostic door: cards of one round in shoe order -> the round's result.

Services never branch on the game: they hand a profile and the cards seen so
far to `cards_needed` (is the round complete?) and then to `evaluate_round`.
Cards that cannot belong to one round of this table (more copies of a card
than the shoe holds, too few to finish) are refused with a `RoundError`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Annotated

from pydantic import Field, TypeAdapter

from shared import baccarat, triple_face
from shared.baccarat import BaccaratResult
from shared.cards import Card
from shared.profile import AnyProfile, BaccaratProfile
from shared.triple_face import TripleFaceResult

AnyResult = BaccaratResult | TripleFaceResult  # a round result of either game
RoundResult = Annotated[AnyResult, Field(discriminator="game")]
ROUND_RESULT: TypeAdapter[AnyResult] = TypeAdapter(RoundResult)


class RoundError(ValueError):
    """Cards that cannot make one round of this table."""


def cards_needed(profile: AnyProfile, cards: Sequence[Card]) -> int:
    """At least how many more cards the round needs; 0 means complete, and any later
    card is surplus. For `first_card` Triple Face the revealed card counts."""
    if isinstance(profile, BaccaratProfile):
        return baccarat.cards_needed(cards)
    return triple_face.cards_needed(profile.procedure, cards)


def is_complete(profile: AnyProfile, cards: Sequence[Card]) -> bool:
    return cards_needed(profile, cards) == 0


def evaluate_round(
    profile: AnyProfile, cards: Sequence[Card]
) -> AnyResult:
    """The result of one round from its cards in shoe order (burns excluded)."""
    check_composition(profile, cards)
    needed = cards_needed(profile, cards)
    if needed:
        raise RoundError(
            f"too few cards: {len(cards)} given, the round is not complete "
            f"(needs at least {needed} more)"
        )
    if isinstance(profile, BaccaratProfile):
        return baccarat.deal(cards)
    return triple_face.deal(profile.procedure, cards)


def check_composition(profile: AnyProfile, cards: Sequence[Card]) -> None:
    """Refuse more copies of a card than the table's shoe holds."""
    for card, count in Counter(cards).items():
        if count > profile.decks:
            where = "a one-deck game" if profile.decks == 1 else f"a shoe of {profile.decks} decks"
            raise RoundError(f"duplicate card {card}: {count} copies in {where}")

