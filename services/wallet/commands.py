"""Commands the wallet's account agent applies, one at a time per player.

Every change to an account goes through the private commands topic keyed by
player id, so one agent owns each balance: HTTP requests (with a `reply_id` the
web view waits on) and the bet endings forwarded from bet-settlement alike.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from shared.events.bet_events import Position
from shared.events.ids import BetId, RequestId, RoundId, TableId

Amount = Annotated[int, Field(gt=0, strict=True, description="Minor units.")]


class _Command(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    player_id: str


class CreateAccount(_Command):
    type: Literal["create_account"] = "create_account"
    currency: str


class Deposit(_Command):
    type: Literal["deposit"] = "deposit"
    request_id: RequestId
    amount: Amount


class Withdraw(_Command):
    type: Literal["withdrawal"] = "withdrawal"
    request_id: RequestId
    amount: Amount


class PlaceBet(_Command):
    type: Literal["place_bet"] = "place_bet"
    bet_id: BetId
    table_id: TableId
    round_id: RoundId
    bet: str
    position: Position | None = None
    stake: Amount
    # the round's rules the door read from the table's profile (not part of the bet)
    spot_max: int | None = Field(default=None, description="Seed 002: the table maximum on "
                                                           "one spot per round.")
    needs_main_bet: bool = Field(default=False, description="A Tiger wager at a table that "
                                                            "takes it only with a main bet.")

    def fingerprint(self) -> str:
        return f"{self.table_id}|{self.round_id}|{self.bet}|{self.position}|{self.stake}"


class EndBet(_Command):
    """A bet's end as bet-settlement decided it: rejected, settled or voided."""

    type: Literal["end_bet"] = "end_bet"
    bet_id: str
    ending: Literal["rejected", "settled", "voided"]
    returned: int = Field(ge=0)
    settlement_id: str | None = None
    table_id: str
    round_id: str
    # timing of the round, for the latency histograms (BetSettled's fields)
    result_at: datetime | None = None
    last_card_at: datetime | None = None
    last_of_round: bool = False


class ReverseSettlement(_Command):
    """A management void took a settled bet's return back (SettlementReversed); its refund
    (an EndBet `voided`) follows."""

    type: Literal["reverse_settlement"] = "reverse_settlement"
    bet_id: str
    reversal_id: str
    settlement_id: str
    amount: int = Field(ge=0)
    table_id: str
    round_id: str


Command = Annotated[CreateAccount | Deposit | Withdraw | PlaceBet | EndBet | ReverseSettlement,
                    Field(discriminator="type")]


class Envelope(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    reply_id: str | None = None
    command: Command


ENVELOPE: TypeAdapter[Envelope] = TypeAdapter(Envelope)
