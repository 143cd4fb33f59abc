"""Snapshots of an own log's folded partitions: recovery time bounded, the log still the truth.

A worker that recovers a partition on an empty disk folds its own log from offset 0
(`kernel.OwnLog.recover`): the time grows with the log. A service that opts in also writes,
every so often, a **snapshot** of a partition's folded state (`own_log.PartitionState`) to
a compacted topic (`<own log>.snapshots`, e.g. `wallet.ledger.snapshots`), stamped with the
log offset it reflects. A worker recovering the partition then starts from the newest
snapshot that it can verify against the log and folds only the log after the stamp.

A snapshot is a cache, never a second truth (docs/decisions/snapshots.md):
- **Format.** Chunks of at most `CHUNK_BYTES` (key `<partition>/<snapshot id>/c/<n>`),
  then a manifest (key `<partition>/m/<snapshot id>`): the chunks' count and sha256, and
  the stamp (every field of `PartitionState` but `kv`, through `SPECIAL_FIELDS`). A chunk
  is lines: `<key>\\t<value JSON>` for the state's values (the service's `Codec`), and
  `#<field>\\t<item JSON>` for the items of a collection field (`unpublished`, `held`:
  entries, dumped and parsed as the service's entries).
- **Verification.** A manifest is used only if every chunk is there with its sha256, and
  the own log's (last) entry at the stamped head offset has the stamped head id: else the
  snapshot is not a fold of this log (a lost branch, a topic recreated, a bug) and the next
  older one is tried, then the full fold from 0. Any doubt: the full fold.
- **Fencing.** A snapshot is written only from a state that folded verified entries (the
  kernel's state after a batch that landed as chained, or a recovery), so even a zombie's
  snapshot is a fold of a prefix of the log: it can cost time (an older stamp), never
  money; the head id check refuses one whose head the log does not have.
- **Compaction.** Once a newer manifest is acknowledged, the writer tombstones the chunks
  and manifests of the partition's snapshots it knows of, and the records no snapshot
  needs (a write a crash cut short): about one or two snapshots a partition are kept.

The coverage of `PartitionState` is generic and loud: every dataclass field but `kv` must
have an entry in `SPECIAL_FIELDS`, checked at import (`check_coverage`), so a field added
later cannot be silently left out of the snapshot.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import itertools
import json
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from pydantic import BaseModel, TypeAdapter

from services.infra.own_log import Logged, PartitionState, entries_of
from shared.models import FrozenModel
from shared.topics import snapshot_topic

log = logging.getLogger(__name__)

CHUNK_BYTES = 256 * 1024  # a chunk's most bytes (Kafka's default record limit is 1 MB)
MANIFEST_MAX_BYTES = 768 * 1024
FIELD_MARK = "#"  # a line of a collection field's item, never a key of the state's values


class SnapshotError(Exception):
    """A state that cannot be written as a snapshot, or a snapshot that cannot be read:
    the snapshot is skipped (writing) or not used (reading), never guessed."""


class SnapshotCoverageError(SnapshotError):
    """A field of `PartitionState` with no known serialisation in `SPECIAL_FIELDS`."""


# ----------------------------------------------------------------- the service's codec

class Codec(Protocol):
    """How a service's folded values and entries are written to a snapshot and read back."""

    def dump_value(self, key: str, value: Any) -> bytes:
        """One value of the state, as JSON."""
        ...

    def load_values(self, keys: Sequence[str], raw: Sequence[bytes]) -> list[Any]:
        """The values of `keys` from their JSON (one call for many: bulk parsing)."""
        ...

    def dump_entry(self, entry: Any) -> bytes:
        ...

    def load_entry(self, raw: bytes) -> Any:
        ...


def key_prefix(key: str) -> str:
    """`a/p1` -> `a/`: what kind of value a key holds."""
    cut = key.find("/")
    return key if cut < 0 else key[:cut + 1]


class PydanticCodec:
    """A `Codec` for a state whose values are pydantic models (or anything a `TypeAdapter`
    takes, such as `int`), by key prefix (`key_prefix`): `{"a/": Account, "x/": int}`.
    A key with no known prefix raises: a value never travels unchecked."""

    def __init__(self, entry: type[BaseModel], values: Mapping[str, Any]) -> None:
        self.entry = entry
        self.values = dict(values)
        self._one = {p: TypeAdapter(t) for p, t in values.items()}
        self._many = {p: TypeAdapter(list[t]) for p, t in values.items()}  # type: ignore[valid-type]

    def _prefix(self, key: str) -> str:
        prefix = key_prefix(key)
        if prefix not in self._one:
            raise SnapshotError(f"no codec for the key {key!r} (prefix {prefix!r}; known: "
                                f"{sorted(self._one)})")
        return prefix

    def dump_value(self, key: str, value: Any) -> bytes:
        return self._one[self._prefix(key)].dump_json(value)

    def load_values(self, keys: Sequence[str], raw: Sequence[bytes]) -> list[Any]:
        out: list[Any] = [None] * len(keys)
        groups: dict[str, list[int]] = {}
        for i, key in enumerate(keys):
            groups.setdefault(self._prefix(key), []).append(i)
        for prefix, at in groups.items():
            parsed = self._many[prefix].validate_json(b"[" + b",".join(raw[i] for i in at) + b"]")
            for i, value in zip(at, parsed, strict=True):
                out[i] = value
        return out

    def dump_entry(self, entry: Any) -> bytes:
        return entry.model_dump_json().encode()

    def load_entry(self, raw: bytes) -> Any:
        return self.entry.model_validate_json(raw)


# ----------------------------------------------------------------- every other field

@dataclass(frozen=True)
class InManifest:
    """A field small enough for the manifest: to and from a JSON value."""

    dump: Callable[[Any, Codec], Any]
    load: Callable[[Any, Codec], Any]


@dataclass(frozen=True)
class InChunks:
    """A collection field that may be large: one chunk line per item (JSON)."""

    items: Callable[[Any, Codec], Iterable[bytes]]
    load: Callable[[list[bytes], Codec], Any]


FieldCodec = InManifest | InChunks


def _checked(kind: type | tuple[type, ...]) -> Callable[[Any, Codec], Any]:
    def load(data: Any, _codec: Codec) -> Any:
        if not isinstance(data, kind) or isinstance(data, bool):
            raise SnapshotError(f"expected {kind}, found {data!r}")
        return data

    return load


def _same(value: Any, _codec: Codec) -> Any:
    return value


INT = InManifest(_same, _checked(int))
STR = InManifest(_same, _checked(str))
# {(topic, partition): offset} -> [[topic, partition, offset], ...]
INPUT_CHECKPOINTS = InManifest(
    lambda v, _c: [[t, p, o] for (t, p), o in sorted(v.items())],
    lambda d, _c: {(str(t), int(p)): int(o) for t, p, o in d})
# a worker's own memory, not the log's word: not kept (a restored state starts without it)
NOT_KEPT = InManifest(lambda _v, _c: None, lambda _d, _c: {})


def _entries_at(value: Any, codec: Codec) -> Iterator[bytes]:
    for offset, entry in value:
        yield b"[%d,%s]" % (offset, codec.dump_entry(entry))


def _load_entries_at(items: list[bytes], codec: Codec) -> list[tuple[int, Any]]:
    out = []
    for item in items:
        head, _, rest = item.partition(b",")
        if not head.startswith(b"[") or not rest.endswith(b"]"):
            raise SnapshotError(f"not an [offset, entry] item: {item[:80]!r}")
        out.append((int(head[1:]), codec.load_entry(rest[:-1])))
    return out


ENTRIES_AT_OFFSETS = InChunks(_entries_at, _load_entries_at)  # list[tuple[int, E]]


def _dt(text: Any) -> datetime:
    if not isinstance(text, str):
        raise SnapshotError(f"expected an ISO datetime, found {text!r}")
    return datetime.fromisoformat(text)


# The fields of a state with a clock (own_log's expiry):
DATETIME = InManifest(lambda v, _c: None if v is None else v.isoformat(),
                      lambda d, _c: None if d is None else _dt(d))
DEADLINE_QUEUE = InChunks(  # deque[tuple[datetime, str]], in order
    lambda v, _c: (json.dumps([at.isoformat(), key]).encode() for at, key in v),
    lambda items, _c: deque((_dt(at), str(key)) for at, key in map(json.loads, items)))
EXPIRY_TIMES = InChunks(  # dict[str, datetime]
    lambda v, _c: (json.dumps([key, at.isoformat()]).encode() for key, at in v.items()),
    lambda items, _c: {str(key): _dt(at) for key, at in map(json.loads, items)})
EXPIRY_GROUPS = InChunks(  # dict[str, list[str]]: a group -> its other keys
    lambda v, _c: (json.dumps([group, keys]).encode() for group, keys in v.items()),
    lambda items, _c: {str(group): [str(k) for k in keys]
                       for group, keys in map(json.loads, items)})

KV_FIELD = "kv"  # the state's values: the chunks' `<key>\t<value>` lines, by the Codec
# Every field of PartitionState but `kv`, and how it is written. A field missing here fails
# at import (`check_coverage`); add its line when the field is added.
SPECIAL_FIELDS: dict[str, FieldCodec] = {
    "partition": INT,
    "head": INT,
    "head_id": STR,
    "end": INT,
    "inputs": INPUT_CHECKPOINTS,
    "passed": NOT_KEPT,
    "published_through": INT,
    "unpublished": ENTRIES_AT_OFFSETS,
    "void": INT,
    "held": ENTRIES_AT_OFFSETS,
    "clock": DATETIME,
    "deadlines": DEADLINE_QUEUE,
    "expires": EXPIRY_TIMES,
    "members": EXPIRY_GROUPS,
}


def check_coverage(state_type: type = PartitionState,
                   table: Mapping[str, FieldCodec] = SPECIAL_FIELDS) -> None:
    """Every field of `state_type` is written by a snapshot: `kv` by the codec, the rest by
    `table`. Raises `SnapshotCoverageError` naming a field nobody knows how to write (or a
    table line naming a field the state does not have)."""
    names = {f.name for f in dataclasses.fields(state_type)}
    missing = names - {KV_FIELD} - set(table)
    stale = set(table) - names
    if missing or stale or KV_FIELD not in names:
        raise SnapshotCoverageError(
            f"{state_type.__name__}: no snapshot serialisation for field(s) {sorted(missing)}"
            f"{f'; SPECIAL_FIELDS names unknown field(s) {sorted(stale)}' if stale else ''}: "
            "add each to services/infra/snapshots.py SPECIAL_FIELDS")


check_coverage()


# ----------------------------------------------------------------- the manifest

class SnapshotManifest(FrozenModel):
    """What a snapshot is: its chunks (count, sha256 of each) and its stamp (every field of
    the state but its values)."""


    format: Literal[1] = 1  # the snapshot format's version
    topic: str  # the own log this is a snapshot of
    partition: int
    snapshot_id: str
    writer: str
    chunks: int
    sha256: list[str]
    size_bytes: int
    values: int  # the state's values (`kv` lines)
    fields: dict[str, Any]  # InManifest fields
    items: dict[str, int]  # InChunks fields: their item counts
    taken_at: datetime

    @property
    def head(self) -> int:
        return int(self.fields["head"])

    @property
    def head_id(self) -> str:
        return str(self.fields["head_id"])

    @property
    def end(self) -> int:
        return int(self.fields["end"])

    def chunk_key(self, n: int) -> bytes:
        return chunk_key(self.partition, self.snapshot_id, n)

    @property
    def key(self) -> bytes:
        return manifest_key(self.partition, self.snapshot_id)


def chunk_key(partition: int, snapshot_id: str, n: int) -> bytes:
    return f"{partition}/{snapshot_id}/c/{n}".encode()


def manifest_key(partition: int, snapshot_id: str) -> bytes:
    return f"{partition}/m/{snapshot_id}".encode()


# ----------------------------------------------------------------- encode, decode

def copy_state(state: PartitionState[Any]) -> PartitionState[Any]:
    """A consistent copy to encode while the live state moves on: the fold replaces values,
    never mutates them, so a shallow copy of each container is enough."""
    copied = {}
    for f in dataclasses.fields(state):
        value = getattr(state, f.name)
        if isinstance(value, dict | list | deque | set):
            value = value.copy()
        copied[f.name] = value
    return type(state)(**copied)


@dataclass
class Encoded:
    chunks: list[bytes]
    fields: dict[str, Any]
    items: dict[str, int]
    values: int

    @property
    def size_bytes(self) -> int:
        return sum(len(c) for c in self.chunks)


def encode(state: PartitionState[Any], codec: Codec, chunk_bytes: int = CHUNK_BYTES,
           table: Mapping[str, FieldCodec] = SPECIAL_FIELDS) -> Encoded:
    """The state as chunks of at most `chunk_bytes` (blocking: run it in a thread)."""
    check_coverage(type(state), table)
    chunks: list[bytes] = []
    current: list[bytes] = []
    size = 0

    def add(line: bytes) -> None:
        nonlocal size
        if len(line) > chunk_bytes:
            raise SnapshotError(f"one line of {len(line)} bytes is over a chunk's "
                                f"{chunk_bytes}: {line[:80]!r}")
        if size + len(line) > chunk_bytes:
            chunks.append(b"".join(current))
            current.clear()
            size = 0
        current.append(line)
        size += len(line)

    fields: dict[str, Any] = {}
    items: dict[str, int] = {}
    for f in dataclasses.fields(state):
        if f.name == KV_FIELD:
            continue
        how = table[f.name]
        value = getattr(state, f.name)
        if isinstance(how, InManifest):
            fields[f.name] = how.dump(value, codec)
            continue
        mark = f"{FIELD_MARK}{f.name}\t".encode()
        count = 0
        for item in how.items(value, codec):
            add(mark + item + b"\n")
            count += 1
        items[f.name] = count
    kv: dict[str, Any] = getattr(state, KV_FIELD)
    for key, value in kv.items():
        if key.startswith(FIELD_MARK) or "\t" in key or "\n" in key:
            raise SnapshotError(f"a key a snapshot cannot hold: {key!r}")
        add(key.encode() + b"\t" + codec.dump_value(key, value) + b"\n")
    if current:
        chunks.append(b"".join(current))
    return Encoded(chunks, fields, items, len(kv))


def decode(manifest: SnapshotManifest, chunks: Sequence[bytes], codec: Codec,
           state_type: type = PartitionState,
           table: Mapping[str, FieldCodec] = SPECIAL_FIELDS) -> PartitionState[Any]:
    """The state a manifest and its (verified) chunks describe; SnapshotError on anything
    that does not add up (a field missing or unknown, a count that differs)."""
    check_coverage(state_type, table)
    wanted = {f.name for f in dataclasses.fields(state_type)} - {KV_FIELD}
    in_manifest = {n for n in wanted if isinstance(table[n], InManifest)}
    if set(manifest.fields) != in_manifest or set(manifest.items) != wanted - in_manifest:
        raise SnapshotError(f"snapshot {manifest.snapshot_id} carries fields "
                            f"{sorted(manifest.fields)} + {sorted(manifest.items)}, this "
                            f"state has {sorted(wanted)}")
    raw_items: dict[str, list[bytes]] = {n: [] for n in manifest.items}
    kv: dict[str, Any] = {}
    for chunk in chunks:
        keys: list[str] = []
        raw: list[bytes] = []
        for line in chunk.split(b"\n"):
            if not line:
                continue
            left, tab, right = line.partition(b"\t")
            if not tab:
                raise SnapshotError(f"a line with no tab: {line[:80]!r}")
            if left.startswith(b"#"):
                name = left[1:].decode()
                if name not in raw_items:
                    raise SnapshotError(f"an item of an unknown field {name!r}")
                raw_items[name].append(right)
            else:
                keys.append(left.decode())
                raw.append(right)
        for key, value in zip(keys, codec.load_values(keys, raw), strict=True):
            kv[key] = value
    if len(kv) != manifest.values:
        raise SnapshotError(f"snapshot {manifest.snapshot_id}: {len(kv)} values, the "
                            f"manifest says {manifest.values}")
    values: dict[str, Any] = {KV_FIELD: kv}
    for name in wanted:
        how = table[name]
        if isinstance(how, InManifest):
            values[name] = how.load(manifest.fields[name], codec)
        else:
            if len(raw_items[name]) != manifest.items[name]:
                raise SnapshotError(f"snapshot {manifest.snapshot_id}: {name} has "
                                    f"{len(raw_items[name])} items, the manifest says "
                                    f"{manifest.items[name]}")
            values[name] = how.load(raw_items[name], codec)
    state: PartitionState[Any] = state_type(**values)
    return state


def build_manifest(topic: str, partition: int, snapshot_id: str, writer: str,
                   encoded: Encoded, digests: list[str] | None = None) -> SnapshotManifest:
    return SnapshotManifest(
        topic=topic, partition=partition, snapshot_id=snapshot_id, writer=writer,
        chunks=len(encoded.chunks),
        sha256=digests if digests is not None else [sha256(c) for c in encoded.chunks],
        size_bytes=encoded.size_bytes, values=encoded.values, fields=encoded.fields,
        items=encoded.items, taken_at=datetime.now(UTC))


def sha256(chunk: bytes) -> str:
    return hashlib.sha256(chunk).hexdigest()


# ----------------------------------------------------------------- Kafka, behind a protocol

KeyedRecord = tuple[int, bytes | None, bytes | None]  # offset, key, value (None: tombstone)


class SnapshotIO(Protocol):
    """The snapshot topic's reads and writes (`kernel.KafkaLogIO` in a worker; an in-memory
    double in the unit tests), and the own log's reads (`kernel.LogIO.read`)."""

    async def send_keyed(self, topic: str, partition: int,
                         records: Sequence[tuple[bytes, bytes | None]]) -> list[int]:
        """Append keyed records (a None value: a tombstone) to the partition; their offsets,
        once every one is acknowledged."""
        ...

    async def read_keyed(self, topic: str, partition: int) -> list[KeyedRecord]:
        """Every record of the partition, from its start to its end."""
        ...

    async def read(self, topic: str, partition: int, start: int) -> tuple[list[Logged], int]:
        ...


@dataclass
class Restored:
    """What a recovery found: the state (None: fold from 0), the snapshot it came from, why
    the others were refused, and the own log's records it read from the stamped head on
    (the tail still to fold: offsets >= state.end)."""

    state: PartitionState[Any] | None = None
    manifest: SnapshotManifest | None = None
    refused: list[str] = field(default_factory=list)
    records: list[Logged] = field(default_factory=list)
    end: int = 0


@dataclass
class Taken:
    """A written snapshot's figures."""

    manifest: SnapshotManifest
    copy_s: float
    encode_s: float
    send_s: float
    tombstones: int


@dataclass
class _Progress:
    last_end: int = 0
    entries: int = 0  # entries folded since the last snapshot (a pack's each counted)
    last_at: float = field(default_factory=time.monotonic)
    running: asyncio.Task[Any] | None = None
    known: dict[str, SnapshotManifest] = field(default_factory=dict)  # by snapshot id
    # keys of records no usable snapshot needs (chunks of a write a crash cut short, before
    # its manifest; what is not a manifest): tombstoned by the next write
    garbage: set[bytes] = field(default_factory=set)


class SnapshotStore:
    """One service's snapshots of its own log's partitions: when one is due, writing it,
    and reading back the newest one the log confirms."""

    def __init__(self, own_log_topic: str, codec: Codec, writer: str,
                 every_entries: int = 50_000, every_seconds: float = 300.0,
                 chunk_bytes: int = CHUNK_BYTES, topic: str | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.own_log_topic = own_log_topic
        self.topic = topic or snapshot_topic(own_log_topic)
        self.codec = codec
        self.writer = writer
        self.every_entries = every_entries
        self.every_seconds = every_seconds
        self.chunk_bytes = chunk_bytes
        self.clock = clock
        self._ids = itertools.count(1)
        self._progress: dict[int, _Progress] = {}
        self.taken: deque[Taken] = deque(maxlen=16)  # the last ones written (figures, tests)
        # per partition, the last recovery's snapshot (None: folded from 0) and refusals
        self.restores: dict[int, tuple[SnapshotManifest | None, list[str]]] = {}

    def _of(self, partition: int) -> _Progress:
        progress = self._progress.get(partition)
        if progress is None:
            progress = self._progress[partition] = _Progress(last_at=self.clock())
        return progress

    def folded(self, partition: int, entries: int) -> None:
        """`entries` more folded into the partition's state since its last snapshot."""
        self._of(partition).entries += entries

    def due(self, state: PartitionState[Any]) -> bool:
        """Enough folded since the last snapshot (entries, not records: a record may be a
        pack of them; or time with anything new), and none being written."""
        progress = self._of(state.partition)
        if progress.running is not None and not progress.running.done():
            return False
        if state.head < 0 or state.end <= progress.last_end:
            return False
        return (progress.entries >= self.every_entries
                or self.clock() - progress.last_at >= self.every_seconds)

    def start(self, io: SnapshotIO, state: PartitionState[Any]) -> asyncio.Task[Taken | None]:
        """Write a snapshot of `state` in the background: copied now (a consistent copy,
        between batches), encoded in a thread, sent, then the older ones tombstoned."""
        progress = self._of(state.partition)
        copy_began = time.perf_counter()
        copied = copy_state(state)
        copy_s = time.perf_counter() - copy_began
        progress.last_end, progress.last_at, progress.entries = copied.end, self.clock(), 0
        task = asyncio.ensure_future(self._write_logged(io, copied, copy_s))
        progress.running = task
        return task

    async def _write_logged(self, io: SnapshotIO, state: PartitionState[Any], copy_s: float
                            ) -> Taken | None:
        try:
            return await self.write(io, state, copy_s)
        except Exception as error:  # noqa: BLE001 - a snapshot only saves time: logged
            log.warning("%s[%d]: snapshot not written (%r); recovery folds more of the log "
                        "until the next one", self.own_log_topic, state.partition, error)
            return None

    async def write(self, io: SnapshotIO, state: PartitionState[Any], copy_s: float = 0.0
                    ) -> Taken:
        """Write a snapshot of `state` (a copy nobody else mutates): its chunks, then once
        they are acknowledged its manifest, then tombstones for the other snapshots this
        store knows of for the partition."""
        began = time.perf_counter()
        encoded, digests = await asyncio.to_thread(self._encode, state)
        encode_s = time.perf_counter() - began
        snapshot_id = f"{self.writer}.{next(self._ids)}"
        manifest = build_manifest(self.own_log_topic, state.partition, snapshot_id,
                                  self.writer, encoded, digests)
        body = manifest.model_dump_json().encode()
        if len(body) > MANIFEST_MAX_BYTES:
            raise SnapshotError(f"a manifest of {len(body)} bytes: move a field to the chunks")
        began = time.perf_counter()
        batch = 64  # chunks in flight at once (16 MB)
        for first in range(0, len(encoded.chunks), batch):
            await io.send_keyed(self.topic, state.partition, [
                (manifest.chunk_key(n), encoded.chunks[n])
                for n in range(first, min(first + batch, len(encoded.chunks)))])
        await io.send_keyed(self.topic, state.partition, [(manifest.key, body)])
        send_s = time.perf_counter() - began
        progress = self._of(state.partition)
        older = [m for m in progress.known.values() if m.snapshot_id != snapshot_id]
        tombstones: list[tuple[bytes, bytes | None]] = []
        for old in older:
            tombstones += [(old.chunk_key(n), None) for n in range(old.chunks)]
            tombstones.append((old.key, None))
        garbage = set(progress.garbage)
        tombstones += [(key, None) for key in sorted(garbage)]
        if tombstones:
            await io.send_keyed(self.topic, state.partition, tombstones)
        progress.known = {snapshot_id: manifest}
        progress.garbage -= garbage
        taken = Taken(manifest, copy_s, encode_s, send_s, len(tombstones))
        self.taken.append(taken)
        log.info("%s[%d]: snapshot %s at offset %d: %d values, %d chunks, %.1f MB "
                 "(copy %.3f s, encode %.1f s, send %.1f s; %d tombstones)",
                 self.own_log_topic, state.partition, snapshot_id, state.end, encoded.values,
                 len(encoded.chunks), encoded.size_bytes / 1e6, copy_s, encode_s, send_s,
                 len(tombstones))
        return taken

    def _encode(self, state: PartitionState[Any]) -> tuple[Encoded, list[str]]:
        encoded = encode(state, self.codec, self.chunk_bytes)
        return encoded, [sha256(c) for c in encoded.chunks]

    async def restore(self, io: SnapshotIO, partition: int, parse_entry: Callable[[bytes], Any],
                      state_type: type = PartitionState) -> Restored:
        """The newest snapshot of the partition that is whole and that the own log confirms
        (its entry at the stamped head offset has the stamped head id), decoded; with the
        log's records from that head on. None (fold from 0) when there is none."""
        found = Restored()
        records = await io.read_keyed(self.topic, partition)
        chunks: dict[bytes, bytes] = {}
        manifests: dict[bytes, tuple[int, bytes]] = {}
        for offset, key, value in records:
            if key is None:
                continue
            if value is None:
                chunks.pop(key, None)
                manifests.pop(key, None)
            elif key.startswith(f"{partition}/m/".encode()):
                manifests[key] = (offset, value)
            else:
                chunks[key] = value
        del records
        candidates: list[tuple[int, int, SnapshotManifest]] = []
        progress = self._of(partition)
        for key, (offset, value) in manifests.items():
            try:
                manifest = SnapshotManifest.model_validate_json(value)
            except ValueError as error:
                found.refused.append(f"{key!r}: not a manifest ({error})")
                progress.garbage.add(key)
                continue
            if (manifest.topic, manifest.partition) != (self.own_log_topic, partition) \
                    or manifest.key != key:
                found.refused.append(f"{key!r}: names {manifest.topic}[{manifest.partition}]")
                progress.garbage.add(key)
                continue
            candidates.append((manifest.end, offset, manifest))
        progress.known = {m.snapshot_id: m for _, _, m in candidates}
        owned = {m.chunk_key(n) for _, _, m in candidates for n in range(m.chunks)}
        progress.garbage |= set(chunks) - owned
        for _, _, manifest in sorted(candidates, key=lambda c: (c[0], c[1]), reverse=True):
            why = await self._try(io, manifest, chunks, parse_entry, state_type, found)
            if why is None:
                progress.last_end, progress.last_at, progress.entries = (
                    manifest.end, self.clock(), 0)
                self.restores[partition] = (manifest, list(found.refused))
                return found
            found.refused.append(f"{manifest.snapshot_id}: {why}")
            log.warning("%s[%d]: snapshot %s not used: %s", self.own_log_topic, partition,
                        manifest.snapshot_id, why)
        found.records, found.end = [], 0
        self.restores[partition] = (None, list(found.refused))
        return found

    async def _try(self, io: SnapshotIO, manifest: SnapshotManifest,
                   chunks: Mapping[bytes, bytes], parse_entry: Callable[[bytes], Any],
                   state_type: type, found: Restored) -> str | None:
        """Why `manifest` cannot be used, or None (and `found` filled in)."""
        if manifest.head < 0:
            return "a snapshot of nothing"
        if len(manifest.sha256) != manifest.chunks:
            return f"{len(manifest.sha256)} digests for {manifest.chunks} chunks"
        parts: list[bytes] = []
        for n in range(manifest.chunks):
            chunk = chunks.get(manifest.chunk_key(n))
            if chunk is None:
                return f"chunk {n} of {manifest.chunks} is missing"
            if sha256(chunk) != manifest.sha256[n]:
                return f"chunk {n} does not match its sha256"
            parts.append(chunk)
        log_records, end = await io.read(self.own_log_topic, manifest.partition, manifest.head)
        if not log_records or log_records[0].offset != manifest.head:
            return f"the log holds no record at the stamped head offset {manifest.head}"
        try:
            at_head = entries_of(log_records[0].value, parse_entry)[-1].entry_id
        except Exception as error:  # noqa: BLE001 - not an entry: this snapshot is not ours
            return f"the log's record at {manifest.head} is not an entry ({error!r})"
        if at_head != manifest.head_id:
            return (f"the log's entry at {manifest.head} is {at_head!r}, the snapshot's head "
                    f"{manifest.head_id!r} (a zombie's, or a lost branch's)")
        if end < manifest.end:
            return f"the log ends at {end}, before the snapshot's end {manifest.end}"
        try:
            state = await asyncio.to_thread(decode, manifest, parts, self.codec, state_type)
        except (SnapshotError, ValueError, KeyError, TypeError) as error:
            return f"does not decode ({error})"
        if state.partition != manifest.partition:
            return f"a state of partition {state.partition} under {manifest.partition}'s key"
        found.state, found.manifest = state, manifest
        found.records, found.end = log_records, end
        return None
