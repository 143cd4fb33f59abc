"""`table.events`: the facts dealer-event accepted, one hash chain per table.

Each event carries the per-table `seq` and the hash of the previous event; its
own `hash` is SHA-256 over its canonical JSON without the `hash` field. Any
change, drop or swap of an event breaks the chain at a `seq` one can name. The chain
has no secret, so dealer-event also signs each event: `auth` is an HMAC of its hash under
the table-events key, outside the hash (shared/events/event_auth.py verifies it).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

from pydantic import AwareDatetime, Field, TypeAdapter

from shared.cards import Card
from shared.events.canonical import canonical_bytes, hmac_hex, sha256_hex
from shared.events.ids import RoundId, ShoeId, TableId
from shared.events.sources import InputPosition
from shared.models import FrozenModel


class VoidReason(StrEnum):
    """Why a round was voided or annulled (RULES §5; docs/decisions/procedures.md)."""

    CARD_DROPPED = "card_dropped"
    CARD_EXPOSED = "card_exposed"
    TWO_CARDS_DEALT = "two_cards_dealt"
    MISDEAL = "misdeal"
    SHUFFLER_STUCK = "shuffler_stuck"
    SYSTEM_FAILURE = "system_failure"
    CUT_CARD_IN_BURN = "cut_card_in_burn"  # seed 004 §3: the round is not started
    BURN_ERROR = "burn_error"  # seeds 000 §1, 004 §2
    MANAGEMENT_DECISION = "management_decision"  # seeds 000 §1, 004 §1: after review
    # the platform's own decision: no input for CROUPIER_ROUND_ABANDON_SECONDS (an
    # interrupted game's defined outcome; docs/decisions/abandoned-rounds.md). No input may
    # name it: only dealer-event's timer decides it.
    ROUND_ABANDONED = "round_abandoned"
    OTHER = "other"


class CorrectionReason(StrEnum):
    """Why a completed round's cards were corrected (seed 004 §5: management may void *or
    correct* the result of a wrong hand; docs/decisions/corrections.md)."""

    MIS_SCAN = "mis_scan"  # the scanner read a card wrong: the video shows the true card
    MANUAL_ENTRY = "manual_entry"  # a card keyed in by hand was keyed wrong
    # a round completed before the dispute window (24 h) opened: a code of its own
    LATE_CORRECTION = "late_correction"


def _absent(value: object) -> bool:
    return value is None


class TableEventBase(FrozenModel):

    if TYPE_CHECKING:  # each event type declares its own literal `type`
        type: str
    schema_version: Literal[1] = 1
    event_id: str
    table_id: TableId
    seq: int = Field(ge=1)
    occurred_at: AwareDatetime
    input_id: str | None = Field(default=None, description="The dealer input that caused it.")
    # absent in older records (and on the timer's events): left out of the hash when absent,
    # so their hashes still hold; part of the hash (so of `auth`) when present
    input_ref: InputPosition | None = Field(
        default=None, exclude_if=_absent,
        description="The dealer.inputs record whose decision wrote this event; absent on the "
                    "betting timer's events and in records written before it existed.")
    prev_hash: str = Field(min_length=64, max_length=64)
    hash: str = Field(min_length=64, max_length=64)
    # dealer-event's HMAC-SHA256 over `hash` under the table-events key
    # (shared/events/event_auth.py); not part of the hash, absent in older records
    auth: str | None = Field(
        default=None, min_length=64, max_length=64, pattern=r"^[0-9a-f]{64}$",
        exclude_if=_absent,
        description="HMAC-SHA256 of `hash` under dealer-event's table-events key; absent "
                    "in records written before events were authenticated.")

    def computed_hash(self) -> str:
        return sha256_hex(canonical_bytes(self, exclude={"hash", "auth"}))


class ShoeStarted(TableEventBase):
    type: Literal["shoe_started"] = "shoe_started"
    shoe_id: ShoeId
    profile: str
    decks: int = Field(ge=1)


class ShoeStartBurned(TableEventBase):
    """Seed 004: the first card is shown and burned with as many cards as its value."""

    type: Literal["shoe_start_burned"] = "shoe_start_burned"
    shoe_id: ShoeId
    first_card: Card
    burn_count: int = Field(ge=1, le=10, description="Further cards burned face down.")


class CardBurned(TableEventBase):
    type: Literal["card_burned"] = "card_burned"
    shoe_id: ShoeId
    round_id: RoundId | None = None
    card: Card | None = Field(default=None, description="Known only when the burn was scanned.")
    shoe_position: int = Field(ge=0)
    # seed 004 §6: a card exposed by accident outside the deal is the next game's burn
    exposed: Literal[True] | None = Field(
        default=None, exclude_if=_absent,
        description="True: a card exposed by accident outside the deal, declared a burn of "
                    "the next game (seed 004 §6); absent for a burn the dealer made.")


class CutCardReached(TableEventBase):
    """The yellow card came out: the round under way is the last of the shoe."""

    type: Literal["cut_card_reached"] = "cut_card_reached"
    shoe_id: ShoeId
    round_id: RoundId | None = None


class ShoeEnded(TableEventBase):
    type: Literal["shoe_ended"] = "shoe_ended"
    shoe_id: ShoeId
    reason: str


class RoundOpened(TableEventBase):
    type: Literal["round_opened"] = "round_opened"
    shoe_id: ShoeId
    round_id: RoundId
    round_number: int = Field(ge=1, description="Position of the round in its shoe.")
    dealer: str = Field(min_length=1, max_length=64)
    profile: str
    betting_closes_at: AwareDatetime
    # absent in older records: left out of the hash when absent, so their hashes still hold
    profile_version: int | None = Field(
        default=None, ge=1, exclude_if=_absent,
        description="The profile's version the round is played under; absent in older "
                    "records (version 1).")
    profile_digest: str | None = Field(
        default=None, min_length=64, max_length=64, exclude_if=_absent,
        description="SHA-256 of that version's canonical JSON; absent in older records.")


class BettingClosed(TableEventBase):
    """The betting window ended: by the timer, by the dealer after it (the timer closes
    first), or early by a supervisor with a reason (seed 002's 30-second timer)."""

    type: Literal["betting_closed"] = "betting_closed"
    round_id: RoundId
    reason: Literal["timer", "dealer", "supervisor"]
    # only on a supervisor's early close; absent fields are left out of the hash
    supervisor: str | None = Field(default=None, exclude_if=_absent)
    reason_text: str | None = Field(default=None, min_length=1, max_length=500,
                                    exclude_if=_absent)


class CardDealt(TableEventBase):
    type: Literal["card_dealt"] = "card_dealt"
    round_id: RoundId
    card: Card
    shoe_position: int = Field(ge=0)
    round_position: int = Field(ge=0, description="Index among this round's cards, from 0.")


class SurplusCardRecorded(TableEventBase):
    """A card dealt after the round was complete: recorded, never used (RULES §3.2)."""

    type: Literal["surplus_card_recorded"] = "surplus_card_recorded"
    round_id: RoundId
    card: Card
    shoe_position: int = Field(ge=0)


class RoundCompleted(TableEventBase):
    type: Literal["round_completed"] = "round_completed"
    round_id: RoundId
    cards: tuple[Card, ...]
    # absent in records written before the index of corrections (and left out of the hash
    # then, so their hashes still hold): a replay then looks for the round's corrections
    # in table.events after it, as it did before (docs/decisions/replay.md)
    corrections_indexed: bool | None = Field(
        default=None, exclude_if=_absent,
        description="True: dealer-event puts every later `round_corrected` of this round on "
                    "`table.corrections` too, so a replay finds them there.")


class RoundVoided(TableEventBase):
    type: Literal["round_voided"] = "round_voided"
    round_id: RoundId
    reason_code: VoidReason
    reason_text: str = Field(min_length=1, max_length=500)
    supervisor: str


class RoundStalled(TableEventBase):
    """A round in progress had no input for CROUPIER_ROUND_STALL_SECONDS: a significant
    event for the floor (the device may be down, the dealer gone), recorded once per round.
    Nothing about the round changes; if no input comes before CROUPIER_ROUND_ABANDON_SECONDS
    the platform voids it (`round_abandoned`)."""

    type: Literal["round_stalled"] = "round_stalled"
    round_id: RoundId
    last_input_at: AwareDatetime = Field(description="When the round's last input was "
                                                     "decided (its event's occurred_at).")
    quiet_seconds: int = Field(ge=0, description="How long no input had come, as the "
                                                 "deciding worker measured it.")


class RoundRedealt(TableEventBase):
    """Seed 000 §1: a burning error found before Player 1's second card. The round's cards
    so far are set aside, the deck is reshuffled and the same round is dealt again (burns
    first), its bets intact."""

    type: Literal["round_redealt"] = "round_redealt"
    round_id: RoundId
    set_aside: tuple[Card, ...]
    reason_text: str = Field(min_length=1, max_length=500)
    supervisor: str


class MisdealCorrected(TableEventBase):
    """A card laid in the wrong place, corrected to the position the system shows (seeds
    000 §5, 002, 004 §5): the cards' order out of the shoe already decides the hands, so
    the result is unchanged; the correction is recorded."""

    type: Literal["misdeal_corrected"] = "misdeal_corrected"
    round_id: RoundId
    reason_text: str = Field(min_length=1, max_length=500)
    supervisor: str


class TwoCardsDrawn(TableEventBase):
    """Two or more cards came out of the shoe at once, at a table whose sheet keeps the hand
    (seed 004 §6: "hasil dari kesalahan pada hand akan tergantung pada peraturan kartu
    permainan and shoe ... akan di batalkan"). The cards count in the order they left the
    shoe, the round completes by the card rules and is settled on its result; the shoe is
    cancelled: `shoe_ended` follows the round's end."""

    type: Literal["two_cards_drawn"] = "two_cards_drawn"
    round_id: RoundId
    reason_text: str = Field(min_length=1, max_length=500)
    supervisor: str


class TableClosed(TableEventBase):
    """The table is out of play (seed 002: an operator system failure) until a supervisor
    reopens it."""

    type: Literal["table_closed"] = "table_closed"
    reason_code: VoidReason
    reason_text: str = Field(min_length=1, max_length=500)
    supervisor: str


class TableReopened(TableEventBase):
    type: Literal["table_reopened"] = "table_reopened"
    reason_text: str = Field(min_length=1, max_length=500)
    supervisor: str


class RoundCorrected(TableEventBase):
    """A supervisor corrected a completed round's cards (seed 004 §5, "membatalkan atau
    mengoreksi hasil dari hand yang salah"). The log is never edited: this event supersedes
    the round's result; game-evaluation publishes the corrected result, naming the one it
    replaces, and bet-settlement reverses and settles again every bet whose amount changes.
    It carries every fact evaluation needs, so the round need not be read again."""

    type: Literal["round_corrected"] = "round_corrected"
    round_id: RoundId
    shoe_id: ShoeId
    profile: str
    profile_version: int | None = Field(default=None, ge=1, exclude_if=_absent)
    profile_digest: str | None = Field(default=None, min_length=64, max_length=64,
                                       exclude_if=_absent)
    dealer: str = Field(min_length=1, max_length=64)
    cards: tuple[Card, ...] = Field(description="The round's cards as corrected, shoe order.")
    replaced_cards: tuple[Card, ...] = Field(description="The cards the correction replaces.")
    correction: int = Field(ge=1, description="1 for the first correction of the round, 2 for "
                                              "a correction of that correction, ...")
    reason_code: CorrectionReason
    reason_text: str = Field(min_length=1, max_length=500)
    supervisor: str


class RoundAnnulled(TableEventBase):
    """A management void of a round already completed (seeds 000 §1, 004 §1 and §4).

    The round's result stands in the log; downstream reverses its settlement with
    compensating transactions and refunds every bet. A round is annulled at most once.
    """

    type: Literal["round_annulled"] = "round_annulled"
    round_id: RoundId
    reason_code: VoidReason
    reason_text: str = Field(min_length=1, max_length=500)
    supervisor: str


TableEvent = Annotated[
    ShoeStarted | ShoeStartBurned | CardBurned | CutCardReached | ShoeEnded | RoundOpened
    | BettingClosed | CardDealt | SurplusCardRecorded | RoundCompleted | RoundVoided
    | RoundAnnulled | RoundRedealt | MisdealCorrected | RoundCorrected | TableClosed
    | TableReopened | RoundStalled | TwoCardsDrawn,
    Field(discriminator="type"),
]
TABLE_EVENT: TypeAdapter[TableEvent] = TypeAdapter(TableEvent)
# TableEvent's members one by one (read off the union: the list is written once)
TABLE_EVENT_TYPES: tuple[type[TableEventBase], ...] = get_args(get_args(TableEvent)[0])


def event_auth(key: bytes, chain_hash: str) -> str:
    """The HMAC that authenticates an event: SHA-256 under the table-events key over a
    domain label and the event's chain hash (which covers every other field)."""
    return hmac_hex(key, AUTH_LABEL + chain_hash.encode("ascii"))


AUTH_LABEL = b"croupier.table-event.v1\n"


def seal(event_type: type[TableEventBase], *, table_id: str, seq: int, prev_hash: str,
         occurred_at: datetime, key: bytes | None = None, **fields: Any) -> TableEventBase:
    """Build the next event of a table's chain, with its deterministic id and its hash;
    with `key` (dealer-event's table-events key), authenticated too."""
    draft = event_type(
        event_id=f"{table_id}:{seq}", table_id=table_id, seq=seq, prev_hash=prev_hash,
        occurred_at=occurred_at, hash="0" * 64, **fields,
    )
    chain_hash = draft.computed_hash()
    return draft.model_copy(update={
        "hash": chain_hash, "auth": None if key is None else event_auth(key, chain_hash)})


def parse_table_event(raw: bytes | str | dict[str, Any]) -> TableEventBase:
    if isinstance(raw, dict):
        return TABLE_EVENT.validate_python(raw)
    return TABLE_EVENT.validate_json(raw)
