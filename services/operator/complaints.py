"""Player complaints (RULES §6): what a complaint must name, and the 24-hour window.

Evidence is kept 24 hours, so a complaint filed later than that after the round is refused
as out of window (seed 002: "Keluhan apapun yang diajukan setelah periode waktu tersebut
akan ditolak"). An operator may handle one anyway, with a reason, only where the operator
setting `CROUPIER_LATE_COMPLAINT_OVERRIDE` allows it (off by default); each use becomes a
`ComplaintWindowOverridden` record on `operator.actions` (`override_record`), which the
significant-event log lists.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict

from croupier.shared.events.ids import id_problem
from croupier.shared.events.operator_actions import ComplaintWindowOverridden

COMPLAINT_WINDOW = timedelta(hours=24)
REQUIRED = ("player_id", "played_at", "dealer", "table_id", "round_id")
LATE_RULE = ('seed 002: "Keluhan apapun yang diajukan setelah periode waktu tersebut akan '
             'ditolak karena tidak tersedianya bukti video"')
OVERRIDE_SETTING = "CROUPIER_LATE_COMPLAINT_OVERRIDE"


class ComplaintError(ValueError):
    """A complaint that cannot be handled; `code` says why (incomplete, bad_id,
    out_of_window, override_disabled, before_round)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class Complaint(BaseModel):
    model_config = ConfigDict(frozen=True)

    player_id: str
    played_at: AwareDatetime
    dealer: str
    table_id: str
    round_id: str
    filed_at: AwareDatetime
    override: str | None = None


def complaint_from(fields: dict[str, Any], filed_at: datetime, override: str | None = None) -> Complaint:
    """Refuse a complaint that does not name everything RULES §6 asks for, naming what is missing."""
    missing = [name for name in REQUIRED if not fields.get(name)]
    if missing:
        raise ComplaintError("incomplete", "complaint refused: it must name "
                             + ", ".join(missing).replace("_", " "))
    for name in ("player_id", "table_id", "round_id"):
        problem = id_problem(fields[name], name.removesuffix("_id"))
        if problem:
            raise ComplaintError("bad_id", f"complaint refused: {problem}")
    return Complaint(**{k: fields[k] for k in REQUIRED}, filed_at=filed_at, override=override)


class LateComplaintOverrideDisabled(ComplaintError):
    """An override of the 24-hour window asked for where the operator setting is off."""

    def __init__(self, message: str) -> None:
        super().__init__("override_disabled", message)


class WindowOverride(BaseModel):
    """A late complaint handled anyway: how late, and the operator's reason."""

    model_config = ConfigDict(frozen=True)

    late: timedelta
    reason: str

    @property
    def note(self) -> str:
        return (f"filed {self.late.total_seconds() / 3600:.1f} h after the round; window "
                f"overridden by operator: {self.reason}")


def check_window(complaint: Complaint, round_at: datetime, override_allowed: bool = False
                 ) -> WindowOverride | None:
    """None when in time; the override when an operator handles a late complaint anyway,
    which only `override_allowed` (the operator setting) permits. A complaint filed before
    its round began complains about nothing that had happened: refused whatever the
    override."""
    late = complaint.filed_at - round_at
    if late < timedelta(0):
        raise ComplaintError("before_round",
                             f"complaint refused: filed at {complaint.filed_at.isoformat()}, "
                             f"before its round began ({round_at.isoformat()})")
    if late <= COMPLAINT_WINDOW:
        return None
    refused = (f"complaint refused: filed {late.total_seconds() / 3600:.1f} h after the round, "
               f"outside the 24-hour evidence window ({LATE_RULE})")
    if not complaint.override:
        raise ComplaintError("out_of_window", refused)
    if not override_allowed:
        raise LateComplaintOverrideDisabled(
            f"{refused}; the override is off at this operator ({OVERRIDE_SETTING} is not set)")
    return WindowOverride(late=late, reason=complaint.override)


def override_record(complaint: Complaint, round_at: datetime, override: WindowOverride,
                    operator: str, now: datetime, action_id: str) -> ComplaintWindowOverridden:
    """The significant event one use of the override is recorded as (`action_id`: a new one
    each use)."""
    return ComplaintWindowOverridden(
        action_id=action_id, occurred_at=now, operator=operator, reason=override.reason,
        table_id=complaint.table_id, round_id=complaint.round_id,
        player_id=complaint.player_id, played_at=complaint.played_at, round_opened_at=round_at,
        filed_at=complaint.filed_at, late_seconds=int(override.late.total_seconds()))
