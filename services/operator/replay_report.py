"""The replay report (`replay`): what the round was, what the rule engine and the services' own
functions say it should have been, and each difference. Models and their text only."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from services.operator.replay_calls import (
    OperatorCallLine,
    UnplacedBet,
)
from services.operator.replay_difference import Difference
from shared.cards import Card
from shared.rounds import AnyResult
from shared.shoe_history import ShoeRoads


class TimelineEntry(BaseModel):
    seq: int
    at: datetime
    what: str
    detail: str


class SettlementStep(BaseModel):
    """One record of a bet's settlement history: its settlement, then for each correction
    that changes it the reversal of the settlement standing and the settlement again."""

    what: str  # "settled" or "reversed"
    record_id: str  # the settlement id, or the reversal id
    correction: int  # 0: the round's own result; n: its n-th correction
    cause: str | None  # the result (or correction's result) the record follows
    outcome: str | None  # recorded: the settlement's outcome (a reversal's: the one taken back)
    amount: int | None  # recorded: returned, or taken back
    expected_outcome: str | None
    expected_amount: int | None


class CorrectionLine(BaseModel):
    """A supervisor's correction of the completed round (RoundCorrected) and the result the
    rule engine gives its cards."""

    correction: int
    seq: int
    at: datetime
    reason_code: str
    reason_text: str
    supervisor: str
    replaced_cards: list[Card]
    cards: list[Card]
    result_id: str
    hands: dict[str, list[Card]]
    scores: dict[str, int | str]
    winner: str | dict[str, str] | None  # the rule engine's
    recorded_winner: str | dict[str, str] | None  # the corrected result's, as published


class BetLine(BaseModel):
    bet_id: str
    player_id: str
    bet: str
    position: int | str | None
    stake: int
    decision: str
    outcome: str | None
    returned: int | None
    expected_outcome: str | None
    expected_returned: int | None
    wallet: list[str]
    # a round annulled after it was settled: the settlement's reversal, then the stake refund
    reversed: int | None = None
    expected_reversed: int | None = None
    refund: int | None = None
    expected_refund: int | None = None
    # every settlement record in order (the original, then each correction's reversal and
    # settlement again), and what the wallet moved for the bet against what it should have
    history: list[SettlementStep] = []
    net: int | None = None
    expected_net: int | None = None
    # seamless mode: each call croupier made to the operator's wallet for the bet and its
    # answer (and each one its records call for that has no record: owed, or missing)
    operator_calls: list[OperatorCallLine] = []


class ReplayReport(BaseModel):
    table_id: str
    round_id: str
    player_id: str | None
    profile: str | None
    profile_version: int | None = None  # the version the round opened with: it is settled by it
    profile_digest: str | None = None
    game: str | None
    dealer: str | None
    shoe_id: str | None
    opened_at: datetime | None
    # the round's phase (shared.round_phase: betting, dealing, completed, voided, annulled),
    # or the report's own "corrected" or "unknown" (replay_story.status_of); reports made
    # before issue 32 said "complete" for completed and "open" for betting or dealing
    status: str
    chain_checked: int
    chain_anchor_seq: int | None
    chain_breaks: list[str]
    cards: list[Card]
    surplus: list[Card]
    burns: list[Card | None]
    hands: dict[str, list[Card]]
    scores: dict[str, int | str]
    winner: str | dict[str, str] | None
    void_reason: str | None
    annul_reason: str | None = None  # a management void after completion (RoundAnnulled)
    corrections: list[CorrectionLine] = []  # seed 004 §5, in order: each supersedes the last
    timeline: list[TimelineEntry]
    bets: list[BetLine]
    differences: list[Difference]
    notes: list[str]
    # the roads of the round's shoe up to this round (`replay_roads`); None: not read
    roads: ShoeRoads | None = None
    # seamless when the round has calls to the operator's wallet (wallet.operator_calls),
    # and the bets it asked the operator to debit that were never placed
    wallet_mode: str = "transfer"
    unplaced_bets: list[UnplacedBet] = []

    @property
    def verdict(self) -> str:
        return "MATCH" if not self.differences and not self.chain_breaks else "DIFFERENCES"




def winner_text(winner: str | dict[str, str] | None) -> str:
    """`banker`, or for Triple Face each player hand against the banker."""
    if winner is None:
        return "-"
    if isinstance(winner, str):
        return winner
    return ", ".join(f"{hand} {'tie' if w == 'tie' else 'wins' if w == hand else 'loses'}"
                     for hand, w in winner.items())


def hands_of(result: AnyResult | None
             ) -> tuple[dict[str, list[Card]], dict[str, int | str], str | dict[str, str] | None]:
    if result is None:
        return {}, {}, None
    if result.game == "baccarat":
        return ({"player": list(result.player), "banker": list(result.banker)},
                {"player": result.player_points, "banker": result.banker_points}, result.winner)
    return ({name: list(hand.cards) for name, hand in result.hands.items()},
            {name: hand.rank for name, hand in result.hands.items()},
            {name: winner for name, winner in result.winners.items()})
