"""Money: integer minor units and exact payout odds; no float ever touches an amount.

"Pays num:den" means winnings = floor(stake * num / den) and the stake comes
back too (RULES §1). The floor is the house keeping the sub-unit remainder.
"""

from __future__ import annotations

from fractions import Fraction

from pydantic import Field

from shared.models import FrozenModel


class Odds(FrozenModel):
    """Exact payout odds, winnings per unit staked: 0.95:1 is {"num": 19, "den": 20}."""


    num: int = Field(ge=0, strict=True)
    den: int = Field(gt=0, strict=True)

    @property
    def fraction(self) -> Fraction:
        return Fraction(self.num, self.den)

    def __str__(self) -> str:
        return f"{self.num}/{self.den}" if self.den != 1 else f"{self.num}:1"


def winnings(stake: int, odds: Odds) -> int:
    """floor(stake * num / den) in integer arithmetic."""
    _check_stake(stake)
    return stake * odds.num // odds.den


def returned_on_win(stake: int, odds: Odds) -> int:
    """Stake back plus winnings."""
    return stake + winnings(stake, odds)


def _check_stake(stake: int) -> None:
    if isinstance(stake, bool) or not isinstance(stake, int):
        raise TypeError(f"stake must be an integer number of minor units, got {stake!r}")
    if stake <= 0:
        raise ValueError(f"stake must be positive, got {stake}")
