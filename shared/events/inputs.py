"""`dealer.inputs`: what table devices and supervisors send, untrusted until checked.

Every input names its table, carries a unique `input_id` (a resend with the same
id is applied once) and is signed: HMAC-SHA256 with the table's key for its role
over the canonical JSON of the input without `signature` (which includes
`sent_at`, so a replayed old input is stale).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    AwareDatetime,
    Field,
    TypeAdapter,
    model_validator,
)

from shared.cards import Card
from shared.events.canonical import canonical_bytes, hmac_hex, same_digest
from shared.events.ids import InputId, RoundId, ShoeId, TableId
from shared.events.table import CorrectionReason, VoidReason
from shared.models import FrozenModel

Role = Literal["device", "supervisor"]


def _not_the_platforms(reason: VoidReason) -> VoidReason:
    if reason == VoidReason.ROUND_ABANDONED:
        raise ValueError("reason round_abandoned is the platform's own: only dealer-event's "
                         "timer voids a round with it (CROUPIER_ROUND_ABANDON_SECONDS)")
    return reason


# a reason a person may give (every VoidReason but the platform's own)
GivenVoidReason = Annotated[VoidReason, AfterValidator(_not_the_platforms)]


class InputBase(FrozenModel):

    if TYPE_CHECKING:  # each command declares its own literal `command`
        command: str
    schema_version: Literal[1] = 1
    input_id: InputId
    table_id: TableId
    sent_at: AwareDatetime
    role: Role
    signer: str = Field(min_length=1, max_length=64, description="Device or supervisor name.")
    signature: str = ""

    def signing_bytes(self) -> bytes:
        return canonical_bytes(self, exclude={"signature"})

    def signed(self, key: bytes) -> InputBase:
        return self.model_copy(update={"signature": hmac_hex(key, self.signing_bytes())})

    def signature_valid(self, key: bytes) -> bool:
        return bool(self.signature) and same_digest(self.signature,
                                                    hmac_hex(key, self.signing_bytes()))


class NewShoe(InputBase):
    command: Literal["new_shoe"] = "new_shoe"
    shoe_id: ShoeId
    profile: str


class ShoeFirstCard(InputBase):
    """The face-up first card of a new shoe (profiles with a shoe-start burn)."""

    command: Literal["shoe_first_card"] = "shoe_first_card"
    card: Card


class Burn(InputBase):
    command: Literal["burn"] = "burn"
    card: Card | None = None


class CutCard(InputBase):
    command: Literal["cut_card"] = "cut_card"


class EndShoe(InputBase):
    command: Literal["end_shoe"] = "end_shoe"
    reason: str = "shoe finished"


class OpenRound(InputBase):
    command: Literal["open_round"] = "open_round"
    round_id: RoundId
    dealer: str = Field(min_length=1, max_length=64)


class CloseBetting(InputBase):
    """Ends betting. Before the window ends only a supervisor may, with a reason (seed 002:
    players bet until the 30-second timer ends)."""

    command: Literal["close_betting"] = "close_betting"
    round_id: RoundId
    reason_text: str | None = Field(default=None, min_length=1, max_length=500,
                                    exclude_if=lambda v: v is None)


class ScanCard(InputBase):
    command: Literal["scan_card"] = "scan_card"
    round_id: RoundId
    card: Card


class VoidRound(InputBase):
    command: Literal["void_round"] = "void_round"
    round_id: RoundId
    reason_code: GivenVoidReason
    reason_text: str = Field(min_length=1, max_length=500)


class ReportMisdeal(InputBase):
    """A card dealt in the wrong order or laid in the wrong place: the profile's
    `misdeal_policy` voids the round (seed 001) or records the correction."""

    command: Literal["report_misdeal"] = "report_misdeal"
    round_id: RoundId
    reason_text: str = Field(min_length=1, max_length=500)


class ReportBurnError(InputBase):
    """A burning error in a round: the profile's `burn_error_policy` voids the hand (seed
    004 §2) or, before Player 1's second card, reshuffles and redeals it (seed 000 §1)."""

    command: Literal["report_burn_error"] = "report_burn_error"
    round_id: RoundId
    reason_text: str = Field(min_length=1, max_length=500)


class ReportTwoCards(InputBase):
    """Two or more cards came out of the shoe at once in a round: the profile's
    `two_cards_policy` voids the hand (seed 002) or keeps it, its result by the card rules,
    and ends the shoe after it (seed 004 §6)."""

    command: Literal["report_two_cards"] = "report_two_cards"
    round_id: RoundId
    reason_text: str = Field(min_length=1, max_length=500)


class AnnulRounds(InputBase):
    """Management's void of a completed round, or of the rest of a shoe: every completed
    round of that shoe from `round_id` on, and no further round of it (seeds 000 §1,
    004 §1 and §4)."""

    command: Literal["annul_rounds"] = "annul_rounds"
    round_id: RoundId
    scope: Literal["round", "rest_of_shoe"] = "round"
    reason_code: GivenVoidReason
    reason_text: str = Field(min_length=1, max_length=500)


class ExposeCard(InputBase):
    """A card exposed by accident outside the deal (while preparing, burning or betting):
    seed 004 §6 declares it the next game's burn; seed 002 replaces the shoe. A card
    exposed during the deal voids the hand instead (void_round, card_exposed: seed 004 §4)."""

    command: Literal["expose_card"] = "expose_card"
    card: Card


class CorrectRound(InputBase):
    """A supervisor corrects a completed round's cards (seed 004 §5): all of them (`cards`,
    in shoe order), or the one at `position` (0: the round's first card) with `card`."""

    command: Literal["correct_round"] = "correct_round"
    round_id: RoundId
    cards: tuple[Card, ...] | None = None
    position: int | None = Field(default=None, ge=0)
    card: Card | None = None
    reason_code: CorrectionReason
    reason_text: str = Field(min_length=1, max_length=500)

    @model_validator(mode="after")
    def _one_way(self) -> CorrectRound:
        if (self.cards is None) == (self.position is None or self.card is None):
            raise ValueError("give either cards (every card of the round) or position and "
                             "card (the one card corrected), not both, not neither")
        return self


class CloseTable(InputBase):
    """A supervisor takes the table out of play between rounds (seed 002: an operator system
    failure closes the table); a round in progress is voided instead, whose reason closes
    the table where the profile says so."""

    command: Literal["close_table"] = "close_table"
    reason_code: GivenVoidReason = VoidReason.SYSTEM_FAILURE
    reason_text: str = Field(min_length=1, max_length=500)


class ReopenTable(InputBase):
    command: Literal["reopen_table"] = "reopen_table"
    reason_text: str = Field(min_length=1, max_length=500)


DealerInput = Annotated[
    NewShoe | ShoeFirstCard | Burn | CutCard | EndShoe | OpenRound | CloseBetting | ScanCard
    | VoidRound | ReportMisdeal | ReportBurnError | AnnulRounds | CorrectRound | ExposeCard
    | CloseTable | ReopenTable | ReportTwoCards,
    Field(discriminator="command"),
]
DEALER_INPUT: TypeAdapter[DealerInput] = TypeAdapter(DealerInput)
# DealerInput's members one by one (read off the union: the list is written once)
INPUT_TYPES: tuple[type[InputBase], ...] = get_args(get_args(DealerInput)[0])
SUPERVISOR_ONLY = frozenset({"new_shoe", "end_shoe", "void_round", "report_misdeal",
                             "report_burn_error", "annul_rounds", "correct_round",
                             "close_table",
                             "reopen_table", "report_two_cards"})


def make_input(command_type: type[InputBase], *, key: bytes, sent_at: datetime,
               **fields: Any) -> InputBase:
    """A signed input, as a table device or supervisor console would send it."""
    return command_type(sent_at=sent_at, **fields).signed(key)


class TimerTick(FrozenModel):
    """dealer-event's own record on `dealer.inputs`: its timer found a table's betting window
    over or its round left hanging, and asks for the decision. Deciding it is what any
    input's decision does first (`table_machine.tick`, then `watch`), so a tick changes
    nothing that the rules, the table's state and the clock do not already say: one from
    anyone else is harmless, and a tick that finds nothing due writes nothing."""


    type: Literal["timer_tick"] = "timer_tick"
    table_id: TableId
    seq: int = Field(ge=0, description="The table's seq the timer saw (for the logs).")
