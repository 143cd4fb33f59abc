"""What bet-settlement decides for one bet, as pure functions of the bet and its round: its
settlement by the rules, its refund when the round is voided, whether a correction changes
it, what a reversal takes back, and an annulment's refund. `round_book` writes its records
by these; the operator's replay checks the recorded ones against the very same functions
(docs/decisions/replay.md), so the two cannot tell a bet's story differently."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from shared.events.bet_events import (
    BetFacts,
    annul_refund_id,
    reversal_id,
    settlement_id,
)
from shared.profile import AnyProfile
from shared.rounds import AnyResult
from shared.settlement import Bet, settle

Outcome = Literal["win", "lose", "push", "void_refund"]
Amount = tuple[Outcome, int]  # a settlement's outcome and what it returns
VOID_REFUND: Literal["void_refund"] = "void_refund"


def by_rules(bet: BetFacts, result: AnyResult, profile: AnyProfile) -> Amount:
    """The bet settled by the rule engine on the round's result, under its pinned profile."""
    s = settle(Bet(bet=bet.bet, position=bet.position, stake=bet.stake), result, profile)
    return s.outcome, s.returned


def void_refund(bet: BetFacts) -> Amount:
    """A voided round's settlement of an accepted bet: the stake back."""
    return VOID_REFUND, bet.stake


def changed_by_correction(standing: tuple[str, int], corrected: tuple[str, int]) -> bool:
    """A correction changes a bet whose settlement by the corrected result differs (outcome
    or amount) from the settlement standing; one it does not change gets no record."""
    return standing != corrected


def settled_again_id(bet_id: str, correction: int) -> str:
    """The id of the bet's settlement again after the round's `correction`-th correction."""
    return settlement_id(bet_id, correction)


@dataclass(frozen=True)
class TakeBack:
    """A reversal of the settlement standing: its id, the settlement it names, the amount
    it takes back (what that settlement returned, whole)."""

    reversal_id: str
    settlement_id: str
    amount: int


def take_back(standing_id: str, returned: int) -> TakeBack:
    return TakeBack(reversal_id(standing_id), standing_id, returned)


@dataclass(frozen=True)
class Refund:
    """An annulment's refund of the stake, after the reversal: a settlement of its own id."""

    settlement_id: str
    outcome: Outcome
    returned: int


def annul_refund(bet: BetFacts) -> Refund:
    outcome, returned = void_refund(bet)
    return Refund(annul_refund_id(bet.bet_id), outcome, returned)
