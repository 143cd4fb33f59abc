"""Punto banco: who gets which card, the drawing tableau, and every fact a bet needs.

The cards come in the order they left the shoe (burns excluded). This module
decides, card by card, whether the round needs another one, so the live service
and the simulator run the very same tableau; cards after the round is complete
are kept as `surplus` and never change the result (RULES §3.2).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from shared.cards import Card, points

Side = Literal["player", "banker"]
Winner = Literal["player", "banker", "tie"]


def is_natural(two_card_total: int) -> bool:
    return two_card_total >= 8


def player_draws(player_total: int) -> bool:
    """Player's third card (no natural on either side): draws on 0-5, stands on 6-7."""
    return player_total <= 5


def banker_draws(banker_total: int, player_third: int | None) -> bool:
    """Banker's third card (no natural). `player_third` is the value of the player's
    third card, or None when the player stood."""
    if player_third is None:
        return banker_total <= 5
    if banker_total <= 2:
        return True
    if banker_total == 3:
        return player_third != 8
    if banker_total == 4:
        return 2 <= player_third <= 7
    if banker_total == 5:
        return 4 <= player_third <= 7
    if banker_total == 6:
        return player_third in (6, 7)
    return False


def round_length(cards: Sequence[Card]) -> int | None:
    """How many of `cards` the round uses, or None if it needs more than were given."""
    if len(cards) < 4:
        return None
    p_total, b_total = points(cards[0:4:2]), points(cards[1:4:2])
    if is_natural(p_total) or is_natural(b_total):
        return 4
    player_third: int | None = None
    used = 4
    if player_draws(p_total):
        if len(cards) < 5:
            return None
        player_third = cards[4].value
        used = 5
    if banker_draws(b_total, player_third):
        used += 1
    return used if len(cards) >= used else None


def cards_needed(cards: Sequence[Card]) -> int:
    """At least how many more cards the round needs (0: complete). Ask again after each card."""
    if len(cards) < 4:
        return 4 - len(cards)
    return 0 if round_length(cards) is not None else 1


class BaccaratResult(BaseModel):
    """The outcome of one baccarat round and every fact a bet is settled on."""

    model_config = ConfigDict(frozen=True)

    game: Literal["baccarat"] = "baccarat"
    player: tuple[Card, ...]
    banker: tuple[Card, ...]
    player_points: int
    banker_points: int
    winner: Winner
    player_natural: bool
    banker_natural: bool
    player_pair: bool
    banker_pair: bool
    margin: int
    cards_dealt: int
    surplus: tuple[Card, ...] = ()

    @property
    def hands(self) -> dict[str, tuple[Card, ...]]:
        return {"player": self.player, "banker": self.banker}

    def natural(self, side: Side) -> bool:
        return self.player_natural if side == "player" else self.banker_natural


def deal(cards: Sequence[Card]) -> BaccaratResult:
    """Assign `cards` (shoe order, burns excluded) to the hands by the tableau.
    Raises ValueError if the round cannot be finished with these cards."""
    used = round_length(cards)
    if used is None:
        raise ValueError(
            f"too few cards: {len(cards)} given, the round needs at least "
            f"{len(cards) + cards_needed(cards)}"
        )
    player = [cards[0], cards[2]]
    banker = [cards[1], cards[3]]
    if used >= 5:
        p_total = points(player)
        (player if player_draws(p_total) else banker).append(cards[4])
    if used == 6:
        banker.append(cards[5])
    return from_hands(player, banker, surplus=cards[used:])


def from_hands(
    player: Sequence[Card], banker: Sequence[Card], surplus: Sequence[Card] = ()
) -> BaccaratResult:
    """Derive the facts from two finished hands (the tableau is the caller's business)."""
    p_points, b_points = points(player), points(banker)
    winner: Winner = (
        "player" if p_points > b_points else "banker" if b_points > p_points else "tie"
    )
    return BaccaratResult(
        player=tuple(player),
        banker=tuple(banker),
        player_points=p_points,
        banker_points=b_points,
        winner=winner,
        player_natural=is_natural(points(player[:2])),
        banker_natural=is_natural(points(banker[:2])),
        player_pair=player[0].rank == player[1].rank,
        banker_pair=banker[0].rank == banker[1].rank,
        margin=abs(p_points - b_points),
        cards_dealt=len(player) + len(banker),
        surplus=tuple(surplus),
    )
