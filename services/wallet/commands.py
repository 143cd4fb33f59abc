"""Commands the wallet's account agent applies, one at a time per player.

Every change to an account goes through the private commands topic keyed by
player id, so one agent owns each balance: HTTP requests (with a `reply_id` the
web view waits on) and the bet endings forwarded from bet-settlement alike
(`ending_commands` translates the records of wallet.endings).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field, TypeAdapter

from shared.bets import Position
from shared.events.bet_events import (
    BetAccepted,
    BetRejected,
    BetSettled,
    EndingsPack,
    RoundManifest,
    SettlementReversed,
)
from shared.events.ids import BetId, RequestId, RoundId, TableId
from shared.events.operator_wallet import OperatorAnswer
from shared.models import FrozenModel

Amount = Annotated[int, Field(gt=0, strict=True, description="Minor units.")]


class _Command(FrozenModel):

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


class DoorRefusal(FrozenModel):
    """What the HTTP door found wrong with a bet (the round closed, the table unknown...):
    binding only on a bet id never placed, so a resent bet gets its first answer."""


    status: int
    code: str
    message: str


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
    door_refusal: DoorRefusal | None = None
    # the seq of the round's RoundOpened on table.events, as the door read it (BetPlaced)
    opened_seq: int | None = Field(default=None, ge=1, exclude_if=lambda v: v is None)
    # seamless mode: the player's session at the operator, sent with the debit (checked
    # there); not part of the bet
    operator_session: str | None = Field(default=None, exclude_if=lambda v: v is None)

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


class OperatorAnswered(_Command):
    """Seamless mode: what came of a call to the operator's wallet (its caller,
    `services.wallet.operator_calls`, puts it here): the ledger records it, and
    a debit's answer is the bet's."""

    type: Literal["operator_answered"] = "operator_answered"
    transaction_id: str
    answer: OperatorAnswer


Command = Annotated[CreateAccount | Deposit | Withdraw | PlaceBet | EndBet | ReverseSettlement
                    | OperatorAnswered, Field(discriminator="type")]


class Envelope(FrozenModel):

    reply_id: str | None = None
    command: Command


ENVELOPE: TypeAdapter[Envelope] = TypeAdapter(Envelope)

# every record of bets.decisions and bets.settled, told apart by its `type` alone
_Ending = BetAccepted | BetRejected | RoundManifest | BetSettled | SettlementReversed
_ENDING_RECORD: TypeAdapter[_Ending] = TypeAdapter(Annotated[_Ending,
                                                             Field(discriminator="type")])
# a record of wallet.endings: a pack of them (`services.infra.packs`), or one of them alone
# (what bet-settlement wrote there before packs)
_ENDINGS_RECORD: TypeAdapter[EndingsPack | _Ending] = TypeAdapter(
    Annotated[EndingsPack | _Ending, Field(discriminator="type")])


def ending_of(outcome: str) -> Literal["settled", "voided"]:
    """The wallet's ending of a bet-settlement settlement: a `void_refund` ends the bet
    voided (its stake refunded), any other outcome settles it (its return paid)."""
    return "voided" if outcome == "void_refund" else "settled"


def ending_command(raw: bytes) -> EndBet | ReverseSettlement | None:
    """The wallet's side of a bet-settlement record (read by its parsed type, never by
    searching its bytes): refund or pay, or nothing to do."""
    return command_of(_ENDING_RECORD.validate_json(raw))


def ending_commands(raw: bytes) -> list[tuple[BaseModel, EndBet | ReverseSettlement]]:
    """What a record of wallet.endings asks of the wallet: each ending it holds (a pack's,
    in order, or the one record's) with its command; the records that move no money are
    left out. Raises on a record that is neither a pack nor an ending."""
    record = _ENDINGS_RECORD.validate_json(raw)
    records = record.records if isinstance(record, EndingsPack) else (record,)
    return [(r, command) for r in records if (command := command_of(r)) is not None]


def command_of(record: BaseModel) -> EndBet | ReverseSettlement | None:
    """The wallet's side of a parsed bet-settlement record: refund or pay, or nothing."""
    if isinstance(record, SettlementReversed):
        return ReverseSettlement(player_id=record.player_id, bet_id=record.bet_id,
                                 reversal_id=record.reversal_id,
                                 settlement_id=record.settlement_id, amount=record.amount,
                                 table_id=record.table_id, round_id=record.round_id)
    if isinstance(record, BetSettled):
        ending = ending_of(record.outcome)
        return EndBet(player_id=record.player_id, bet_id=record.bet_id, ending=ending,
                      returned=record.returned, settlement_id=record.settlement_id,
                      table_id=record.table_id, round_id=record.round_id,
                      result_at=record.result_at, last_card_at=record.last_card_at,
                      last_of_round=record.last_of_round)
    if isinstance(record, BetRejected):
        return EndBet(player_id=record.player_id, bet_id=record.bet_id, ending="rejected",
                      returned=record.stake, table_id=record.table_id,
                      round_id=record.round_id)
    return None
