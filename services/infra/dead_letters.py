"""What a consumer does with a record it cannot apply: write it to `dead.letters` (with
a log line and a metric) and move on. One bad record never stops a service, is never
retried forever, and is never lost: an operator can read it and put it back."""

from __future__ import annotations

import base64
import hashlib
import logging
from collections.abc import Callable, Iterable
from datetime import datetime

import faust

from services.infra import metrics
from services.infra.batching import Record, processing
from shared.events.dead_letters import KEEP_VALUE_BYTES, DeadLetter, dead_letter_id
from shared.events.event_auth import VOID
from shared.topics import DEAD_LETTERS_TOPIC

log = logging.getLogger("croupier.dead_letters")
ERROR_CHARS = 2000


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _as_bytes(data: object) -> bytes | None:
    if data is None or isinstance(data, bytes):
        return data
    return str(data).encode("utf-8", "surrogateescape")


def dead_letter(service: str, topic: str, partition: int, offset: int, key: object,
                value: object, error: BaseException, now: datetime) -> DeadLetter:
    raw = _as_bytes(value) or b""
    kept = None if value is None or len(raw) > KEEP_VALUE_BYTES else _b64(raw)
    message = f"{error}" or repr(error)
    return DeadLetter(
        dead_letter_id=dead_letter_id(service, topic, partition, offset), service=service,
        topic=topic, partition=partition, offset=offset, key_b64=_b64(_as_bytes(key)),
        value_b64=kept, value_sha256=hashlib.sha256(raw).hexdigest(), value_size=len(raw),
        error_type=type(error).__name__, error=message[:ERROR_CHARS], occurred_at=now)


def record_of(letter: DeadLetter) -> Record:
    key = f"{letter.topic}:{letter.partition}".encode()
    return DEAD_LETTERS_TOPIC, key, letter.model_dump_json().encode()


def give_up_on(service: str, event: faust.EventT, error: BaseException, now: datetime
               ) -> Record:
    """The dead letter of `event` (logged and counted), ready to publish."""
    message = event.message
    letter = dead_letter(service, message.topic, message.partition, message.offset,
                         message.key, message.value, error, now)
    note_dead_letter(letter)
    return record_of(letter)


def note_dead_letter(letter: DeadLetter) -> None:
    """Log and count a dead letter (`give_up_on` does; a service that publishes its dead
    letters from its own log's entries does it once the entry is backed)."""
    metrics.DEAD_LETTERS.labels(letter.service, letter.topic, letter.error_type).inc()
    log.error("%s could not apply %s[%d]@%d (%s: %s); written to %s as %s", letter.service,
              letter.topic, letter.partition, letter.offset, letter.error_type,
              letter.error[:300], DEAD_LETTERS_TOPIC, letter.dead_letter_id)


def apply_each(service: str, events: Iterable[faust.EventT],
               apply_one: Callable[[faust.EventT], list[Record]],
               now: Callable[[], datetime]) -> list[Record]:
    """`apply_one(event)` for each event in order, inside `processing(event)`; a record it
    raises on (any Exception: unparseable, impossible, a bug in the domain code) becomes
    a dead letter instead of stopping the batch. `apply_one` must decide before it writes
    (the pure-core-then-store shape every service has), so a failed record leaves no
    partial state. RecursionError and MemoryError are Exceptions too: a hostile record
    nested a million deep is dead-lettered like any other."""
    records: list[Record] = []
    for event in events:
        with processing(event):
            try:
                records += apply_one(event)
            except Exception as error:  # noqa: BLE001 - the record, not the service, failed
                records.append(give_up_on(service, event, error, now()))
    return records


def note_void(service: str, table_id: str, why: str) -> None:
    """Log and count a table event skipped as a lost race (`event_auth.VOID`): authentic,
    but not on its table's chain (`why`: which event, against which head); nothing is
    flagged."""
    metrics.TABLE_EVENTS_VOID.labels(service, table_id).inc()
    log.warning("%s: %s skipped an event of table %s: %s", VOID, service, table_id, why)


def flag_table(service: str, refused: BaseException, table_id: str) -> None:
    """Log loudly and count a table event refused as forged, altered, unsigned or out of
    order (shared/events/event_auth.py): its table is flagged by the caller."""
    metrics.TABLE_EVENTS_REFUSED.labels(service, table_id).inc()
    log.critical("TABLE FLAGGED by %s: %s. Nothing is settled on table %s until a "
                 "supervisor closes and reopens it after review "
                 "(docs/decisions/table-event-auth.md)", service, refused, table_id)
