"""One replay, end to end: complaint checks, reading the round by time, rebuilding, verdict.

Shared by `croupier replay` and the operator HTTP endpoint so both give the same report.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from croupier.services.infra.archive_store import ArchiveStore, archive_from_settings
from croupier.services.infra.settings import get_settings
from croupier.services.operator.actions import operator_name, record_action
from croupier.services.operator.complaints import (
    Complaint,
    check_window,
    complaint_from,
    override_record,
)
from croupier.services.operator.replay import ReplayReport, replay_roads, replay_round
from croupier.services.operator.round_reader import RoundReader
from croupier.shared.events.table import RoundOpened


@dataclass
class ReplayRequest:
    table_id: str
    round_id: str
    played_at: datetime
    player_id: str | None = None
    complaint: Complaint | None = None
    annulled_within: timedelta | None = None  # look this far past the round for an annulment

    @classmethod
    def from_text(cls, table_id: str, round_id: str, at: str | None, player_id: str | None = None,
                  dealer: str | None = None, complaint_at: str | None = None,
                  override: str | None = None) -> ReplayRequest:
        """From what an operator types (CLI flags, query parameters). A complaint (one with
        `complaint_at`) must name everything RULES §6 asks for, checked before the log is
        read; a plain replay needs only the time of play."""
        played_at = parse_time(at) if at else None
        complaint = None
        if complaint_at is not None:
            complaint = complaint_from(
                {"player_id": player_id, "played_at": played_at, "dealer": dealer,
                 "table_id": table_id, "round_id": round_id},
                filed_at=parse_time(complaint_at), override=override)
        if played_at is None:  # (a complaint without it is refused above)
            raise ValueError("give the time of play (--at / at=) so the replay can seek the log "
                             "by time")
        return cls(table_id, round_id, played_at, player_id, complaint)


EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)  # nothing croupier logged can be older
LATEST_AHEAD = timedelta(days=30)  # a late complaint still parses (the window refuses it)


def parse_time(text: str) -> datetime:
    """ISO 8601; a time without a zone is taken as UTC. A time before 2000 or more than a
    month ahead names no round croupier could have logged (and `0001-01-01` used to overflow
    the log seek into a 500)."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"bad time {text!r}: use ISO 8601, e.g. 2026-11-30T08:30:00Z") from exc
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    if not EARLIEST <= moment <= datetime.now(UTC) + LATEST_AHEAD:
        raise ValueError(f"time {text!r} is out of range: between {EARLIEST:%Y-%m-%d} and "
                         f"{LATEST_AHEAD.days} days from now")
    return moment


def run_replay(bootstrap: str, request: ReplayRequest, archive: ArchiveStore | None = None
               ) -> tuple[ReplayReport, list[str], int]:
    """The report, the notes to print with it, and how many records were read. `archive`:
    read there what retention deleted from the log (default: the settings' archive)."""
    notes: list[str] = []
    settings = get_settings()  # the operator holds the table-events key: HMACs are checked
    complaint = request.complaint
    reader = RoundReader(bootstrap, archive or archive_from_settings(settings))
    key, unsigned = settings.table_events_key_bytes, settings.table_events_accept_unsigned
    try:
        records = reader.read_round(request.table_id, request.round_id, request.played_at,
                                    request.player_id, request.annulled_within)
        report = replay_round(request.table_id, request.round_id, records.events,
                              records.anchor, records.result, records.decisions,
                              records.settlements, records.wallet,
                              player_id=request.player_id, annulment=records.annulment,
                              events_key=key, accept_unsigned=unsigned,
                              corrections=records.corrections,
                              corrected_results=records.corrected_results,
                              operator_calls=records.operator_calls, now=datetime.now(UTC))
        opened = next((e for e in records.events if isinstance(e, RoundOpened)
                       and e.round_id == request.round_id), None)
        if opened is not None:  # the roads of its shoe up to the round
            shoe_events, read = reader.read_shoe(request.table_id, opened.shoe_id,
                                                 request.round_id, opened.occurred_at)
            records.records_read += read
            roads, road_notes = replay_roads(request.table_id, opened.shoe_id,
                                             request.round_id, shoe_events, key, unsigned)
            report = report.model_copy(update={"roads": roads})
            notes += road_notes
    finally:
        reader.close()
    if complaint is not None and report.opened_at is not None:
        override = check_window(complaint, report.opened_at, settings.late_complaint_override)
        if override is not None:  # recorded before the report is given, or not given at all
            action = override_record(complaint, report.opened_at, override,
                                     operator_name(settings), datetime.now(UTC),
                                     uuid.uuid4().hex)
            partition, offset = record_action(bootstrap, action, settings)
            notes.append(f"{override.note}; recorded as a significant event "
                         f"(operator.actions[{partition}]@{offset}, {action.action_id})")
        if complaint.dealer != report.dealer:
            notes.append(f"the complaint names dealer {complaint.dealer!r}; the log records "
                         f"{report.dealer!r}")
        notes.append(f"complaint by player {complaint.player_id} filed "
                     f"{complaint.filed_at:%Y-%m-%d %H:%M:%S %Z}")
    notes += [f"unreadable record {u.topic}[{u.partition}]@{u.offset}: {u.error}"
              for u in records.unparsed]
    return report, notes, records.records_read
