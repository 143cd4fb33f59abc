"""Player complaints (RULES §6): what a complaint must name, and the 24-hour window.

Evidence is kept 24 hours, so a complaint filed later than that after the round is refused
as out of window (seed 002: "Keluhan apapun yang diajukan setelah periode waktu tersebut
akan ditolak"). An operator may handle one anyway, with a reason, only where the operator
setting `CROUPIER_LATE_COMPLAINT_OVERRIDE` allows it (off by default); each use becomes a
`ComplaintWindowOverridden` record on `operator.actions` (`override_record`), which the
significant-event log lists.

The time a complaint was filed is the platform's: `complaint_of` refuses a `filed_at` (or the
older `complaint_at`) from its caller, and `filed_records` makes the `ComplaintFiled` record
stamped with the clock of the process that files it (`services.operator.
complaint_filing`). A late complaint without an allowed override is refused and nothing is
recorded; with one, it is recorded with its `ComplaintWindowOverridden` beside it. The
complaint's report reads the record back and judges the window by its `filed_at` alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict

from shared.events.ids import id_problem
from shared.events.operator_actions import ComplaintFiled, ComplaintWindowOverridden

COMPLAINT_WINDOW = timedelta(hours=24)
REQUIRED = ("player_id", "played_at", "dealer", "table_id", "round_id")
LATE_RULE = ('seed 002: "Keluhan apapun yang diajukan setelah periode waktu tersebut akan '
             'ditolak karena tidak tersedianya bukti video"')
OVERRIDE_SETTING = "CROUPIER_LATE_COMPLAINT_OVERRIDE"
BODY_FIELDS = (*REQUIRED, "override")  # what a caller may give when filing a complaint
CALLER_TIMES = ("filed_at", "complaint_at")  # the platform's to stamp, never a caller's
LONGEST = {"dealer": 200, "override": 2000}  # as the record (ComplaintFiled) takes them


class ComplaintError(ValueError):
    """A complaint that cannot be handled; `code` says why (incomplete, bad_id, bad_field,
    unknown_field, caller_time, out_of_window, override_disabled, before_round)."""

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


def complaint_of(body: Mapping[str, object], filed_at: datetime,
                 parse_time: Callable[[str], datetime]) -> Complaint:
    """The complaint a caller's fields (a JSON body, a form, CLI options) describe, filed at
    `filed_at`, the platform's clock. A time of filing from the caller is refused by name
    rather than ignored, so a client that thinks it chose the time learns it did not; an
    unknown field is refused too (a misspelt `override` would otherwise be lost).
    `parse_time` reads the time of play (the operator tools' one reading of a time)."""
    for name in CALLER_TIMES:
        if name in body:
            raise ComplaintError("caller_time", (
                f"complaint refused: {name} is not taken from the caller: the platform stamps "
                "a complaint with its own clock when it records it (drop the field)"))
    unknown = sorted(str(name) for name in body if name not in BODY_FIELDS)
    if unknown:
        raise ComplaintError("unknown_field", f"complaint refused: unknown field(s) "
                             f"{', '.join(unknown)}; a complaint names {', '.join(BODY_FIELDS)}")
    fields: dict[str, Any] = {}
    for name in BODY_FIELDS:
        value = body.get(name)
        if value is not None and not isinstance(value, str):
            raise ComplaintError("bad_field", f"complaint refused: {name} must be a string")
        if value and len(value) > LONGEST.get(name, len(value)):
            raise ComplaintError("bad_field", f"complaint refused: {name} has at most "
                                 f"{LONGEST[name]} characters")
        fields[name] = value.strip() if value else None
    if fields["played_at"] and all(fields[name] for name in REQUIRED):
        try:
            fields["played_at"] = parse_time(fields["played_at"])
        except ValueError as exc:
            raise ComplaintError("bad_time", f"complaint refused: played at: {exc}") from exc
    return complaint_from(fields, filed_at, override=fields["override"])


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


def filed_records(complaint: Complaint, complaint_id: str, round_at: datetime,
                  override_allowed: bool, operator: str
                  ) -> tuple[ComplaintFiled, ComplaintWindowOverridden | None]:
    """What filing `complaint` records, its window judged against the round's opening
    (`round_at`): the complaint, and for a late one handled anyway its override, which
    carries the complaint's id as its `action_id`. Raises `ComplaintError` for a complaint
    the window refuses: nothing is recorded for it. An override reason given with a
    complaint in time is not used, so not recorded."""
    override = check_window(complaint, round_at, override_allowed)
    filed = ComplaintFiled(
        complaint_id=complaint_id, filed_at=complaint.filed_at, operator=operator,
        table_id=complaint.table_id, round_id=complaint.round_id,
        player_id=complaint.player_id, played_at=complaint.played_at, dealer=complaint.dealer,
        round_opened_at=round_at, within_window=override is None,
        override=override.reason if override else None)
    if override is None:
        return filed, None
    return filed, override_record(complaint, round_at, override, operator, complaint.filed_at,
                                  complaint_id)


def complaint_notes(filed: ComplaintFiled, logged_dealer: str | None) -> list[str]:
    """What a complaint's report says of it: when it was filed (the recorded time, the
    platform's), the window as judged at filing, and a dealer the log does not show."""
    hours = (filed.filed_at - filed.round_opened_at).total_seconds() / 3600
    window = f"{int(COMPLAINT_WINDOW.total_seconds() // 3600)}-hour window"
    window = (f"{hours:.1f} h after the round opened: within the {window}"
              if filed.within_window else
              f"{hours:.1f} h after the round opened, outside the {window}; window overridden "
              f"by operator: {filed.override} (recorded at filing: complaint_window_overridden "
              f"{filed.complaint_id})")
    notes = [f"complaint {filed.complaint_id} by player {filed.player_id} filed "
             f"{filed.filed_at:%Y-%m-%d %H:%M:%S %Z} (the platform's clock), {window}"]
    if logged_dealer is not None and filed.dealer != logged_dealer:
        notes.append(f"the complaint names dealer {filed.dealer!r}; the log records "
                     f"{logged_dealer!r}")
    return notes
