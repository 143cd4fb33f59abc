"""The archive's format: a segment of one partition's records as a Parquet file, described
by a manifest that chains to the one before it. Values in, values out: no store, no broker.

A segment covers the positions `[start_offset, end_offset)` of one topic partition: every
record the log held there, in offset order, byte for byte (key, value, headers, timestamp).
`end_offset` is the consumer's position after the last record, so the next segment starts
exactly there even where the log's offsets skip (transaction markers). Its manifest names
the file's SHA-256 and the SHA-256 of the previous manifest of the partition: a changed file
breaks its own hash, a changed, missing or reordered manifest breaks the chain.

Inside a file the rows are sorted by player, table and round (queries skip row groups by
their statistics); the `offset` column is the log's order, and readers restore it.

Layout (`<topic>/<partition>/` under the archive's root):
    p0003/00000000000000012000.parquet         the records
    p0003/00000000000000012000.manifest.json   its manifest, written after the file
The name is the segment's start offset, zero-padded, so the names sort in log order.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import Field

from shared.models import FrozenModel

FORMAT = "croupier-archive/1"
PARQUET_SUFFIX = ".parquet"
MANIFEST_SUFFIX = ".manifest.json"
OFFSET_DIGITS = 20

QUERY_FIELDS = ("type", "table_id", "round_id", "player_id")
SORT_ORDER = ("player_id", "table_id", "round_id", "offset")
ROW_GROUP_ROWS = 1_024
SCHEMA = pa.schema([
    pa.field("partition", pa.int32(), nullable=False),
    pa.field("offset", pa.int64(), nullable=False),
    pa.field("timestamp_ms", pa.int64(), nullable=False),
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("headers", pa.list_(pa.struct([pa.field("key", pa.string()),
                                             pa.field("value", pa.binary())]))),
    # copied from the value's top-level JSON fields where it has them, for queries to filter
    # on without parsing every value; the value stays the record
    *(pa.field(name, pa.string()) for name in QUERY_FIELDS),
])


class ArchiveFormatError(ValueError):
    """Records that cannot form a segment (out of order, outside its offsets)."""


@dataclass(frozen=True)
class ArchivedRecord:
    """One log record as the archive keeps it; the attribute names are kafka-python's
    (`ConsumerRecord`), so a reader of the log reads an archived record the same way."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


class Manifest(FrozenModel):

    format: str = FORMAT
    topic: str
    partition: int = Field(ge=0)
    start_offset: int = Field(ge=0, description="first position the segment covers")
    end_offset: int = Field(ge=0, description="position after its last record (exclusive)")
    record_count: int = Field(ge=0)
    first_offset: int | None
    last_offset: int | None
    first_timestamp_ms: int | None
    last_timestamp_ms: int | None
    min_timestamp_ms: int | None
    max_timestamp_ms: int | None
    file: str
    file_bytes: int = Field(ge=0)
    file_sha256: str
    aged_out: bool = Field(default=False, description=(
        "the log no longer held these offsets when the archiver reached them: a gap kept in "
        "the chain so that `verify` names it for ever"))
    prev_manifest_sha256: str | None = Field(
        description="SHA-256 of the partition's previous manifest as stored; None for the first")

    def to_bytes(self) -> bytes:
        """The manifest as stored: canonical JSON, so its hash is its bytes' hash."""
        return (json.dumps(self.model_dump(mode="json"), sort_keys=True,
                           separators=(",", ":")) + "\n").encode()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def segment_stem(start_offset: int) -> str:
    return f"{start_offset:0{OFFSET_DIGITS}d}"


def partition_dir(topic: str, partition: int) -> str:
    return f"{topic}/p{partition:04d}"


def parse_stem(name: str) -> int | None:
    """The start offset a file name says, or None for a name that is not a segment's."""
    for suffix in (MANIFEST_SUFFIX, PARQUET_SUFFIX):
        if name.endswith(suffix):
            stem = name[: -len(suffix)]
            return int(stem) if len(stem) == OFFSET_DIGITS and stem.isdigit() else None
    return None


def query_columns(values: pa.Array) -> list[pa.Array]:
    """For each value, its top-level `type`, `table_id`, `round_id` and `player_id` where it
    is a JSON object that has them as strings, else null (any topic: none is special).
    Extracted by DuckDB's JSON reader, vectorised: a third of the cost of `json.loads`."""
    con = duckdb.connect()
    try:
        con.register("segment", pa.table({"n": pa.array(range(len(values)), pa.int64()),
                                          "value": values}))
        picks = ", ".join(f"CASE WHEN json_type(j, '$.{f}') = 'VARCHAR' "
                          f"THEN json_extract_string(j, '$.{f}') END AS {f}" for f in QUERY_FIELDS)
        table = con.sql(f"SELECT {picks} FROM (SELECT n, try(CAST(try(decode(value)) AS JSON)) "
                        "AS j FROM segment) ORDER BY n").to_arrow_table()
    finally:
        con.close()
    return [table.column(f).combine_chunks().cast(pa.string()) for f in QUERY_FIELDS]


def encode_segment(topic: str, partition: int, start_offset: int, end_offset: int,
                   records: Sequence[ArchivedRecord], prev_manifest: bytes | None
                   ) -> tuple[bytes, Manifest]:
    """(the Parquet file's bytes, its manifest) for the records at `[start, end)`."""
    if end_offset < start_offset:
        raise ArchiveFormatError(f"{topic}[{partition}]: end offset {end_offset} before "
                                 f"start {start_offset}")
    last = start_offset - 1
    for rec in records:
        if rec.partition != partition or rec.topic != topic:
            raise ArchiveFormatError(f"record {rec.topic}[{rec.partition}]@{rec.offset} in a "
                                     f"segment of {topic}[{partition}]")
        if not last < rec.offset < end_offset:
            raise ArchiveFormatError(f"{topic}[{partition}]: offset {rec.offset} out of order "
                                     f"or outside [{start_offset}, {end_offset})")
        last = rec.offset
    values = pa.array([r.value for r in records], pa.binary())
    table = pa.table({
        "partition": pa.array([partition] * len(records), pa.int32()),
        "offset": pa.array([r.offset for r in records], pa.int64()),
        "timestamp_ms": pa.array([r.timestamp for r in records], pa.int64()),
        "key": pa.array([r.key for r in records], pa.binary()),
        "value": values,
        "headers": pa.array([[{"key": k, "value": v} for k, v in r.headers] for r in records],
                            SCHEMA.field("headers").type),
        **dict(zip(QUERY_FIELDS, query_columns(values), strict=True)),
    }, schema=SCHEMA)
    sink = io.BytesIO()
    # rows sorted by player, table and round (the `offset` column keeps the log's order), in
    # small row groups: a query for one player or round skips, by the row groups' min/max
    # statistics, all but a few of each file's row groups
    table = table.sort_by([(name, "ascending") for name in SORT_ORDER])
    pq.write_table(table, sink, compression="zstd", row_group_size=ROW_GROUP_ROWS)
    data = sink.getvalue()
    stamps = [r.timestamp for r in records]
    manifest = Manifest(
        topic=topic, partition=partition, start_offset=start_offset, end_offset=end_offset,
        record_count=len(records),
        first_offset=records[0].offset if records else None,
        last_offset=records[-1].offset if records else None,
        first_timestamp_ms=stamps[0] if stamps else None,
        last_timestamp_ms=stamps[-1] if stamps else None,
        min_timestamp_ms=min(stamps) if stamps else None,
        max_timestamp_ms=max(stamps) if stamps else None,
        file=segment_stem(start_offset) + PARQUET_SUFFIX,
        file_bytes=len(data), file_sha256=sha256(data),
        prev_manifest_sha256=sha256(prev_manifest) if prev_manifest is not None else None)
    return data, manifest


def decode_segment(topic: str, data: bytes) -> list[ArchivedRecord]:
    """The records of a segment file, in offset order."""
    table = pq.read_table(io.BytesIO(data)).sort_by("offset")
    cols = table.select(["partition", "offset", "timestamp_ms", "key", "value", "headers"]
                        ).to_pydict()
    return [ArchivedRecord(topic, p, o, t, k, v,
                           tuple((h["key"], h["value"]) for h in (hs or ())))
            for p, o, t, k, v, hs in zip(cols["partition"], cols["offset"], cols["timestamp_ms"],
                                         cols["key"], cols["value"], cols["headers"],
                                         strict=True)]


def segment_offsets(data: bytes) -> list[int]:
    """Just the offsets a segment file holds, in log order (what `verify` checks against its
    manifest)."""
    column = pq.read_table(io.BytesIO(data), columns=["offset"]).column("offset")
    return sorted(int(x) for x in column.to_pylist())
