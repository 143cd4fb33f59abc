"""`operator.actions`: what an operator did that the rules do not do by themselves, one
record per use, written by the operator's tools so the significant-event log lists it.

Two actions: a player's complaint filed (RULES §6), stamped with the platform's own clock
so the 24-hour window is judged against a time no caller chose; and a late complaint handled
although seed 002 says "Keluhan apapun yang diajukan setelah periode waktu tersebut akan
ditolak" (any complaint filed after the 24-hour period is refused), behind an operator
setting that is off by default (`CROUPIER_LATE_COMPLAINT_OVERRIDE`;
docs/decisions/procedures.md).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AwareDatetime, Field

from shared.events.ids import PlayerId, RoundId, TableId
from shared.models import FrozenModel


class ComplaintWindowOverridden(FrozenModel):
    """An operator replayed a complaint filed after the 24-hour window."""


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


class ComplaintFiled(FrozenModel):
    """A player's complaint as the platform received it (RULES §6, seed 002). `filed_at` is
    the clock of the process that recorded it, never a time its caller gave: the 24-hour
    window is judged against it, at filing and whenever the complaint's report is opened. A
    late complaint is only ever recorded with an override (`within_window` false,
    `override` its reason), and then beside a `complaint_window_overridden` record whose
    `action_id` is this complaint's id."""


    schema_version: Literal[1] = 1
    type: Literal["complaint_filed"] = "complaint_filed"
    complaint_id: str = Field(min_length=1, max_length=64, description=(
        "Unique per complaint; its report opens by it."))
    filed_at: AwareDatetime = Field(description="The platform's clock when it recorded the "
                                                "complaint.")
    operator: str = Field(min_length=1, description=(
        "Who: the Kafka principal the broker authenticated the record's writer as."))
    table_id: TableId
    round_id: RoundId
    player_id: PlayerId
    played_at: AwareDatetime = Field(description="The time of play the complaint names.")
    dealer: str = Field(min_length=1, max_length=200, description=(
        "The dealer the complaint names (the log's may differ: the report says so)."))
    round_opened_at: AwareDatetime = Field(description="When the round opened, from the log.")
    within_window: bool = Field(description="Filed within 24 hours of the round's opening.")
    override: str | None = Field(default=None, min_length=1, max_length=2000, description=(
        "A late complaint's override reason, as the operator gave it; None when in time."))


# one record of operator.actions: which action, by its `type`
OperatorAction = Annotated[ComplaintFiled | ComplaintWindowOverridden, Field(discriminator="type")]
