"""`round.results`: one result per completed round, with every fact settlement needs."""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, Field

from shared.cards import Card
from shared.models import FrozenModel
from shared.rounds import RoundResult


def result_id(table_id: str, round_id: str, correction: int = 0) -> str:
    """The round's result id; its n-th correction's result has an id of its own."""
    base = f"result:{table_id}:{round_id}"
    return base if correction == 0 else f"{base}:c{correction}"


def _absent(value: object) -> bool:
    return value is None


class ResultCorrection(FrozenModel):
    """What a corrected result supersedes, and who corrected it and why (RoundCorrected)."""


    replaces: str = Field(description="The result id this one supersedes.")
    correction: int = Field(ge=1)
    event_id: str = Field(description="The RoundCorrected table event.")
    replaced_cards: tuple[Card, ...]
    reason_code: str
    reason_text: str
    supervisor: str


class RoundResultPublished(FrozenModel):

    schema_version: Literal[1] = 1
    type: Literal["round_result"] = "round_result"
    result_id: str
    table_id: str
    round_id: str
    shoe_id: str
    profile: str
    profile_version: int | None = Field(
        default=None, ge=1, description="The profile version the round opened with (settle "
                                        "with it); absent in older records (version 1).")
    profile_digest: str | None = Field(
        default=None, description="That version's digest as the round recorded it.")
    dealer: str
    cards: tuple[Card, ...] = Field(description="The round's cards in shoe order, burns excluded.")
    completed_seq: int = Field(description="seq of the table event that completed the round.")
    completed_hash: str
    occurred_at: AwareDatetime
    result: RoundResult
    last_card_at: AwareDatetime | None = Field(
        default=None, description="When the card that completed the round was scanned "
                                  "(for end-to-end latency); absent in older records.")
    correction: ResultCorrection | None = Field(
        default=None, exclude_if=_absent,
        description="Present on a corrected result: the result it supersedes and why.")
