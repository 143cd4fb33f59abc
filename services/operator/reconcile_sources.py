"""Where reconciliation reads its two sides: croupier's `wallet.operator_calls` (the archive,
then the log, with the platform's one log reader) and the operator's transaction report
(`GET {base}/transactions`, signed, paged). `run_reconcile` is what `croupier reconcile`
and the operator API's `GET /reconcile` both run; the comparison itself is the pure
`services.operator.reconcile`.

Both sides are streamed: the log record by record, the report page by page.
kafka-python and httpx, blocking: callers on an event loop run it in a thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC, date, datetime, time, timedelta

import httpx
from kafka.errors import KafkaError
from pydantic import ValidationError

from services.archive.store_ops import read_archive_then_log
from services.infra.archive_store import ArchiveStore, archive_from_settings
from services.infra.kafka_security import OPERATOR
from services.infra.log_reader import LogReadError
from services.infra.settings import Settings
from services.operator.reconcile import ReconcileReport, Unreadable, reconcile
from services.operator.replay_service import parse_time
from shared.events.operator_wallet import (
    OperatorCallRecord,
    OperatorTransaction,
    TransactionsPage,
    signature_headers,
)
from shared.topics import WALLET_OPERATOR_CALLS_TOPIC

PAGE_SIZE = 1000


class ReconcileSourceError(RuntimeError):
    """One side could not be read (the broker, the topic, the operator's wallet): what and
    why, in one line."""


def read_operator_calls(bootstrap: str, archive: ArchiveStore | None = None,
                        principal: str = OPERATOR, topic: str = WALLET_OPERATOR_CALLS_TOPIC
                        ) -> Iterator[OperatorCallRecord | Unreadable]:
    """Every record of croupier's calls to the operator's wallet, the archive's then the
    log's; a record that does not parse is an `Unreadable` naming where it is."""
    for rec in read_archive_then_log(bootstrap, topic, archive, principal=principal):
        try:
            yield OperatorCallRecord.model_validate_json(rec.value or b"")
        except ValidationError as exc:
            at = datetime.fromtimestamp(rec.timestamp / 1000, UTC) if rec.timestamp else None
            yield Unreadable(where=f"{topic}[{rec.partition}]@{rec.offset}",
                             error=str(exc).splitlines()[0][:300], at=at)


def operator_transactions(base_url: str, key_id: str, key: bytes, page_size: int = PAGE_SIZE,
                          timeout_s: float = 30.0, client: httpx.Client | None = None
                          ) -> Iterator[OperatorTransaction]:
    """The operator's transactions, oldest first, page by page (`after` the last page's
    `next_after`; the first page has no `after`). Each request is signed over its query
    string's bytes. Raises `ReconcileSourceError` naming the URL and what went wrong."""
    base = base_url.rstrip("/")
    own = client is None
    http = client or httpx.Client(timeout=timeout_s)
    after: int | None = None
    try:
        while True:
            query = f"limit={page_size}" if after is None else f"after={after}&limit={page_size}"
            url = f"{base}/transactions?{query}"
            try:
                answer = http.get(url, headers=signature_headers(query.encode(), key_id, key))
            except httpx.HTTPError as exc:
                raise ReconcileSourceError(
                    f"the operator wallet at {base} is unreachable: GET {url}: "
                    f"{type(exc).__name__}: {exc}") from exc
            if answer.status_code != 200:
                raise ReconcileSourceError(
                    f"the operator wallet answered GET {url} with HTTP {answer.status_code}: "
                    f"{answer.text[:300]}")
            try:
                page = TransactionsPage.model_validate_json(answer.content)
            except ValidationError as exc:
                raise ReconcileSourceError(
                    f"the operator wallet's answer to GET {url} is not a TransactionsPage: "
                    f"{str(exc).splitlines()[0]}") from exc
            yield from page.transactions
            if page.next_after is None:
                return
            if after is not None and page.next_after <= after:
                raise ReconcileSourceError(
                    f"the operator wallet's report does not advance: GET {url} answered "
                    f"next_after={page.next_after}")
            after = page.next_after
    finally:
        if own:
            http.close()


def _guarded(calls: Iterable[OperatorCallRecord | Unreadable]
             ) -> Iterator[OperatorCallRecord | Unreadable]:
    try:
        yield from calls
    except LogReadError as exc:
        raise ReconcileSourceError(f"reading {WALLET_OPERATOR_CALLS_TOPIC}: {exc}") from exc
    except KafkaError as exc:
        raise ReconcileSourceError(
            f"reading {WALLET_OPERATOR_CALLS_TOPIC}: the broker: {type(exc).__name__}: {exc}") from exc


def run_reconcile(settings: Settings, since: datetime | None, until: datetime | None,
                  player: str | None = None, margin: timedelta = timedelta(hours=1)
                  ) -> ReconcileReport:
    """Read both sides as the settings name them (the log's bootstrap servers and archive;
    `operator_wallet_url`, signed with `operator_wallet_key_id` and `_secret`) and
    reconcile them over [since, until). Raises `ReconcileSourceError` if a side cannot be
    read."""
    if not settings.operator_wallet_url:
        raise ReconcileSourceError(
            "no operator wallet to reconcile with: set CROUPIER_OPERATOR_WALLET_URL (the "
            "base URL of the operator's wallet API)")
    url, key_id = settings.operator_wallet_url, settings.operator_wallet_key_id
    key = settings.operator_wallet_secret.encode("utf-8")
    # the report's first page before the log's years: an unreachable wallet fails at once
    next(iter(operator_transactions(url, key_id, key, page_size=1)), None)
    calls = read_operator_calls(settings.bootstrap_servers, archive_from_settings(settings))
    operator = operator_transactions(url, key_id, key)
    return reconcile(_guarded(calls), operator, since=since, until=until, player=player,
                     margin=margin)


def window_of(since: str | None, until: str | None, day: str | None, now: datetime,
              settle: timedelta) -> tuple[datetime, datetime, str | None]:
    """The window [since, until) the options name: a UTC `day` (YYYY-MM-DD), or from/to
    (ISO 8601; by default today's start, and now). It ends no later than `now - settle`:
    what croupier decided since may still be in flight (no final record yet), so it is
    compared next time. Returns the window and a note when it was shortened."""
    if day and (since or until):
        raise ValueError("give a day, or from/to, not both")
    if day:
        try:
            start = datetime.combine(date.fromisoformat(day), time(), UTC)
        except ValueError as exc:
            raise ValueError(f"bad day {day!r}: use YYYY-MM-DD (a UTC day)") from exc
        end = start + timedelta(days=1)
    else:
        start = parse_time(since) if since else datetime.combine(now.date(), time(), UTC)
        end = parse_time(until) if until else now
    latest = now - settle
    note = None
    if end > latest:
        end = latest
        note = (f"the window ends at {latest.isoformat(timespec='seconds')}, {int(settle.total_seconds())} s "
                f"before now: calls decided since may still be in flight")
    if end <= start:
        raise ValueError(f"the window is empty: from {start.isoformat()} to {end.isoformat()}")
    return start, end, note
