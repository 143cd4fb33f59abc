"""Playing cards: the one place that knows how a card is written and what it is worth.

Every other module (shoes, games, settlement, the CLI, the services) gets its
cards from `parse_card` / `parse_cards`, so a card token is validated once, at
the edge, and the rest of the platform only ever sees canonical `Card` values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    ModelWrapValidatorHandler,
    model_serializer,
    model_validator,
)

RANKS = "A23456789TJQK"
SUITS = "SHDC"
PICTURES = frozenset("JQK")


class CardError(ValueError):
    """A card token (or list of tokens) that is not a card."""


class Card(BaseModel):
    """One card, e.g. `TH` (ten of hearts). Serialises as its two-character text."""

    model_config = ConfigDict(frozen=True)

    rank: str
    suit: str

    @model_validator(mode="wrap")
    @classmethod
    def _from_text(cls, data: Any, handler: ModelWrapValidatorHandler[Card]) -> Card:
        # Accept "TH" / "10H" wherever a Card is expected (JSON events, profiles): the
        # canonical instance itself (frozen, so shared; built once, not validated again)
        if isinstance(data, str):
            return parse_card(data)
        if isinstance(data, dict):
            rank, suit = data.get("rank"), data.get("suit")
            if not (isinstance(rank, str) and rank in RANKS and isinstance(suit, str)
                    and len(suit) == 1 and suit in SUITS):
                raise CardError(
                    f"bad card {data!r}: rank must be one of {RANKS}, suit one of {SUITS}"
                )
        return handler(data)

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> dict[str, Any]:
        # On the wire a card is its text, in both directions.
        return {
            "type": "string",
            "pattern": "^([A2-9TJQK]|10)[SHDC]$",
            "description": "A card: rank A 2-9 T J Q K (10 accepted) and suit S H D C, e.g. 'TH'.",
            "examples": ["TH", "QS"],
        }

    @model_serializer(mode="plain")
    def _to_text(self) -> str:
        return self.rank + self.suit

    def __str__(self) -> str:
        return self.rank + self.suit

    def __repr__(self) -> str:
        return f"Card({self.rank + self.suit!r})"

    @property
    def value(self) -> int:
        """Baccarat point value: A=1, 2-9 face value, 10 J Q K = 0."""
        return _VALUES[self.rank]

    @property
    def is_picture(self) -> bool:
        """J, Q and K only; the ten is worth 0 but is not a picture."""
        return self.rank in PICTURES

    @property
    def order(self) -> int:
        """Position in A..K (A=1, K=13), for straights."""
        return RANKS.index(self.rank) + 1


_VALUES = {rank: (i + 1) % 10 if i < 9 else 0 for i, rank in enumerate(RANKS)}

# The 52 canonical cards, built once; parsing returns these shared instances.
_CANONICAL: dict[str, Card] = {
    r + s: Card.model_construct(rank=r, suit=s) for s in SUITS for r in RANKS
}
DECK: tuple[Card, ...] = tuple(_CANONICAL.values())


def parse_card(token: str) -> Card:
    """`TH`, `10H`, `th` -> Card('TH'); anything else raises CardError naming the token."""
    if not isinstance(token, str):
        raise CardError(f"bad card token {token!r}: expected text such as 'TH' or '10H'")
    text = token.strip().upper()
    if text.startswith("10"):
        text = "T" + text[2:]
    card = _CANONICAL.get(text)
    if card is None:
        raise CardError(
            f"bad card token {token!r}: expected a rank (A 2-9 T/10 J Q K) "
            f"followed by a suit (S H D C), e.g. 'TH' or 'QS'"
        )
    return card


def parse_cards(text: str) -> list[Card]:
    """Comma-separated tokens, `"TH,10H,QS"` -> three cards. An empty token is an error."""
    tokens = text.split(",")
    cards = []
    for position, token in enumerate(tokens, start=1):
        if not token.strip():
            raise CardError(f"empty card token at position {position} in {text!r}")
        cards.append(parse_card(token))
    return cards


def points(cards: Sequence[Card]) -> int:
    """A hand's points: the sum of the card values modulo 10 (`4+2+6 = 2`)."""
    return sum(card.value for card in cards) % 10


def card_for_value(value: int, suit: str = "S") -> Card:
    """A representative card worth `value` points (0 -> the ten); used by enumerations."""
    return _CANONICAL[("T" if value == 0 else RANKS[value - 1]) + suit]
