"""One replay, end to end: reading the round by time, rebuilding, verdict, and for a filed
complaint's report what its record says of it (`complaints.complaint_notes`).

Shared by `croupier replay` and the operator HTTP endpoint so both give the same report.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from services.infra.archive_store import ArchiveStore, archive_from_settings
from services.infra.settings import get_settings
from services.operator.complaints import complaint_notes
from services.operator.replay import ReplayReport, replay_roads, replay_round
from services.operator.round_reader import RoundReader
from shared.events.operator_actions import ComplaintFiled
from shared.events.table import RoundOpened


@dataclass
class ReplayRequest:
    table_id: str
    round_id: str
    played_at: datetime
    player_id: str | None = None
    complaint: ComplaintFiled | None = None  # the report of a filed complaint
    annulled_within: timedelta | None = None  # look this far past the round for an annulment

    @classmethod
    def from_text(cls, table_id: str, round_id: str, at: str | None,
                  player_id: str | None = None) -> ReplayRequest:
        """From what an operator types (CLI flags, query parameters): a round by its time of
        play. A complaint is not made here: it is filed (`complaint_filing`), and its report
        opens by its id (`from_complaint`)."""
        if not at:
            raise ValueError("give the time of play (--at / at=) so the replay can seek the log "
                             "by time")
        return cls(table_id, round_id, parse_time(at), player_id)

    @classmethod
    def from_complaint(cls, filed: ComplaintFiled) -> ReplayRequest:
        """The report of a filed complaint: its round, its time of play, its player's bets;
        the window as recorded at filing."""
        return cls(filed.table_id, filed.round_id, filed.played_at, filed.player_id, filed)


EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)  # nothing croupier logged can be older
LATEST_AHEAD = timedelta(days=30)  # a clock a little ahead still parses


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
    if complaint is not None:  # judged when it was filed: read, never decided again
        notes += complaint_notes(complaint, report.dealer)
    notes += [f"unreadable record {u.topic}[{u.partition}]@{u.offset}: {u.error}"
              for u in records.unparsed]
    return report, notes, records.records_read
