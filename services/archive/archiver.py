"""`croupier archive run`: copy every catalogue topic into the archive, exactly once by offset.

One process reads every partition of every topic in `shared.topics` (kafka-python,
outside any consumer group: it commits nothing) from where the archive ends, buffers each
partition's records, and closes a segment (file, then manifest) when it holds 50,000
records or 32 MB, or `CROUPIER_ARCHIVE_FLUSH_SECONDS` after its first record. Killed at any
point and restarted, it resumes each partition at its last manifest's end offset: a
buffered segment is read again from the log (which keeps at least 24 h), a written file
without its manifest is written again; nothing is skipped, nothing is archived twice.
A SIGTERM closes every open segment first.

Its state is one buffer per partition, bounded by the segment size, and one head (end
offset and last manifest) per partition: nothing grows with history.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import OffsetOutOfRangeError

from services.archive.segment import ArchivedRecord
from services.archive.store_ops import PartitionHead, head_of, write_aged_out, write_segment
from services.infra.archive_store import ArchiveStore
from services.infra.kafka_security import OPERATOR, kafka_python_options
from shared.topics import TOPIC_NAMES

log = logging.getLogger("croupier.archive")

MAX_SEGMENT_RECORDS = 50_000
MAX_SEGMENT_BYTES = 32 * 1024 * 1024
ARCHIVER_HEARTBEAT = "archiver.heartbeat"  # under CROUPIER_HOME: touched after every poll
DISCOVER_EVERY_S = 30.0  # look for new topics and partitions this often


@dataclass
class OpenSegment:
    """A partition's records since its archive's end, not yet written."""

    head: PartitionHead
    start_offset: int
    records: list[ArchivedRecord] = field(default_factory=list)
    bytes: int = 0
    first_at: float | None = None  # monotonic time of the first record buffered


@dataclass
class ArchiverStats:
    segments: int = 0
    records: int = 0
    bytes: int = 0
    aged_out: int = 0  # offsets retention deleted before the archiver reached them


class Archiver:
    def __init__(self, bootstrap: str, store: ArchiveStore, topics: Iterable[str] = TOPIC_NAMES,
                 flush_seconds: float = 300.0, max_records: int = MAX_SEGMENT_RECORDS,
                 max_bytes: int = MAX_SEGMENT_BYTES, principal: str = OPERATOR) -> None:
        self.bootstrap = bootstrap
        self.store = store
        self.topics = tuple(topics)
        self.flush_seconds = flush_seconds
        self.max_records = max_records
        self.max_bytes = max_bytes
        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
            client_id="croupier-archiver", max_partition_fetch_bytes=8 * 1024 * 1024,
            fetch_max_bytes=64 * 1024 * 1024,
            # never jump: an offset retention deleted before it was archived is raised, and
            # recorded as aged out (`_aged_out`), not skipped in silence
            auto_offset_reset="none", **kafka_python_options(principal))
        self.open: dict[TopicPartition, OpenSegment] = {}
        self.stats = ArchiverStats()
        self._discovered_at = 0.0

    def close(self) -> None:
        self.consumer.close()

    # ---------------------------------------------------------------- partitions
    def discover(self) -> None:
        """Assign every partition of the catalogue's topics, each positioned at the end of its
        archive (or the log's start for a partition never archived)."""
        self._discovered_at = time.monotonic()
        wanted = [TopicPartition(t, p) for t in self.topics
                  for p in sorted(self.consumer.partitions_for_topic(t) or ())]
        new = [tp for tp in wanted if tp not in self.open]
        if not new:
            return
        self.consumer.assign(wanted)
        begins = self.consumer.beginning_offsets(new)
        for tp in new:
            head = head_of(self.store, tp.topic, tp.partition)
            if head.end_offset is None:
                head = PartitionHead(tp.topic, tp.partition, begins[tp], None)
            self.open[tp] = OpenSegment(head, head.end_offset or 0)
            self._aged_out(tp, begins[tp])
            log.info("archiving %s[%d] from offset %d", tp.topic, tp.partition,
                     self.open[tp].start_offset)
        for tp in wanted:  # assign() forgets positions: each resumes after what it buffered
            seg = self.open[tp]
            self.consumer.seek(tp, seg.records[-1].offset + 1 if seg.records else seg.start_offset)

    def _aged_out(self, tp: TopicPartition, log_start: int) -> None:
        """Where the log now starts past the partition's archive (retention deleted records
        the archiver had not reached), close what is buffered and keep the gap on record."""
        seg = self.open[tp]
        if seg.records:
            self.flush(tp, end=seg.records[-1].offset + 1)
            seg = self.open[tp]
        if seg.start_offset >= log_start:
            return
        log.error("%s[%d]: offsets %d..%d aged out of the log before they were archived",
                  tp.topic, tp.partition, seg.start_offset, log_start - 1)
        self.stats.aged_out += log_start - seg.start_offset
        _, head = write_aged_out(self.store, seg.head, log_start)  # seg.head ends at its start
        self.open[tp] = OpenSegment(head, log_start)
        self.consumer.seek(tp, log_start)

    # ---------------------------------------------------------------- the loop
    def step(self, timeout_ms: int = 500) -> int:
        """One poll: buffer what came, close the segments that are due. Returns records read."""
        if time.monotonic() - self._discovered_at > DISCOVER_EVERY_S or not self.open:
            self.discover()
        if not self.open:
            time.sleep(timeout_ms / 1000)
            return 0
        got = 0
        now = time.monotonic()
        try:
            batches = self.consumer.poll(timeout_ms=timeout_ms, max_records=20_000)
        except OffsetOutOfRangeError as exc:  # retention overtook the archiver while it ran
            out_of_range = [tp for tp in (exc.args[0] if exc.args else {}) if tp in self.open]
            for tp, begin in self.consumer.beginning_offsets(out_of_range).items():
                self._aged_out(tp, begin)
            return 0
        for tp, batch in batches.items():
            seg = self.open[tp]
            for rec in batch:
                seg.records.append(ArchivedRecord(
                    tp.topic, tp.partition, rec.offset, rec.timestamp, rec.key, rec.value,
                    tuple((k, v) for k, v in (rec.headers or ()))))
                seg.bytes += len(rec.value or b"") + len(rec.key or b"") + 32
            got += len(batch)
            if batch and seg.first_at is None:
                seg.first_at = now
        for tp, seg in self.open.items():
            if seg.records and (len(seg.records) >= self.max_records or seg.bytes >= self.max_bytes
                                or now - (seg.first_at or now) >= self.flush_seconds):
                self.flush(tp)
        return got

    def flush(self, tp: TopicPartition, end: int | None = None) -> None:
        """Write the partition's open segment: from its start to the consumer's position
        (or `end`)."""
        seg = self.open[tp]
        if not seg.records:
            return
        if end is None:
            end = max(self.consumer.position(tp), seg.records[-1].offset + 1)
        manifest, head = write_segment(self.store, seg.head, seg.start_offset, end, seg.records)
        self.stats.segments += 1
        self.stats.records += manifest.record_count
        self.stats.bytes += manifest.file_bytes
        log.info("archived %s[%d] offsets %d..%d: %d records, %d bytes", tp.topic, tp.partition,
                 manifest.start_offset, manifest.end_offset - 1, manifest.record_count,
                 manifest.file_bytes)
        self.open[tp] = OpenSegment(head, end)

    def flush_all(self) -> None:
        for tp in list(self.open):
            self.flush(tp)

    def caught_up(self) -> bool:
        """Every partition read to the end offset the log has now."""
        if not self.open:
            return False
        ends = self.consumer.end_offsets(list(self.open))
        return all(self.consumer.position(tp) >= ends[tp] for tp in self.open)

    def run(self, stop: threading.Event | None = None, once: bool = False,
            heartbeat: Path | None = None) -> ArchiverStats:
        """Archive until `stop` is set (then close every open segment); `once`: until every
        partition is archived up to the log's end offsets taken at the start. `heartbeat`:
        a file touched after every poll (docker-compose's healthcheck reads its age)."""
        stop = stop or threading.Event()
        self.discover()
        targets = self.consumer.end_offsets(list(self.open)) if once else {}
        if heartbeat is not None:
            heartbeat.parent.mkdir(parents=True, exist_ok=True)
        while not stop.is_set():
            self.step()
            if heartbeat is not None:
                heartbeat.touch()
            if once and all(self.consumer.position(tp) >= end for tp, end in targets.items()):
                break
        self.flush_all()
        return self.stats


def run_until_signalled(archiver: Archiver, once: bool = False,
                        heartbeat: Path | None = None) -> ArchiverStats:
    """The process's main loop: SIGTERM and SIGINT close the open segments, then stop."""
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        return archiver.run(stop, once=once, heartbeat=heartbeat)
    finally:
        archiver.close()
