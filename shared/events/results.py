"""`round.results`: one result per completed round, with every fact settlement needs."""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from croupier.shared.cards import Card
from croupier.shared.rounds import RoundResult


def result_id(table_id: str, round_id: str) -> str:
    return f"result:{table_id}:{round_id}"


class RoundResultPublished(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

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
