"""A shoe of N decks that always knows exactly which cards it still holds.

Two paths use it. Simulation shuffles with a seeded `random.Random` and draws.
Live play never draws: the physical card is scanned and `remove(card)` refuses
a card the shoe does not hold, which is how a double scan or a foreign card is
caught. Randomness is always handed in (`shuffle(rng)`): the shoe owns none.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import MutableMapping
from typing import Any, Protocol, TypeVar

from shared.cards import DECK, Card


class ShoeError(ValueError):
    """A shoe operation that cannot happen (empty shoe, card not in the shoe)."""


class Shuffler(Protocol):
    """Anything with `shuffle(list)`: `random.Random(seed)` or `random.SystemRandom()`."""

    def shuffle(self, x: list[Any], /) -> None: ...


K = TypeVar("K")


def full_composition(decks: int) -> Counter[Card]:
    """What a fresh shoe of `decks` decks holds: every card of the deck `decks` times."""
    return Counter({card: decks for card in DECK})


def take_one(composition: MutableMapping[K, int], card: K) -> None:
    """One `card` left the shoe whose remaining cards are `composition` (a card it no longer
    holds is dropped from it, never counted below zero)."""
    composition[card] = composition.get(card, 0) - 1
    if composition[card] <= 0:
        del composition[card]


def start_burn_count(first_card: Card) -> int:
    """Cards burned after the shoe's first card: its value, 10 J Q K counting 10 (seed 004)."""
    return first_card.value or 10


class Shoe:
    """N decks, their remaining composition, an optional shuffled order and a cut card."""

    def __init__(self, decks: int, cut_card_from_end: int | None = None) -> None:
        if decks < 1:
            raise ShoeError(f"a shoe needs at least one deck, got {decks}")
        self.decks = decks
        self.size = 52 * decks
        if cut_card_from_end is not None and not 0 <= cut_card_from_end < self.size:
            raise ShoeError(
                f"cut card {cut_card_from_end} cards from the end does not fit a "
                f"{self.size}-card shoe"
            )
        self.cut_card_from_end = cut_card_from_end
        self._remaining = full_composition(decks)
        self._order: list[Card] | None = None  # next card last, so draw() is a pop()
        self.dealt = 0

    @property
    def remaining(self) -> Counter[Card]:
        """A copy of the composition still in the shoe."""
        return Counter(self._remaining)

    def __len__(self) -> int:
        return self.size - self.dealt

    def holds(self, card: Card) -> bool:
        return self._remaining[card] > 0

    @property
    def cut_card_out(self) -> bool:
        """True once the dealt cards have reached the cut card."""
        if self.cut_card_from_end is None:
            return False
        return len(self) <= self.cut_card_from_end

    def shuffle(self, rng: Shuffler) -> None:
        """Put the remaining cards in an order chosen by `rng` (canonical order first,
        so the same seed always gives the same shoe)."""
        order = sorted(self._remaining.elements(), key=_canonical_index.__getitem__)
        rng.shuffle(order)
        self._order = order

    def draw(self) -> Card:
        """The next card of a shuffled shoe."""
        if self._order is None:
            raise ShoeError("the shoe has not been shuffled: call shuffle(rng) before draw()")
        if not self._order:
            raise ShoeError("the shoe is empty")
        card = self._order.pop()
        self._take(card)
        return card

    def remove(self, card: Card) -> None:
        """Live path: the scanned `card` left the shoe. Refuses a card the shoe does not hold."""
        if not self.holds(card):
            raise ShoeError(
                f"card {card} is not in the shoe: all {self.decks} of it already dealt"
            )
        if self._order is not None:
            self._order.remove(card)
        self._take(card)

    def burn(self, n: int) -> list[Card]:
        """Draw and return `n` burned cards."""
        return [self.draw() for _ in range(n)]

    def start_burn(self) -> list[Card]:
        """Shoe start (seed 004): turn the first card and burn as many more as its value."""
        first = self.draw()
        return [first, *self.burn(start_burn_count(first))]

    def _take(self, card: Card) -> None:
        take_one(self._remaining, card)
        self.dealt += 1


_canonical_index = {card: i for i, card in enumerate(DECK)}
