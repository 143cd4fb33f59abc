"""`operator.actions`: what an operator did that the rules do not do by themselves, one
record per use, written by the operator's tools so the significant-event log lists it.

Today one action: a late complaint handled although seed 002 says "Keluhan apapun yang
diajukan setelah periode waktu tersebut akan ditolak" (any complaint filed after the 24-hour
period is refused), behind an operator setting that is off by default
(`CROUPIER_LATE_COMPLAINT_OVERRIDE`; docs/decisions/procedures.md).
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from croupier.shared.events.ids import PlayerId, RoundId, TableId


class ComplaintWindowOverridden(BaseModel):
    """An operator replayed a complaint filed after the 24-hour window."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = 1
    type: Literal["complaint_window_overridden"] = "complaint_window_overridden"
    action_id: str = Field(min_length=1, max_length=64, description="Unique per use.")
    occurred_at: AwareDatetime
    operator: str = Field(min_length=1, description=(
        "Who: the Kafka principal the broker authenticated the record's writer as."))
    reason: str = Field(min_length=1, max_length=2000, description="Why, as the operator gave it.")
    table_id: TableId
    round_id: RoundId
    player_id: PlayerId
    played_at: AwareDatetime = Field(description="The time of play the complaint names.")
    round_opened_at: AwareDatetime = Field(description="When the round opened, from the log.")
    filed_at: AwareDatetime
    late_seconds: int = Field(gt=0, description="How long after the round opened it was "
                                                "filed, past the 24-hour window included.")


OperatorAction = ComplaintWindowOverridden  # one action so far: a union when a second comes
