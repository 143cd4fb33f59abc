"""Settlement: (bet, round result, profile) -> outcome and the integer amount returned.

`validate_bet` is what the bet-settlement service calls when a bet arrives: it
rejects with a machine-readable `code`. `settle` is what it calls when the
result arrives. Both are pure, so a replay settles the same bet identically.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from shared.bets import TIGER_WAGERS, BetRule, Outcome, Position, resolve, rule_for
from shared.currency import amount_text
from shared.money import returned_on_win
from shared.profile import AnyProfile, CurrencyLimits, StakeLimits
from shared.rounds import AnyResult

BetErrorCode = Literal[
    "unknown_bet", "bet_not_offered", "bad_position", "below_minimum", "above_maximum",
    "wrong_game", "bad_stake", "malformed_bet", "spot_maximum", "needs_main_bet",
    "currency_not_offered",
]
BET_ERROR_CODES: tuple[BetErrorCode, ...] = get_args(BetErrorCode)  # the rule engine's codes


class BetError(ValueError):
    """A bet the table cannot take; `code` is the reason a service reports."""

    def __init__(self, code: BetErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


class Bet(BaseModel):
    """A stake on one bet id; `position` is 1, 2, 3 or "banker" for Triple Face bets, else None."""

    model_config = ConfigDict(frozen=True)

    bet: str
    position: Position | None = None
    stake: int = Field(gt=0, strict=True)


class Settlement(BaseModel):
    """`returned` = stake + winnings on a win, the stake on a push, 0 on a loss."""

    model_config = ConfigDict(frozen=True)

    outcome: Outcome
    returned: int
    line: str  # the paytable line that applied ("win", "win_on_6", "margin_9", ...)


def check_bet(bet: Bet, profile: AnyProfile) -> BetRule:
    """The rule for `bet` on this table, or BetError (unknown id, not offered, bad position)."""
    rule = rule_for(profile.game, bet.bet)
    if rule is None:
        raise BetError(
            "unknown_bet",
            f"unknown bet {bet.bet!r} for a {profile.game} table; "
            f"offered by {profile.name!r}: {', '.join(profile.bets)}",
        )
    if bet.bet not in profile.bets:
        raise BetError(
            "bet_not_offered",
            f"bet {bet.bet!r} is not offered by table profile {profile.name!r}; "
            f"offered: {', '.join(profile.bets)}",
        )
    if rule.positions and bet.position not in rule.positions:
        allowed = ", ".join(str(p) for p in rule.positions)
        problem = "needs a position" if bet.position is None else (
            f"cannot take position {bet.position!r}")
        raise BetError(
            "bad_position", f"bet {bet.bet!r} {problem}: expected one of {allowed}"
        )
    if not rule.positions and bet.position is not None:
        raise BetError(
            "bad_position", f"bet {bet.bet!r} takes no position, got {bet.position!r}"
        )
    return rule


def table_limits(profile: AnyProfile, currency: str) -> CurrencyLimits:
    """The table's limits and chips for a player in `currency`, or BetError
    `currency_not_offered` naming the currency and the ones the table offers."""
    limits = profile.limits_in(currency)
    if limits is None:
        raise BetError(
            "currency_not_offered",
            f"table profile {profile.name!r} does not offer {currency}; offered: "
            f"{', '.join(profile.offered_currencies() or ())}",
        )
    return limits


def stake_limits(bet: Bet, profile: AnyProfile, currency: str) -> StakeLimits:
    """The limits of an offered `bet` (after `check_bet`) for a player in `currency`."""
    return table_limits(profile, currency).bets[bet.bet]


def validate_bet(bet: Bet, profile: AnyProfile, currency: str) -> None:
    """Acceptance check: offered, right position, the player's currency offered, stake within
    the table's limits in that currency."""
    _checked_limits(bet, profile, currency)


def _checked_limits(bet: Bet, profile: AnyProfile, currency: str) -> StakeLimits:
    """`validate_bet`'s checks, and the limits it checked against (looked up once)."""
    check_bet(bet, profile)
    spec = stake_limits(bet, profile, currency)
    if bet.stake < spec.min_stake:
        raise BetError(
            "below_minimum",
            f"stake {amount_text(bet.stake, currency)} is below the {bet.bet!r} minimum of "
            f"{amount_text(spec.min_stake, currency)}",
        )
    if bet.stake > spec.max_stake:
        raise BetError(
            "above_maximum",
            f"stake {amount_text(bet.stake, currency)} is above the {bet.bet!r} maximum of "
            f"{amount_text(spec.max_stake, currency)}",
        )
    return spec


def needs_main_bet(bet: str, profile: AnyProfile) -> bool:
    """Is `bet` a Tiger wager that this table takes only with a main bet (seed 002)?"""
    return bet in TIGER_WAGERS and getattr(profile, "tiger_needs_main_bet", False)


def accept_bet(bet: Bet, profile: AnyProfile, currency: str, spot_before: int,
               has_main_bet: bool) -> None:
    """A bet's acceptance, the one function that decides it (bet-settlement's binding
    decision): offered, at a right position, in a currency the table takes, within its
    limits in that currency (`validate_bet`), then the round's rules with the table maximum
    and the Tiger rule the round's profile gives (`check_round_rules`). Raises `BetError`
    naming the first rule it breaks. The wallet's door asks the same two functions, apart:
    `validate_bet` where it reads the table's profile, `check_round_rules` in the pure
    handler that holds the player's spot totals (the rules travel in its command)."""
    limits = _checked_limits(bet, profile, currency)
    check_round_rules(bet, currency, limits.max_stake, spot_before,
                      needs_main_bet(bet.bet, profile), has_main_bet)


def check_round_rules(bet: Bet, currency: str, spot_max: int | None, spot_before: int,
                      needs_main: bool, has_main_bet: bool) -> None:
    """The round's rules of acceptance, the one home of both checks (bet-settlement's
    binding decision and the wallet's door, which carries the two rules in its command).
    Seed 002's table maximum applies to the player's total on one spot (bet id and
    position) in one round ("hingga nilai taruhan maksimal di meja itu"): `spot_before` is
    what the player already has there (`spot_max` None: no maximum known). A Tiger wager
    that `needs_main` is taken only from a player with a Player, Banker or Tie bet in the
    round (`has_main_bet`). Amounts are in the player's `currency`."""
    if spot_max is not None and spot_before + bet.stake > spot_max:
        raise BetError(
            "spot_maximum",
            f"{amount_text(spot_before, currency)} already on {bet.bet!r}"
            + (f" position {bet.position!r}" if bet.position is not None else "")
            + f" this round: {amount_text(bet.stake, currency)} more would pass the table maximum of "
              f"{amount_text(spot_max, currency)} per spot",
        )
    if needs_main and not has_main_bet:
        raise BetError(
            "needs_main_bet",
            f"{bet.bet!r} is taken at this table only from a player with a Player, Banker "
            "or Tie bet in the round (seed 002, Tiger Baccarat)",
        )


def settle(
    bet: Bet, result: AnyResult, profile: AnyProfile
) -> Settlement:
    """Settle an accepted bet. Limits are not re-checked (they applied at acceptance)."""
    if result.game != profile.game:
        raise BetError(
            "wrong_game", f"a {result.game} result cannot settle a bet on a {profile.game} table"
        )
    rule = check_bet(bet, profile)
    outcome, line = resolve(rule, result, bet.position, profile)
    if outcome == "win":
        returned = returned_on_win(bet.stake, profile.bets[bet.bet].pays[line])
    else:
        returned = bet.stake if outcome == "push" else 0
    return Settlement(outcome=outcome, returned=returned, line=line)
