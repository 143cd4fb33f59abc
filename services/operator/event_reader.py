"""Read topics from the log into contract models: whole topics (audit, rebuild) in log order.

A record that does not parse is kept as a `Unparsed` with its position and error,
so a reader never silently skips what the log holds.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from services.archive.store_ops import read_archive_then_log
from services.infra.archive_store import ArchiveStore
from services.infra.own_log import entries_of
from services.operator.audit import Books
from shared.events.registry import topic_adapter
from shared.topics import (
    BETS_DECISIONS_TOPIC,
    BETS_PLACED_TOPIC,
    BETS_SETTLED_TOPIC,
    ROUND_RESULTS_TOPIC,
    TABLE_CORRECTIONS_TOPIC,
    TABLE_EVENTS_TOPIC,
    WALLET_LEDGER_TOPIC,
    WALLET_OPERATOR_CALLS_TOPIC,
    WALLET_TRANSACTIONS_TOPIC,
)

BOOK_TOPICS = (ROUND_RESULTS_TOPIC, BETS_PLACED_TOPIC, BETS_DECISIONS_TOPIC, BETS_SETTLED_TOPIC,
               WALLET_TRANSACTIONS_TOPIC, WALLET_OPERATOR_CALLS_TOPIC)
PARSERS: dict[str, Callable[[bytes], Any]] = {
    topic: topic_adapter(topic).validate_json
    for topic in (TABLE_EVENTS_TOPIC, TABLE_CORRECTIONS_TOPIC, *BOOK_TOPICS,
                  WALLET_OPERATOR_CALLS_TOPIC)
}
# an own log's record holds its entries (a pack of them, or one alone): the list of them
PARSERS[WALLET_LEDGER_TOPIC] = functools.partial(
    entries_of, parse=topic_adapter(WALLET_LEDGER_TOPIC).validate_json)


@dataclass(frozen=True)
class Unparsed:
    topic: str
    partition: int
    offset: int
    error: str


@dataclass(frozen=True)
class LogRecord:
    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    value: Any


def read_topic(bootstrap: str, topic: str,
               progress: Callable[[int, int], None] | None = None,
               archive: ArchiveStore | None = None) -> Iterator[LogRecord]:
    """Every record of `topic` from the start of retention (of the archive, with one) to the
    current end, parsed into its contract (order within a partition is the log's)."""
    parse = PARSERS[topic]
    for rec in read_archive_then_log(bootstrap, topic, archive, progress):
        try:
            value = parse(rec.value or b"")  # a record without a value is unparsed too
        except ValueError as exc:  # a ValidationError, or a pack that is not one
            value = Unparsed(topic, rec.partition, rec.offset, str(exc)[:500])
        yield LogRecord(topic, rec.partition, rec.offset, rec.timestamp, value)


def read_books(bootstrap: str, progress: Callable[[str, int, int], None] | None = None,
               archive: ArchiveStore | None = None) -> tuple[Books, list[Unparsed]]:
    """The platform's books from the log (and the archive, with one)."""
    books = Books()
    unparsed: list[Unparsed] = []
    for topic in BOOK_TOPICS:
        step = (lambda d, t, name=topic: progress(name, d, t)) if progress else None
        for rec in read_topic(bootstrap, topic, step, archive):
            if isinstance(rec.value, Unparsed):
                unparsed.append(rec.value)
            else:
                books.add(rec.value)
    return books, unparsed

