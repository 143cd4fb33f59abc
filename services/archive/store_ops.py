"""The archive over a store: where each partition stands, writing a segment, reading back.

A partition's position is derived from the archive alone: the end offset of its last
manifest (never a consumer group's commit), so an archiver killed at any point resumes
exactly where the archive ends: no gap, no duplicate.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from kafka.consumer.fetcher import ConsumerRecord

from services.archive.segment import (
    MANIFEST_SUFFIX,
    PARQUET_SUFFIX,
    ArchivedRecord,
    Manifest,
    decode_segment,
    encode_segment,
    parse_stem,
    partition_dir,
    segment_stem,
)
from services.infra.archive_store import ArchiveStore
from services.infra.kafka_security import OPERATOR
from services.infra.log_reader import log_starts, read_to_end


@dataclass(frozen=True)
class PartitionHead:
    """Where a partition's archive ends: the next offset to archive and the last manifest's
    bytes (what the next manifest's `prev_manifest_sha256` hashes); None before the first."""

    topic: str
    partition: int
    end_offset: int | None
    last_manifest: bytes | None


def manifest_names(store: ArchiveStore, topic: str, partition: int) -> list[str]:
    """The partition's manifests, in offset order (the names sort so)."""
    return [n for n in store.names(partition_dir(topic, partition))
            if n.endswith(MANIFEST_SUFFIX) and parse_stem(n) is not None]


def archived_partitions(store: ArchiveStore, topic: str) -> list[int]:
    return sorted(int(d[1:]) for d in store.folders(topic)
                  if d.startswith("p") and d[1:].isdigit())


def head_of(store: ArchiveStore, topic: str, partition: int) -> PartitionHead:
    names = manifest_names(store, topic, partition)
    if not names:
        return PartitionHead(topic, partition, None, None)
    data = store.get(f"{partition_dir(topic, partition)}/{names[-1]}")
    manifest = Manifest.model_validate_json(data)
    return PartitionHead(topic, partition, manifest.end_offset, data)


def write_segment(store: ArchiveStore, head: PartitionHead, start_offset: int, end_offset: int,
                  records: Sequence[ArchivedRecord], aged_out: bool = False
                  ) -> tuple[Manifest, PartitionHead]:
    """Archive `[start, end)`: the file first, then its manifest (write-once), so a kill
    between the two leaves a file without a manifest that the next run writes again."""
    if head.end_offset is not None and start_offset != head.end_offset:
        raise ValueError(f"{head.topic}[{head.partition}]: segment starts at {start_offset}, "
                         f"the archive ends at {head.end_offset}")
    data, manifest = encode_segment(head.topic, head.partition, start_offset, end_offset,
                                    records, head.last_manifest)
    if aged_out:
        manifest = manifest.model_copy(update={"aged_out": True})
    folder = partition_dir(head.topic, head.partition)
    stem = segment_stem(start_offset)
    store.put(f"{folder}/{stem}{PARQUET_SUFFIX}", data)
    manifest_bytes = manifest.to_bytes()
    store.put(f"{folder}/{stem}{MANIFEST_SUFFIX}", manifest_bytes, once=True)
    return manifest, PartitionHead(head.topic, head.partition, end_offset, manifest_bytes)


def write_aged_out(store: ArchiveStore, head: PartitionHead, log_start: int
                   ) -> tuple[Manifest, PartitionHead]:
    """The offsets between the archive's end and the log's start were deleted by retention
    before they were archived: an empty segment marked `aged_out` keeps the chain whole and
    the gap on record (`verify` reports it)."""
    assert head.end_offset is not None and head.end_offset < log_start
    return write_segment(store, head, head.end_offset, log_start, [], aged_out=True)


def manifests(store: ArchiveStore, topic: str, partition: int) -> Iterator[Manifest]:
    folder = partition_dir(topic, partition)
    for name in manifest_names(store, topic, partition):
        yield Manifest.model_validate_json(store.get(f"{folder}/{name}"))


def read_segment(store: ArchiveStore, manifest: Manifest) -> list[ArchivedRecord]:
    folder = partition_dir(manifest.topic, manifest.partition)
    return decode_segment(manifest.topic, store.get(f"{folder}/{manifest.file}"))


class PartitionIndex:
    """A partition's manifests by position, read lazily and bisected: finding the segment of
    an offset or a time costs log(segments) reads, not the archive's history."""

    def __init__(self, store: ArchiveStore, topic: str, partition: int) -> None:
        self.store, self.topic, self.partition = store, topic, partition
        self.folder = partition_dir(topic, partition)
        self.names = manifest_names(store, topic, partition)
        self.starts = [parse_stem(n) or 0 for n in self.names]
        self._cache: dict[int, Manifest] = {}

    def __len__(self) -> int:
        return len(self.names)

    def manifest(self, i: int) -> Manifest:
        if i not in self._cache:
            self._cache[i] = Manifest.model_validate_json(
                self.store.get(f"{self.folder}/{self.names[i]}"))
        return self._cache[i]

    def forget(self, i: int) -> None:
        self._cache.pop(i, None)

    def at_offset(self, offset: int) -> int:
        """The index of the segment holding `offset` (0 before the first)."""
        return max(bisect.bisect_right(self.starts, offset) - 1, 0)

    def at_time(self, timestamp_ms: int, lo: int = 0) -> int:
        """The index of the first segment that may hold a record at or after the time
        (CreateTime grows along a partition, nearly: one segment earlier is taken too)."""
        hi = len(self.names)
        first = lo
        while lo < hi:
            mid = (lo + hi) // 2
            top = self.manifest(mid).max_timestamp_ms
            if top is not None and top >= timestamp_ms:
                hi = mid
            else:
                lo = mid + 1
        return max(lo - 1, first)

    def files_between(self, since_ms: int | None, until_ms: int | None) -> list[str]:
        """The Parquet files (names in the folder) of the segments that may hold records
        timestamped in `[since, until)`, in log order."""
        first = 0 if since_ms is None else self.at_time(since_ms)
        files = []
        for i in range(first, len(self.names)):
            manifest = self.manifest(i)
            if until_ms is not None and manifest.min_timestamp_ms is not None \
                    and manifest.min_timestamp_ms >= until_ms + 60_000 and i > first:
                break  # past the range (a minute of slack for clocks a little apart)
            if manifest.record_count:
                files.append(manifest.file)
        return files


def read_archived(store: ArchiveStore, topic: str, partition: int, start_offset: int = 0,
                  stop_offset: int | None = None, from_timestamp_ms: int | None = None
                  ) -> Iterator[ArchivedRecord]:
    """The archived records of one partition at offsets `[start, stop)`, in log order; with
    `from_timestamp_ms`, from the first segment that holds a record at or after it (found by
    bisection: `PartitionIndex`)."""
    index = PartitionIndex(store, topic, partition)
    first = index.at_offset(start_offset)
    if from_timestamp_ms is not None:
        first = index.at_time(from_timestamp_ms, first)
    for i in range(first, len(index)):
        manifest = index.manifest(i)
        if stop_offset is not None and manifest.start_offset >= stop_offset:
            return
        if manifest.end_offset <= start_offset or manifest.record_count == 0:
            continue
        for rec in read_segment(store, manifest):
            if rec.offset < start_offset:
                continue
            if stop_offset is not None and rec.offset >= stop_offset:
                return
            yield rec
        index.forget(i)


def read_archive_then_log(bootstrap: str, topic: str, archive: ArchiveStore | None,
                          progress: Callable[[int, int], None] | None = None,
                          principal: str = OPERATOR
                          ) -> Iterator[ConsumerRecord | ArchivedRecord]:
    """Every record of `topic` the archive or the log holds, each once: partition by
    partition, the archived records below the log's first offset, then the log (order
    within a partition is the log's). Without an archive, `read_to_end`."""
    if archive is not None:
        starts = log_starts(bootstrap, topic, principal)
        for partition in archived_partitions(archive, topic):
            yield from read_archived(archive, topic, partition, 0, starts.get(partition))
    yield from read_to_end(bootstrap, topic, progress, principal=principal)
