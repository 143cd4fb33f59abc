"""Player complaints (RULES §6): what a complaint must name, and the 24-hour window.

Evidence is kept 24 hours, so a complaint filed later than that after the round
is refused as out of window, unless an operator overrides it with a reason that
the report then records.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict

from croupier.shared.events.ids import id_problem

COMPLAINT_WINDOW = timedelta(hours=24)
REQUIRED = ("player_id", "played_at", "dealer", "table_id", "round_id")


class ComplaintError(ValueError):
    """A complaint that cannot be handled; `code` says why (incomplete, bad_id,
    out_of_window, before_round)."""

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


def check_window(complaint: Complaint, round_at: datetime) -> str | None:
    """None when in time; the override note when an operator overrode a late complaint.
    A complaint filed before its round began complains about nothing that had happened:
    refused whatever the override."""
    late = complaint.filed_at - round_at
    if late < timedelta(0):
        raise ComplaintError("before_round",
                             f"complaint refused: filed at {complaint.filed_at.isoformat()}, "
                             f"before its round began ({round_at.isoformat()})")
    if late <= COMPLAINT_WINDOW:
        return None
    hours = late.total_seconds() / 3600
    if not complaint.override:
        raise ComplaintError("out_of_window",
                             f"complaint refused: filed {hours:.1f} h after the round, outside the "
                             "24-hour evidence window (an operator may override with a reason)")
    return f"filed {hours:.1f} h after the round; window overridden by operator: {complaint.override}"
