"""Filing a player's complaint, and finding it again: the one implementation `POST
/complaints`, `croupier complaint file` and the console's complaint form share.

Filing stamps the complaint with this process's clock when it takes the complaint (the
caller gives no time: `complaints.complaint_of` refuses one), reads the round's opening from
the log, judges the 24-hour window (`complaints.filed_records`) and writes the record on
`operator.actions` before answering: a late complaint's override first, then the complaint,
so a complaint outside the window is never on the log without its override. A complaint the
window refuses is answered and not recorded. Its report (`GET /complaints/{id}/report`,
`croupier replay --complaint ID`) reads the `complaint_filed` record back by its id and
judges by what it recorded, never by a time given then.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from services.archive.store_ops import read_archive_then_log
from services.infra.archive_store import archive_from_settings
from services.infra.log_reader import LogReadError
from services.operator.actions import ActionNotRecorded, operator_name, record_action
from services.operator.complaints import (
    Complaint,
    ComplaintError,
    complaint_of,
    filed_records,
)
from services.operator.replay_service import parse_time
from services.operator.round_reader import RoundNotFoundError, RoundReader
from shared.events.operator_actions import ComplaintFiled
from shared.events.registry import topic_adapter
from shared.topics import OPERATOR_ACTIONS_TOPIC

COMPLAINT_ID = re.compile(r"[0-9a-f]{32}")  # uuid4().hex: what filing gives


class ComplaintNotFoundError(LookupError):
    """No `complaint_filed` record of that id in `operator.actions` (nor its archive)."""


# what filing a complaint or opening its report may fail with, each answered by `refusal`
ANSWERED = (ComplaintError, ComplaintNotFoundError, RoundNotFoundError, ActionNotRecorded,
            LogReadError, ValueError, OverflowError)


def refusal(exc: Exception) -> tuple[int, str]:
    """The HTTP status and code an `ANSWERED` error is answered with, the same on the API and
    the console: a complaint refused 422 with its code, an unknown complaint or round 404, a
    log that did not take or give a record 503, any other bad value 422."""
    if isinstance(exc, ComplaintError):  # (a ValueError: named first)
        return 422, exc.code
    for kind, answer in ((ComplaintNotFoundError, (404, "unknown_complaint")),
                         (RoundNotFoundError, (404, "unknown_round")),
                         (ActionNotRecorded, (503, "action_not_recorded")),
                         (LogReadError, (503, "log_unreadable"))):
        if isinstance(exc, kind):
            return answer
    return 422, "bad_request"


def report_url(complaint_id: str) -> str:
    """Where the operator API serves the complaint's report (its path on the API)."""
    return f"/complaints/{complaint_id}/report"


@dataclass(frozen=True)
class FiledComplaint:
    record: ComplaintFiled
    where: tuple[int, int]  # operator.actions (partition, offset) of the record
    override_where: tuple[int, int] | None = None  # and of its override, for a late one

    def answer(self) -> dict[str, Any]:
        """The API's 201 body (and `croupier complaint file --json`)."""
        return {"complaint_id": self.record.complaint_id,
                "filed_at": self.record.filed_at.isoformat(),
                "within_window": self.record.within_window,
                "report_url": report_url(self.record.complaint_id)}


def round_opened_at(bootstrap: str, complaint: Complaint, settings: Any) -> datetime:
    """When the complaint's round opened, read from the log (or the archive, for a round
    retention has already deleted); `RoundNotFoundError` when neither holds it."""
    reader = RoundReader(bootstrap, archive_from_settings(settings))
    try:
        return reader.opening(complaint.table_id, complaint.round_id,
                              complaint.played_at).occurred_at
    finally:
        reader.close()


def file_complaint(bootstrap: str, body: dict[str, Any], settings: Any) -> FiledComplaint:
    """File the complaint `body` names (`complaints.BODY_FIELDS`) now, on this process's
    clock. Raises `ComplaintError` (an incomplete or refused complaint: nothing recorded),
    `RoundNotFoundError`, `ActionNotRecorded` (the log did not take the record)."""
    filed_at = datetime.now(UTC)  # taken first: the time the complaint reached the platform
    complaint = complaint_of(body, filed_at, parse_time)
    round_at = round_opened_at(bootstrap, complaint, settings)
    filed, overridden = filed_records(complaint, uuid.uuid4().hex, round_at,
                                      settings.late_complaint_override, operator_name(settings))
    override_where = record_action(bootstrap, overridden, settings) if overridden else None
    return FiledComplaint(filed, record_action(bootstrap, filed, settings), override_where)


def find_complaint(bootstrap: str, complaint_id: str, settings: Any) -> ComplaintFiled:
    """The `complaint_filed` record of `complaint_id`, read from `operator.actions` (every
    partition: the id does not name its table; the topic holds only the operator's
    actions, so the read is short) and the archive before it. Raises `ComplaintError`
    (`bad_id`) for an id filing never gives, `ComplaintNotFoundError` when no record has
    it, `LogReadError` when the log cannot be read."""
    if COMPLAINT_ID.fullmatch(complaint_id) is None:
        raise ComplaintError("bad_id", f"{complaint_id[:80]!r} is not a complaint id (filing "
                                       "gives 32 lowercase hex digits)")
    parse, needle = topic_adapter(OPERATOR_ACTIONS_TOPIC).validate_json, complaint_id.encode()
    for rec in read_archive_then_log(bootstrap, OPERATOR_ACTIONS_TOPIC, archive_from_settings(settings)):
        if not rec.value or needle not in rec.value:
            continue
        try:
            action = parse(rec.value)
        except ValidationError:  # not a record of ours: a complaint is never found in it
            continue
        if isinstance(action, ComplaintFiled) and action.complaint_id == complaint_id:
            return action
    raise ComplaintNotFoundError(f"no complaint {complaint_id} on {OPERATOR_ACTIONS_TOPIC}: file it first "
                                 "(POST /complaints, croupier complaint file)")
