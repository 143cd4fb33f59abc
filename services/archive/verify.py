"""`croupier archive verify`: every file against its manifest, every manifest against the
one before it. A changed file, a missing file or manifest, a reordered or renamed one, a
gap or an overlap in the offsets is named, with the object it concerns.

What is checked, per topic partition, in offset order:
- each manifest parses, names its own folder's topic and partition, and its name is its
  start offset (a renamed or swapped manifest is caught here and by the chain);
- its `prev_manifest_sha256` is the SHA-256 of the manifest before it (the chain), and its
  start offset is that manifest's end offset (no gap, no overlap);
- its file exists, has the SHA-256 and size the manifest says, and holds exactly
  `record_count` records, in order, inside the manifest's offsets;
- a Parquet file without a manifest is a problem, except one at the partition's end: that
  is a segment a killed archiver had not finished, written again when it resumes.
Optionally, against the log: the archive must reach the log's start offset, or records
aged out of Kafka before they were archived.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pydantic import ValidationError

from services.archive.segment import (
    MANIFEST_SUFFIX,
    PARQUET_SUFFIX,
    Manifest,
    parse_stem,
    partition_dir,
    segment_offsets,
    segment_stem,
    sha256,
)
from services.archive.store_ops import archived_partitions
from services.infra.archive_store import ArchiveStore, ArchiveStoreError


@dataclass
class PartitionSummary:
    topic: str
    partition: int
    segments: int = 0
    records: int = 0
    bytes: int = 0
    start_offset: int | None = None
    end_offset: int | None = None


@dataclass
class VerifyReport:
    url: str
    partitions: list[PartitionSummary] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def segments(self) -> int:
        return sum(p.segments for p in self.partitions)

    @property
    def records(self) -> int:
        return sum(p.records for p in self.partitions)

    @property
    def bytes(self) -> int:
        return sum(p.bytes for p in self.partitions)


def verify_partition(store: ArchiveStore, topic: str, partition: int,
                     report: VerifyReport) -> PartitionSummary:
    folder = partition_dir(topic, partition)
    summary = PartitionSummary(topic, partition)
    names = store.names(folder)
    problems = report.problems
    for name in names:
        if parse_stem(name) is None:
            problems.append(f"{folder}/{name}: not an archive object (unknown name)")
    manifest_names = [n for n in names if n.endswith(MANIFEST_SUFFIX) and parse_stem(n) is not None]
    files = {n for n in names if n.endswith(PARQUET_SUFFIX) and parse_stem(n) is not None}
    described: set[str] = set()
    prev_name: str | None = None
    prev_bytes: bytes | None = None
    prev_end: int | None = None
    for name in manifest_names:
        where = f"{folder}/{name}"
        data = store.get(where)
        try:
            manifest = Manifest.model_validate_json(data)
        except ValidationError as exc:
            problems.append(f"{where}: unreadable manifest ({exc.errors()[0]['msg']})")
            prev_name, prev_bytes, prev_end = name, data, None
            continue
        if (manifest.topic, manifest.partition) != (topic, partition):
            problems.append(f"{where}: describes {manifest.topic}[{manifest.partition}], "
                            f"not {topic}[{partition}] (moved from another folder)")
        if parse_stem(name) != manifest.start_offset:
            problems.append(f"{where}: named for offset {parse_stem(name)} but covers offsets "
                            f"from {manifest.start_offset} (renamed or reordered)")
        expected_prev = None if prev_bytes is None else sha256(prev_bytes)
        if manifest.prev_manifest_sha256 != expected_prev:
            if prev_name is None:
                problems.append(f"{where}: first manifest of the partition, yet it chains to a "
                                f"previous manifest ({manifest.prev_manifest_sha256}): the "
                                "manifests before it are missing")
            else:
                problems.append(f"{where}: does not follow {folder}/{prev_name} (its previous-"
                                f"manifest hash {manifest.prev_manifest_sha256} is not that "
                                f"manifest's {expected_prev}): a manifest between or before "
                                "them was changed, removed or reordered")
        if prev_end is not None and manifest.start_offset != prev_end:
            kind = "gap" if manifest.start_offset > prev_end else "overlap"
            problems.append(f"{where}: {kind} in the offsets: the previous segment ends at "
                            f"{prev_end}, this one starts at {manifest.start_offset}")
        if manifest.aged_out:
            problems.append(f"{where}: offsets {manifest.start_offset}..{manifest.end_offset - 1}"
                            " aged out of the log before they were archived")
        _check_file(store, folder, manifest, files, problems)
        described.add(manifest.file)
        summary.segments += 1
        summary.records += manifest.record_count
        summary.bytes += manifest.file_bytes
        if summary.start_offset is None:
            summary.start_offset = manifest.start_offset
        summary.end_offset = manifest.end_offset
        prev_name, prev_bytes, prev_end = name, data, manifest.end_offset
    for orphan in sorted(files - described):
        if prev_end is None or parse_stem(orphan) == prev_end:
            report.notes.append(f"{folder}/{orphan}: a segment without its manifest at the "
                                "partition's end (an archiver stopped while writing it; the "
                                "next run writes it again)")
        else:
            problems.append(f"{folder}/{orphan}: a file no manifest describes")
    return summary


def _check_file(store: ArchiveStore, folder: str, manifest: Manifest, files: set[str],
                problems: list[str]) -> None:
    where = f"{folder}/{manifest.file}"
    if manifest.file != segment_stem(manifest.start_offset) + PARQUET_SUFFIX:
        problems.append(f"{where}: the manifest of offset {manifest.start_offset} names "
                        f"another segment's file")
    if manifest.file not in files:
        problems.append(f"{where}: missing (its manifest says {manifest.record_count} records, "
                        f"offsets {manifest.start_offset}..{manifest.end_offset - 1})")
        return
    try:
        data = store.get(where)
    except ArchiveStoreError as exc:
        problems.append(f"{where}: unreadable ({exc})")
        return
    digest = sha256(data)
    if digest != manifest.file_sha256 or len(data) != manifest.file_bytes:
        problems.append(f"{where}: changed since it was archived (SHA-256 {digest}, "
                        f"{len(data)} bytes; the manifest says {manifest.file_sha256}, "
                        f"{manifest.file_bytes} bytes)")
        return
    offsets = segment_offsets(data)
    if len(offsets) != manifest.record_count or (offsets and (
            offsets[0] != manifest.first_offset or offsets[-1] != manifest.last_offset
            or offsets[0] < manifest.start_offset or offsets[-1] >= manifest.end_offset
            or any(b <= a for a, b in zip(offsets, offsets[1:], strict=False)))):
        problems.append(f"{where}: holds {len(offsets)} records that do not match its manifest "
                        f"({manifest.record_count} records, offsets {manifest.first_offset}.."
                        f"{manifest.last_offset})")


def verify(store: ArchiveStore, topics: Iterable[str],
           log_starts: Callable[[str], dict[int, int]] | None = None) -> VerifyReport:
    """Verify every archived partition of `topics`. `log_starts(topic)` -> {partition: the
    log's first offset}: also check that the archive reaches the log (nothing aged out of
    Kafka before it was archived)."""
    began = time.perf_counter()
    report = VerifyReport(store.url)
    for topic in topics:
        partitions = archived_partitions(store, topic)
        for partition in partitions:
            report.partitions.append(verify_partition(store, topic, partition, report))
        if log_starts is None:
            continue
        ends = {s.partition: s.end_offset for s in report.partitions if s.topic == topic}
        for partition, begin in sorted(log_starts(topic).items()):
            end = ends.get(partition)
            if begin > 0 and (end is None or end < begin):
                problems = f"offsets {end or 0}..{begin - 1}"
                report.problems.append(f"{topic}[{partition}]: {problems} are neither archived "
                                       "nor in the log any more (aged out before archived)")
    report.seconds = time.perf_counter() - began
    return report
