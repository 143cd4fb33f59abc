"""Archives built without a broker: recorded rounds (tests/round_builder.py), with the
`bets.placed` record the wallet writes for each bet, laid into segments on each record's
partition (Kafka's partitioner over the key), as the archiver would have written them."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta

from services.archive.segment import ArchivedRecord
from services.archive.store_ops import head_of, write_segment
from services.infra.archive_store import ArchiveStore
from services.operator.round_reader import partition_for
from shared.events.bet_events import BetAccepted, BetPlaced
from shared.events.wallet_events import tx_id
from shared.topics import BETS_PLACED_TOPIC, DEFAULT_PARTITIONS
from tests.round_builder import RecordedRound


def round_records(rec: RecordedRound) -> list[tuple[str, str, bytes, int]]:
    """(topic, key, value, timestamp ms) of a recorded round, its bets placed included."""
    placed = [(BETS_PLACED_TOPIC, d.table_id, BetPlaced(
        **d.model_dump(exclude={"type", "decided_at"}), debit_tx_id=tx_id("stake_debit", d.bet_id),
        placed_at=rec.t0 - timedelta(seconds=1)).model_dump_json().encode(),
        rec.t0 - timedelta(seconds=1)) for d in rec.decisions if isinstance(d, BetAccepted)]
    return [(t, k, v, int(at.timestamp() * 1000)) for t, k, v, at in [*placed, *rec.records()]]


def archive_rounds(store: ArchiveStore, rounds: list[RecordedRound],
                   segment_records: int = 7) -> int:
    """Write the rounds' records into `store`, `segment_records` to a segment; returns how
    many records were archived."""
    return archive_records(store, [r for rec in rounds for r in round_records(rec)],
                           segment_records)


def archive_records(store: ArchiveStore, records: list[tuple[str, str, bytes, int]],
                    segment_records: int = 7) -> int:
    """Write (topic, key, value, timestamp ms) records into `store` after what it holds."""
    by_tp: dict[tuple[str, int], list[tuple[bytes, bytes, int]]] = defaultdict(list)
    for topic, key, value, ms in records:
        by_tp[(topic, partition_for(key, DEFAULT_PARTITIONS))].append((key.encode(), value, ms))
    total = 0
    for (topic, partition), items in sorted(by_tp.items()):
        head = head_of(store, topic, partition)
        first = head.end_offset or 0  # after what the archive already holds
        records = [ArchivedRecord(topic, partition, first + i, ms, key, value)
                   for i, (key, value, ms) in enumerate(items)]
        for start in range(0, len(records), segment_records):
            chunk = records[start:start + segment_records]
            _, head = write_segment(store, head, first + start, first + start + len(chunk),
                                    chunk)
        total += len(records)
    return total
