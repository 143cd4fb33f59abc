"""A service's own log: its state is the fold of its entries, and nothing else.

Pure (no Kafka, no clock): the kernel (`services.infra.kernel`) does the I/O,
the crash simulator drives the same functions.

One partition of a service's log is written by the worker that owns the same partition of
its input. Each entry names the input record it came from (`source`), so a worker resumes
its input after the last offset its own log says it applied (the consumer group's
committed offset only saves time), and each entry is chained: it has an id unique to its
writer's life (`entry_id`), and `prev` is the id of the partition's previous *valid* entry
("" for the first). An entry whose `prev` is anything else is void, and skipped by every
fold: it was written by a worker that lost the partition and has not noticed yet (a
zombie), or by the new owner before it had read the zombie's last entries. Either way the
fold resolves the two writers the same way everywhere, and a writer answers for an entry
only once it has seen the entry land right after what it had folded
(`Batch.landed_as_chained`), or, after a lost race, fold as valid: no answer given to a
client is ever contradicted by the log (docs/decisions/ledger.md). (The chain is by ids,
not by predicted offsets: a batch shifted by a rival's records could otherwise have a
later entry's predicted `prev` fall on an earlier valid entry of its own, and fold an
entry decided on a state the log never had; the crash simulator found that.)

One input record may write several entries (`source.part` 0, 1, ..., the last one marked
`source.last`): they take effect together when the last one is folded, and a record whose
entries a crash cut short changed nothing (its held entries are dropped when the record,
decided again, starts over at part 0).

A batch's entries are sent as packs (`services.infra.packs`: one record holding many of
them, in order), so the entries of one record share its offset: a reader takes them with
`entries_of`, and folds each at that offset.

Entries write absolute values (an account's balance after, a bet's status after), never
increments, so folding an entry over any state of the same keys that is at least as old
gives the same result: a cache can be caught up from any offset it reflects.

The outbox: a service's other outputs (records on other topics) are derived from its
entries (`Fold.outputs`) and published only after the entries are acknowledged and
verified. Each entry carries `published_through`, the offset up to which the writer's
outputs were acknowledged; a worker recovering a partition publishes again the outputs of
every valid entry after it (consumers are idempotent on the outputs' ids).

Expiry (opt-in, pure): a fold that declares an `Expiry` has the keys it names forgotten a
`window` after they were last written, on the fold's own clock, never the wall clock, so
live state and a rebuild forget the same keys at the same entry. The clock is the latest
time of the valid entries folded, an entry's time being its writer's `recorded_at`
clamped to the broker's append time of the record (`appended_at`: the own log's topic
stamps LogAppendTime): no single writer's clock can move it, so one worker whose clock
runs days ahead cannot expire every other writer's idempotency keys (issue 29), and a
broker's clock alone cannot either. A batch decides on the clock its state was folded to
(the broker's time of its own entries is not known before they land): what the batch's
entries expire on landing they expire in the fold, the same for live state and rebuild.
Keys expire in groups (a group is named by one of its keys): an entry that writes any key
of a group extends the whole group. A partition's state then holds what its entries wrote
in the last window (and the keys that never expire), not its whole history
(docs/decisions/wallet-window.md).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, MutableMapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, NamedTuple, Protocol, TypeVar, cast

from services.infra.packs import Packs, records_of
from shared.events.sources import InputRef

Record = tuple[str, bytes, bytes]  # topic, key, value
Writes = MutableMapping[str, Any]
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Logged(NamedTuple):
    """A record as a log holds it: its offset, its value, and when the broker appended it
    (the record's timestamp; LogAppendTime on an own log's topic)."""

    offset: int
    value: bytes
    appended_at: datetime


class Landed(NamedTuple):
    """Where an acknowledged record landed, and when the broker appended it."""

    offset: int
    appended_at: datetime


def broker_time(timestamp_ms: int) -> datetime:
    """A Kafka record timestamp (milliseconds since the epoch) as a UTC datetime, exactly."""
    return EPOCH + timedelta(milliseconds=timestamp_ms)


class SourceRef(Protocol):
    @property
    def topic(self) -> str: ...

    @property
    def partition(self) -> int: ...

    @property
    def offset(self) -> int: ...

    @property
    def last(self) -> bool:
        """The input record's last entry (one record may write several, e.g. a round's
        result settling thousands of bets): only then is the record applied."""
        ...

    @property
    def part(self) -> int:
        """The entry's place among its record's entries (0: the first)."""
        ...


class Entry(Protocol):
    @property
    def entry_id(self) -> str: ...

    @property
    def prev(self) -> str: ...

    @property
    def source(self) -> SourceRef: ...

    @property
    def published_through(self) -> int: ...

    @property
    def also_decided(self) -> Sequence[SourceRef]: ...

    def model_dump_json(self) -> str:
        """The entry as written (JSON)."""
        ...


E = TypeVar("E", bound=Entry)
E_in = TypeVar("E_in", bound=Entry, contravariant=True)


class Fold(Protocol[E_in]):
    """A service's half of its own log: what an entry writes, and what it publishes."""

    def apply(self, kv: Writes, entry: E_in) -> None:
        """Write the entry's facts into `kv`: absolute values, a pure function of the entry."""
        ...

    def outputs(self, entry: E_in) -> list[Record]:
        """The records the entry publishes on other topics (its outbox)."""
        ...


@dataclass
class Expiry(Protocol[E_in]):
    """Which keys an entry writes expire, and after how long (a fold's optional `expiry`)."""

    @property
    def window(self) -> timedelta:
        """A group is forgotten once the fold's clock passes its last write plus this."""
        ...

    def expiring(self, entry: E_in) -> Iterable[tuple[str, str]]:
        """(group, key) for each key the entry writes that expires (a key alone is its own
        group: `(key, key)`); keys it writes and does not name never expire."""
        ...


def expiry_of(fold: Fold[E]) -> Expiry[E] | None:
    """The fold's expiry, if it declares one (a fold without keeps every key)."""
    return cast("Expiry[E] | None", getattr(fold, "expiry", None))


def entry_time(entry: Entry, appended_at: datetime) -> datetime:
    """The entry's time on the fold's clock: when its writer says it was written (every
    entry of a fold with an expiry has a `recorded_at`:
    `shared.events.sources.ChainedEntry`), never later than the broker appended
    it. A writer whose clock runs ahead is held to the broker's; a broker whose clock runs
    ahead, to the writer's."""
    at: datetime = getattr(entry, "recorded_at")  # noqa: B009 - only folds with an expiry
    return min(at, appended_at)


@dataclass
class PartitionState(Generic[E]):
    """One partition of a service's own log, folded: the values its valid entries wrote,
    the last valid entry's offset, where its inputs stand, and its outbox."""

    partition: int
    kv: dict[str, Any] = field(default_factory=dict)
    head: int = -1  # offset of the last valid entry
    head_id: str = ""  # its id
    end: int = 0  # the next offset of the log, as far as this state has seen it
    inputs: dict[tuple[str, int], int] = field(default_factory=dict)  # last applied offset
    # input records this worker decided that wrote nothing, past `inputs` (the last offset
    # per input partition): in the log once an entry carries them (`also_decided`); not a
    # fold of the log, so lost with the state (decided again after a recovery)
    passed: dict[tuple[str, int], int] = field(default_factory=dict)
    published_through: int = -1
    unpublished: list[tuple[int, E]] = field(default_factory=list)  # valid, maybe unpublished
    void: int = 0  # void entries seen (a zombie's, or a writer's that lost a race)
    # valid entries of a record whose last entry is not in the log yet: applied with it
    held: list[tuple[int, E]] = field(default_factory=list)
    # expiry (only for a fold with one), all bounded by what the last window wrote:
    clock: datetime | None = None  # the latest `entry_time` of the valid entries folded
    # (deadline, group) in the order written; a group rewritten later is in it again
    deadlines: deque[tuple[datetime, str]] = field(default_factory=deque)
    expires: dict[str, datetime] = field(default_factory=dict)  # group -> its deadline
    members: dict[str, list[str]] = field(default_factory=dict)  # group -> its other keys

    def resume_at(self, topic: str, partition: int) -> int:
        """The first offset of an input partition that this log has not applied (nor this
        worker decided, writing nothing)."""
        key = (topic, partition)
        return max(self.inputs.get(key, -1), self.passed.get(key, -1)) + 1

    def pass_over(self, records: Iterable[Any]) -> None:
        """Records (messages: topic, partition, offset) decided and answered that wrote
        nothing: the next batch does not read them again."""
        for m in records:
            key = (m.topic, m.partition)
            self.passed[key] = max(m.offset, self.passed.get(key, -1))

    def not_logged(self) -> tuple[InputRef, ...]:
        """The records decided that wrote nothing and that the log does not cover yet: the
        next entry carries them (`also_decided`)."""
        return tuple(InputRef(topic=t, partition=p, offset=o)
                     for (t, p), o in sorted(self.passed.items())
                     if o > self.inputs.get((t, p), -1))

    def applied(self, topic: str, partition: int, offset: int) -> bool:
        return offset < self.resume_at(topic, partition)


def fold_entry(state: PartitionState[E], offset: int, entry: E, fold: Fold[E],
               appended_at: datetime | None = None) -> bool:
    """Fold the entry found at `offset`, appended by the broker at `appended_at`, into
    `state`; False (and nothing written) if it is void. The one fold: live state, recovery
    and `croupier rebuild` all go through it. A fold with an expiry needs `appended_at`
    (its clock: `entry_time`); one without has no clock, and ignores it."""
    state.end = max(state.end, offset + 1)
    # (a pack's entries share their record's offset: `offset == state.head` for its later ones)
    if entry.prev != state.head_id or offset < state.head:
        state.void += 1
        return False
    state.head = offset
    state.head_id = entry.entry_id
    if entry.published_through > state.published_through:
        state.published_through = entry.published_through
        state.unpublished = [(o, e) for o, e in state.unpublished
                             if o > state.published_through]
    source = entry.source
    if source.part == 0 or not _continues(state.held, source):
        state.held = []  # a record a crash cut short: it changed nothing, and is decided again
    if source.part != len(state.held):
        return True  # the rest of a record whose first entries were dropped: nothing
    state.held.append((offset, entry))
    if not source.last:
        return True
    record, state.held = state.held, []
    expiry = expiry_of(fold)
    if expiry is not None and appended_at is None:
        raise ValueError(f"{type(fold).__name__} expires keys on the fold's clock: folding "
                         f"the entry at {offset} needs the broker's time of its record")
    for at, part in record:  # a record's entries take effect together, or not at all
        if expiry is None:
            fold.apply(state.kv, part)
        else:
            # a record's parts landed by the time its last did: `appended_at` bounds them all
            state.clock = _later(state.clock, entry_time(part, cast(datetime, appended_at)))
            _forget(state, state.kv, state.clock)
            fold.apply(state.kv, part)
            _remember(state, expiry, part, state.clock + expiry.window)
        if at > state.published_through:
            state.unpublished.append((at, part))
    for ref in (source, *(r for _, part in record for r in part.also_decided)):
        key = (ref.topic, ref.partition)
        state.inputs[key] = max(ref.offset, state.inputs.get(key, -1))
    return True


def _later(clock: datetime | None, at: datetime) -> datetime:
    return at if clock is None or at > clock else clock


def _forget(state: PartitionState[E], kv: dict[str, Any], clock: datetime) -> None:
    """Drop every group whose deadline the clock has reached (a group rewritten since has a
    later deadline: its earlier place in `deadlines` is passed over)."""
    while state.deadlines and state.deadlines[0][0] <= clock:
        deadline, group = state.deadlines.popleft()
        if state.expires.get(group) != deadline:
            continue
        del state.expires[group]
        kv.pop(group, None)
        for key in state.members.pop(group, []):
            kv.pop(key, None)


def _remember(state: PartitionState[E], expiry: Expiry[E], entry: E, deadline: datetime
              ) -> None:
    """The entry's expiring keys live until `deadline` (their groups with them)."""
    for group, key in expiry.expiring(entry):
        if key != group:
            keys = state.members.setdefault(group, [])
            if key not in keys:
                keys.append(key)
        if state.expires.get(group) != deadline:
            state.expires[group] = deadline
            state.deadlines.append((deadline, group))


def _continues(held: list[tuple[int, Any]], source: SourceRef) -> bool:
    """`source` names the record the held entries are the first parts of."""
    if not held:
        return False
    first = held[0][1].source
    return (first.topic, first.partition, first.offset) == (source.topic, source.partition,
                                                            source.offset)


def skip_to(state: PartitionState[E], end: int) -> None:
    """The log holds nothing readable before `end` that this state has not seen (offsets of
    records that are not entries, e.g. a transaction's markers)."""
    state.end = max(state.end, end)


class Overlay(MutableMapping[str, Any]):
    """The state as a batch's earlier commands left it: reads fall through to the folded
    state, writes stay here (scratch: thrown away once the batch's entries are verified,
    when the entries themselves are folded). Nothing expires in a batch: it decides on the
    clock its state was folded to, whose expired keys the fold has already forgotten."""

    def __init__(self, base: dict[str, Any]) -> None:
        self.base = base
        self.changes: dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        if key in self.changes:
            return self.changes[key]
        return self.base[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.changes[key] = value

    def __delitem__(self, key: str) -> None:
        raise TypeError("a fold writes absolute values; it never deletes")

    def __iter__(self) -> Iterator[str]:
        yield from self.changes
        yield from (k for k in self.base if k not in self.changes)

    def __len__(self) -> int:
        return len(self.base) + sum(1 for k in self.changes if k not in self.base)

    def get(self, key: str, default: Any = None) -> Any:
        if key in self.changes:
            return self.changes[key]
        return self.base.get(key, default)


MakeEntry = Callable[[str, str, int], E]  # (entry id, prev, published_through) -> the entry


@dataclass
class Batch(Generic[E]):
    """The entries one batch of inputs decided for one partition, chained on the state as
    it was folded: the first entry's `prev` is the state's head, each next one's the entry
    before it. They are sent as packs (`services.infra.packs`: as few records as their
    bounds allow; an entry alone in a record of its own), and land as chained when nothing
    lands in between: at `state.end`, one record after the other (`landed_as_chained`);
    then every one of them is valid."""

    state: PartitionState[E]
    fold: Fold[E]
    new_id: Callable[[], str]  # a fresh entry id of this writer
    scratch: Overlay = field(init=False)
    entries: list[E] = field(default_factory=list)
    start: int = field(init=False)  # the log's end as the state had folded it
    packs: Packs = field(default_factory=Packs)  # the entries as written, in records

    def __post_init__(self) -> None:
        self.scratch = Overlay(self.state.kv)
        self.start = self.state.end

    def add(self, make: MakeEntry[E]) -> E:
        """Chain the entry `make(entry_id, prev, published_through)` builds; the batch's
        later decisions read what it writes."""
        prev = self.entries[-1].entry_id if self.entries else self.state.head_id
        entry = make(self.new_id(), prev, self.state.published_through)
        self.fold.apply(self.scratch, entry)
        self.packs.add(entry.model_dump_json().encode())
        self.entries.append(entry)
        return entry

    def records(self, key_of: Callable[[E], bytes | None]) -> list[tuple[bytes | None, bytes]]:
        """The records to send, in order, each keyed by its first entry's key."""
        return [(key_of(self.entries[first]), value)
                for first, value in zip(self.packs.firsts, self.packs.packed(), strict=True)]

    def record_of(self, index: int) -> int:
        """Which of the records sent holds the entry at `index`."""
        return self.packs.pack_of(index)

    @property
    def expected(self) -> list[int]:
        """The offsets the records land at if nothing lands in between."""
        return list(range(self.start, self.start + len(self.packs.firsts)))

    def landed_as_chained(self, landed: list[Landed]) -> bool:
        """Every entry landed right after the log the state had folded, and the state
        folded nothing else meanwhile (a recovery running beside the batch): nothing came
        in between, so every one of them is valid."""
        return [at.offset for at in landed] == self.expected and self.state.end == self.start

    def commit(self, landed: list[Landed]) -> list[tuple[int, E]]:
        """Fold the batch's entries, which landed as chained, into the state."""
        assert self.landed_as_chained(landed), "only a batch that landed as chained commits"
        folded = []
        for i, entry in enumerate(self.entries):
            offset, appended_at = landed[self.record_of(i)]
            valid = fold_entry(self.state, offset, entry, self.fold, appended_at)
            assert valid, f"entry at {offset} landed as chained but does not fold"
            folded.append((offset, entry))
        return folded


def entries_of(value: bytes, parse: Callable[[bytes], E]) -> list[E]:
    """The entries one record of an own log holds: a pack's (`services.infra.packs`), or
    the record's own. Raises if any of them is not an entry."""
    return [parse(v) for v in records_of(value)]
