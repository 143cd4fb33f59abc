"""The processor kernel: a service whose state is the fold of its own log.

For each batch of input records (`run_own_log`):
1. every input partition the batch touches is recovered first: its own log's partition is
   folded (from the worker's cached state onwards; else, for a service that opts in, from
   the newest snapshot the log confirms, `snapshots`; else from the start), and the
   outputs of entries not known to be published are published again;
2. records the own log says were applied are skipped (a redelivery, or Faust handing on
   from a committed offset behind the log); a record past the next one the log expects
   makes the reader read the gap from the log first (`_without_gaps`, baselined on the own
   log's checkpoints, never on the consumer group's commit);
3. the service's pure `decide(state, record)` gives each record an answer and maybe an
   entry; entries are chained (`own_log.Batch`) and sent to the own log's partition;
4. once acknowledged, each partition's entries are checked to have landed where their
   chain said; if another writer came in between, the partition is folded again from the
   log and its records decided again (they are idempotent);
5. the entries are folded into the state (the same `fold_entry` as recovery), their
   outputs published and acknowledged, then the answers given and the records acked.
6. between batches, a partition whose snapshot is due has one written in the background
   (`OwnLog.snapshot_if_due`): a copy of its verified state, encoded in a thread.

No service core knows about crashes: the kernel owns checkpoints, fencing and the outbox.
Its consume loop, and the records it hands on, are `services.infra.consume_loop`.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, cast

import faust
from faust.types import TP
from kafka import KafkaConsumer, TopicPartition

from services.infra import metrics
from services.infra.batching import (
    BATCH_MAX,
    flush_all,
    publish_all,
    retried_on_transient,
)
from services.infra.consume_loop import InputRecord, LostPartition, consume
from services.infra.faust_app import service_of, settings_of
from services.infra.log_reader import LogEnds, log_reader
from services.infra.own_log import (
    Batch,
    Fold,
    Landed,
    Logged,
    MakeEntry,
    Overlay,
    PartitionState,
    Record,
    broker_time,
    entries_of,
    fold_entry,
    skip_to,
)
from services.infra.packs import pack_routed
from services.infra.snapshots import KeyedRecord, SnapshotStore
from shared.events.sources import InputRef
from shared.topics import ROUTED_TOPICS

log = logging.getLogger(__name__)
E = TypeVar("E")
MAX_CONFLICTS = 5  # a batch decided again this often lost its partition for good
LOG_APPEND_TIME = 1  # a record's timestamp type when the broker stamps it


@dataclass
class Decided(Generic[E]):
    """What `decide` made of one input record: its entries (none if it changes nothing;
    several for a record that changes many keys, numbered by `source.part`, the last one
    marked `source.last`: they take effect together), the records it sends regardless
    (dead letters), and what its waiter is told."""

    entries: list[MakeEntry] = field(default_factory=list)
    also: list[Record] = field(default_factory=list)
    reply: Any = None


Decide = Callable[[Overlay, faust.EventT], Decided]
ParseEntry = Callable[[bytes], Any]
# (record, what was decided, whether the log backs the decision): an answer not backed is
# "retry", never the decision
Answer = Callable[[faust.EventT, Decided, bool], None]


class LogIO(Protocol):
    """The kernel's I/O with Kafka: the real one (`KafkaLogIO`) in a worker, a model of
    Kafka in the crash simulator (tests/crashsim)."""

    async def send(self, topic: str, partition: int, records: Sequence[tuple[bytes | None, bytes]]
                   ) -> list[Landed]:
        """Append the records to the partition, in order; where they landed and when the
        broker appended them, once every one is acknowledged."""
        ...

    async def read(self, topic: str, partition: int, start: int) -> tuple[list[Logged], int]:
        """The partition's records from `start` to its end, and the end."""
        ...

    async def publish(self, records: Sequence[Record]) -> None:
        """Send records to their topics (the producer's partitioner) and wait for every
        ack."""
        ...

    async def end(self, topic: str, partition: int) -> int:
        """The partition's end offset now."""
        ...

    async def partition_for(self, topic: str, key: bytes) -> int:
        """The partition of `topic` the producer's partitioner puts `key` in."""
        ...


class KafkaLogIO:
    """`LogIO` on a Faust app's producer and a kafka-python reader outside any group."""

    def __init__(self, app: faust.App, bootstrap: str, principal: str) -> None:
        self.app = app
        self.bootstrap = bootstrap
        self.principal = principal
        self.ends = LogEnds(bootstrap, principal)
        self._ends_lock = asyncio.Lock()
        self._warned: set[str] = set()
        self._known: set[str] = set()  # topics whose metadata the producer has

    async def send(self, topic: str, partition: int, records: Sequence[tuple[bytes | None, bytes]]
                   ) -> list[Landed]:
        futures = [await self.app.producer.send(topic, key, value, partition, None, None)
                   for key, value in records]
        metas = await asyncio.gather(*futures)
        if metas and metas[0].timestamp_type != LOG_APPEND_TIME and topic not in self._warned:
            self._warned.add(topic)
            log.error("%s: %s stamps its records with the writer's time, not the broker's: "
                      "the fold's clock is then only as good as every writer's clock; run "
                      "`croupier topics apply` (message.timestamp.type=LogAppendTime)",
                      self.principal, topic)
        # (aiokafka gives the broker's time; with CreateTime, the one the producer sent)
        return [Landed(meta.offset, broker_time(int(cast(float, meta.timestamp))))
                for meta in metas]

    async def read(self, topic: str, partition: int, start: int) -> tuple[list[Logged], int]:
        records, end = await asyncio.to_thread(_read_log, self.bootstrap, self.principal,
                                               topic, partition, start)
        return [Logged(r.offset, r.value, broker_time(r.timestamp)) for r in records], end

    async def publish(self, records: Sequence[Record]) -> None:
        await publish_all(self.app, records)
        await flush_all(self.app.producer)

    async def partition_for(self, topic: str, key: bytes) -> int:
        if topic not in self._known:  # the producer's partitioner needs the topic's metadata
            await cast(Any, self.app.producer)._ensure_producer().partitions_for(topic)
            self._known.add(topic)
        return int(self.app.producer.key_partition(topic, key).partition)

    async def send_keyed(self, topic: str, partition: int,
                         records: Sequence[tuple[bytes, bytes | None]]) -> list[int]:
        """`snapshots.SnapshotIO`: keyed records (None: a tombstone), acknowledged."""
        futures = [await self.app.producer.send(topic, key, value, partition, None, None)
                   for key, value in records]
        return [meta.offset for meta in await asyncio.gather(*futures)]

    async def read_keyed(self, topic: str, partition: int) -> list[KeyedRecord]:
        """`snapshots.SnapshotIO`: every record of the partition; none if the topic (or the
        partition) does not exist (a cluster whose catalogue predates it)."""
        records, _ = await asyncio.to_thread(_read_log, self.bootstrap, self.principal,
                                             topic, partition, 0, True)
        return [(r.offset, r.key, r.value) for r in records]

    async def end(self, topic: str, partition: int) -> int:
        tp = TP(topic, partition)
        async with self._ends_lock:  # one kafka-python client: one thread at a time
            return (await asyncio.to_thread(self.ends.read, [tp]))[tp]


def _read_log(bootstrap: str, principal: str, topic: str, partition: int, start: int,
              missing_ok: bool = False) -> tuple[list[Any], int]:
    """The records of one partition from `start` to its end, and the end (blocking).
    `missing_ok`: none (end 0) if the topic or the partition does not exist."""
    consumer: KafkaConsumer = log_reader(bootstrap, principal)
    try:
        if missing_ok and partition not in (consumer.partitions_for_topic(topic) or set()):
            return [], 0
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        end = consumer.end_offsets([tp])[tp]
        begin = consumer.beginning_offsets([tp])[tp]
        records: list[Any] = []
        if end <= start:
            return records, end
        consumer.seek(tp, max(start, begin))
        idle = 0
        while consumer.position(tp) < end:
            polled = consumer.poll(timeout_ms=500, max_records=10_000).get(tp, [])
            idle = 0 if polled else idle + 1
            if idle > 60:
                raise TimeoutError(f"reading {topic}[{partition}] stalled at "
                                   f"{consumer.position(tp)} of {end}")
            records.extend(r for r in polled if start <= r.offset < end)
        return records, end
    finally:
        consumer.close()


class OwnLog(Generic[E]):
    """The worker's folded partitions of a service's own log (a cache: each partition
    state says the offset it reflects, and is caught up from there before it is used)."""

    def __init__(self, service: str, topic: str, fold: Fold, parse: ParseEntry,
                 key_of: Callable[[Any], bytes | None], writer: str) -> None:
        self.service = service
        self.writer = writer  # unique to this worker's life: its entries' ids start with it
        self._ids = itertools.count(1)
        self.topic = topic
        self.fold = fold
        self.parse = parse
        self.key_of = key_of
        self.states: dict[int, PartitionState] = {}
        self.owned: set[int] = set()  # recovered in the current assignment
        self._locks: dict[int, asyncio.Lock] = {}
        self.io: LogIO | None = None  # set when the worker starts (`run_own_log`)
        self.last_valid: set[int] = set()  # offsets the last catch-ups folded as valid
        # opt-in: snapshots that bound a recovery on an empty disk (services/infra/snapshots.py)
        self.snapshots: SnapshotStore | None = None
        # told of each partition state once it is caught up with the log (a recovery, or a
        # fold again after a lost race), before any record is decided on it: what the
        # service owes outside the log (the seamless wallet's calls) is driven from there
        self.on_recovered: list[Callable[[PartitionState], None]] = []

    def io_(self) -> LogIO:
        if self.io is None:
            raise RuntimeError(f"{self.service}: its own log has no I/O yet (not started)")
        return self.io

    def new_id(self) -> str:
        return f"{self.writer}:{next(self._ids)}"

    def state(self, partition: int) -> PartitionState | None:
        """The partition's folded state, if this worker has recovered it and owns it."""
        return self.states.get(partition) if partition in self.owned else None

    def revoke(self, partitions: set[int]) -> None:
        """No longer ours: keep the cache, answer nothing for it until recovered again."""
        self.owned -= partitions

    async def recover(self, partition: int) -> PartitionState:
        """Catch the partition's state up with its log, and publish what its outbox holds."""
        lock = self._locks.setdefault(partition, asyncio.Lock())
        async with lock:
            state = self.states.get(partition)
            if state is None:
                state = self.states[partition] = await self._from_snapshot(partition)
            await self.catch_up(state)
            if state.unpublished:
                await self.publish([r for _, e in state.unpublished
                                    for r in self.fold.outputs(e)])
                outputs_acked(state, state.head)
            self.owned.add(partition)
            for told in self.on_recovered:
                told(state)
            return state

    async def publish(self, outputs: Sequence[Record]) -> None:
        """Publish entries' outputs and wait for every ack, a routed topic's packed by
        partition (`services.infra.packs`)."""
        io = self.io_()
        routed = {(topic, key) for topic, key, _ in outputs if topic in ROUTED_TOPICS}
        where = {(topic, key): await io.partition_for(topic, key) for topic, key in routed}
        await io.publish(pack_routed(outputs, lambda topic, key: where[(topic, key)]))

    async def refold(self, partition: int) -> set[int]:
        """Catch up after a lost race: the offsets that folded valid (publishing the
        outbox, as a recovery does)."""
        self.last_valid = set()
        await self.recover(partition)
        return self.last_valid

    async def _from_snapshot(self, partition: int) -> PartitionState:
        """The partition's newest snapshot the log confirms, caught up with the log's
        records read to confirm it; an empty state (fold from 0) without one."""
        if self.snapshots is None:
            return PartitionState(partition)
        began = time.monotonic()
        try:
            found = await self.snapshots.restore(cast(Any, self.io_()), partition, self.parse)
        except Exception as error:  # noqa: BLE001 - a snapshot only saves time: any doubt,
            # the full fold (a broker failing now fails that too, and the batch is retried)
            log.warning("%s: %s[%d]: snapshots unreadable (%r): folding from 0",
                        self.service, self.topic, partition, error)
            return PartitionState(partition)
        if found.state is None or found.manifest is None:
            log.info("%s: %s[%d]: no usable snapshot%s: folding from 0", self.service,
                     self.topic, partition,
                     f" ({'; '.join(found.refused)})" if found.refused else "")
            return PartitionState(partition)
        state = found.state
        self._fold_records(state, [r for r in found.records if r.offset >= state.end],
                           found.end)
        log.info("%s: %s[%d]: recovered from snapshot %s (offset %d) and %d later records "
                 "in %.1f s", self.service, self.topic, partition, found.manifest.snapshot_id,
                 found.manifest.end, max(0, found.end - found.manifest.end),
                 time.monotonic() - began)
        return state

    def counted(self, partition: int, entries: int) -> None:
        """`entries` more folded into the partition's state (a snapshot is due by them)."""
        if self.snapshots is not None:
            self.snapshots.folded(partition, entries)

    def snapshot_if_due(self, partitions: set[int]) -> None:
        """Between batches: start a snapshot of each of `partitions` this worker owns (its
        state folded verified entries only) that is due."""
        if self.snapshots is None or self.io is None:
            return
        for partition in partitions:
            state = self.state(partition)
            if state is not None and self.snapshots.due(state):
                self.snapshots.start(cast(Any, self.io), state)

    async def catch_up(self, state: PartitionState) -> None:
        """Fold what the log holds past what `state` has seen."""
        records, end = await self.io_().read(self.topic, state.partition, state.end)
        self._fold_records(state, records, end)

    def _fold_records(self, state: PartitionState, records: Sequence[Logged], end: int) -> None:
        folded = 0
        for offset, value, appended_at in records:
            try:
                entries = entries_of(value, self.parse)
            except Exception as error:  # noqa: BLE001 - not an entry: counted, skipped
                log.error("%s: %s[%d]@%d is not an entry of its own log (%r): skipped",
                          self.service, self.topic, state.partition, offset, error)
                skip_to(state, offset + 1)
                state.void += 1
                continue
            for entry in entries:  # a pack's entries: valid or void together
                if fold_entry(state, offset, entry, self.fold, appended_at):
                    folded += 1
                    self.last_valid.add(offset)
            self.counted(state.partition, len(entries))
        skip_to(state, end)
        if records:
            log.info("%s: %s[%d] folded %d entries up to offset %d (head %d, %d void)",
                     self.service, self.topic, state.partition, folded, end, state.head,
                     state.void)


def outputs_acked(state: PartitionState, through: int) -> None:
    """Every output of the valid entries up to `through` is acknowledged."""
    if through > state.published_through:
        state.published_through = through
        state.unpublished = [(o, e) for o, e in state.unpublished if o > through]


async def run_own_log(app: faust.App, topics: Sequence[str], own: OwnLog, decide: Decide,
                      answer: Answer, lock: asyncio.Lock | None = None,
                      max_records: int = BATCH_MAX,
                      revoked: Callable[[set[int]], None] | None = None) -> None:
    """Apply the records of `topics` through `decide`, with `own` as the only state: each
    input partition resumes after the last record its own log applied (`consume`).
    `revoked`: told of the partitions a rebalance took, once the own log let them go (the
    service answers the waiters it will not answer now)."""
    own.io = KafkaLogIO(app, settings_of(app).bootstrap_servers, service_of(app))

    async def position(tp: TP) -> int:
        state = await own.recover(tp.partition)
        return state.resume_at(tp.topic, tp.partition)

    async def apply(batch: Sequence[Any]) -> None:
        await until_applied(own, batch, decide, answer, lock)
        own.snapshot_if_due({event.message.partition for event in batch})

    await consume(app, topics, position, apply, revoker(own, revoked), max_records=max_records)


def revoker(own: OwnLog, revoked: Callable[[set[int]], None] | None = None
            ) -> Callable[[set[int]], None]:
    """What a worker does when a rebalance takes partitions from it: its own log lets them
    go (their cache kept), then the service is told (`revoked`: dealer-event answers the
    waiters it will no longer answer). The consume loop's hook; the crash simulator's
    rebalance calls the same."""
    def revoke(partitions: set[int]) -> None:
        own.revoke(partitions)
        if revoked is not None:
            revoked(partitions)
    return revoke


async def until_applied(own: OwnLog, events: Sequence[faust.EventT], decide: Decide,
                        answer: Answer, lock: asyncio.Lock | None = None,
                        first_pause_s: float = 0.5, max_pause_s: float = 30.0) -> None:
    """`apply_batch`, tried again while the broker fails it with a transient error (a
    frozen or moving broker). Before each retry the batch's partitions are folded again
    from the log: some of its entries or outputs may have landed, and the fold, not this
    worker's memory, says which (then the outbox publishes what is missing and the records
    the log already applied are answered from it)."""
    async def once(batch: Sequence[Any]) -> None:
        if lock is not None:
            async with lock:
                await apply_batch(own, batch, decide, answer)
        else:
            await apply_batch(own, batch, decide, answer)

    def fold_again(batch: Sequence[Any]) -> None:
        own.revoke({event.message.partition for event in batch})

    await retried_on_transient(once, f"{own.service}: a batch (its partitions folded again)",
                               first_pause_s, max_pause_s, before_retry=fold_again)(events)


@dataclass
class _Decision:
    """One input record of a partition's batch: what was decided, which of the batch's
    entries are its own, and whether the own log had applied it before."""

    event: faust.EventT
    decided: Decided
    first: int  # index of its first entry in the batch
    stop: int  # one past its last entry
    applied: bool


async def apply_batch(own: OwnLog, events: Sequence[faust.EventT], decide: Decide,
                      answer: Answer) -> None:
    """Decide, write, verify, fold, publish, answer: one batch of input records.

    An answer is given only when the log backs it: the record's entries landed where their
    chain said (so nothing came in between, and the state it was decided on is the log's),
    or, for a partition whose records wrote nothing, the log's end did not move while they
    were decided. A record another writer applied meanwhile is answered "retry"
    (`backed=False`): it is not this worker's to answer."""
    io = own.io_()
    pending: dict[int, list[faust.EventT]] = {}
    seen: set[tuple[str, int, int]] = set()
    for event in events:  # a record twice in one batch (re-read and redelivered): once
        message = event.message
        if (message.topic, message.partition, message.offset) not in seen:
            seen.add((message.topic, message.partition, message.offset))
            pending.setdefault(message.partition, []).append(event)
    attempts = 0
    while pending:
        attempts += 1
        batches: dict[int, Batch] = {}
        decisions: dict[int, list[_Decision]] = {}
        also: list[Record] = []
        for partition, part_events in list(pending.items()):
            state = own.state(partition) or await own.recover(partition)
            part_events = pending[partition] = await _without_gaps(io, state, part_events)
            batch = batches[partition] = Batch(state, own.fold, own.new_id)
            decisions[partition] = []
            carry = state.not_logged()  # records decided before that wrote nothing
            for event in part_events:
                message = event.message
                applied = state.applied(message.topic, message.partition, message.offset)
                d = decide(batch.scratch, event)
                if applied:  # the own log holds it: it changes nothing now
                    d.entries, d.also = [], []
                first = len(batch.entries)
                for make in d.entries:
                    batch.add(_carrying(make, carry))
                    carry = ()
                if not d.entries and not applied:  # carried by the next entry
                    carry = _passed(carry, InputRef(topic=message.topic,
                                                    partition=message.partition,
                                                    offset=message.offset))
                also += d.also
                decisions[partition].append(
                    _Decision(event, d, first, len(batch.entries), applied))
        if also:  # dead letters first, acknowledged: a record whose entries write
            # nothing must not be passed over by a later record's checkpoint before its
            # dead letter is in the log (decided again, it writes the same letter again)
            await io.publish(also)
        offsets = await _send_all(io, own, batches)
        outputs: list[Record] = []
        committed: dict[int, int] = {}
        answers: list[tuple[_Decision, bool]] = []
        conflicted: dict[int, list[faust.EventT]] = {}
        for partition, batch in batches.items():
            landed = offsets.get(partition, [])
            part = decisions[partition]
            if batch.landed_as_chained(landed) and (batch.entries or not any(
                    x.decided.reply is not None and not x.applied for x in part)
                    or await io.end(own.topic, partition) <= batch.start):
                for _, entry in batch.commit(landed):
                    outputs += own.fold.outputs(entry)
                own.counted(partition, len(batch.entries))
                if landed:
                    committed[partition] = landed[-1].offset
                answers += [(x, not x.applied) for x in part]
                batch.state.pass_over(x.event.message for x in part
                                      if x.stop == x.first and not x.applied)
                continue
            metrics.REWINDS.labels(own.service, own.topic).inc()
            log.warning("%s: %s[%d]: entries landed at %s, not %s: another writer came in "
                        "between; folding the log again and deciding again", own.service,
                        own.topic, partition, [at.offset for at in landed], batch.expected)
            valid = await own.refold(partition)  # what landed, and the outbox published
            kept = _backed_prefix(part, [landed[batch.record_of(k)] for k in
                                         range(len(batch.entries))], valid)
            answers += [(x, not x.applied) for x in part[:kept]]
            conflicted[partition] = [x.event for x in part[kept:]]
        await own.publish(outputs)
        for partition, through in committed.items():
            outputs_acked(own.states[partition], through)
        for x, backed in answers:
            answer(x.event, x.decided, backed)
        pending = {p: e for p, e in conflicted.items() if e}
        if pending and attempts >= MAX_CONFLICTS:
            for partition in pending:
                own.revoke({partition})
            raise LostPartition(f"{own.service}: lost the race for {own.topic} partitions "
                                f"{sorted(pending)} {attempts} times", set(pending))



async def _send_all(io: LogIO, own: OwnLog, batches: dict[int, Batch]
                    ) -> dict[int, list[Landed]]:
    """Each partition's entries sent, the partitions side by side; where each landed. A
    single partition's send is awaited in place (no task, no turn of the event loop)."""
    todo = [(p, b.records(own.key_of)) for p, b in batches.items() if b.entries]
    if len(todo) == 1:
        partition, records = todo[0]
        return {partition: await io.send(own.topic, partition, records)}
    sent = {p: asyncio.ensure_future(io.send(own.topic, p, records)) for p, records in todo}
    # every send's outcome is taken (one failing leaves none unretrieved), then the
    # first failure raised
    outcomes = await asyncio.gather(*sent.values(), return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    return dict(zip(sent, cast(list[list[Landed]], outcomes), strict=True))


async def _without_gaps(io: LogIO, state: PartitionState, events: list[faust.EventT]
                        ) -> list[faust.EventT]:
    """The partition's records (of every input topic sharing its number), each topic's in
    log order with no offset passed over: an offset missing between where the own log (or
    this batch) stands and a record is read from the log and put before it; a record this
    batch already handed on is dropped. The consume loop seeks every partition to the own
    log's checkpoint; this is the last line: no input record is ever passed over, whatever
    a consumer handed on (a stale fetch, a rewind, a skip)."""
    out: list[faust.EventT] = []
    nexts: dict[str, int] = {}  # per topic: the next offset to hand on
    for event in events:
        m = event.message
        expected = nexts.get(m.topic, state.resume_at(m.topic, m.partition))
        if m.offset < expected:
            if m.topic not in nexts:  # applied before: answered from the log, moves nothing
                out.append(event)
            continue
        if m.offset > expected:
            metrics.REWINDS.labels(io_service(io), m.topic).inc()
            log.warning("kernel: %s[%d] jumps to offset %d where %d was expected: reading the "
                        "%d record(s) in between from the log", m.topic, m.partition,
                        m.offset, expected, m.offset - expected)
            records, _ = await io.read(m.topic, m.partition, expected)
            out += [InputRecord(m.topic, m.partition, offset, None, value,  # type: ignore[misc]
                                appended_at.timestamp())
                    for offset, value, appended_at in records if offset < m.offset]
        out.append(event)
        nexts[m.topic] = m.offset + 1
    return out


def _carrying(make: MakeEntry, carry: tuple[InputRef, ...]) -> MakeEntry:
    """`make`, its entry also naming the records decided before it that wrote nothing."""
    if not carry:
        return make

    def made(entry_id: str, prev: str, published_through: int) -> Any:
        return make(entry_id, prev, published_through).model_copy(
            update={"also_decided": carry})
    return made


def _passed(carry: tuple[InputRef, ...], ref: InputRef) -> tuple[InputRef, ...]:
    """`carry` with `ref` as its input partition's last record decided writing nothing."""
    return (*(r for r in carry if (r.topic, r.partition) != (ref.topic, ref.partition)), ref)


def io_service(io: LogIO) -> str:
    return getattr(io, "principal", "kernel")


def _backed_prefix(part: list[_Decision], landed: list[Landed], valid: set[int]) -> int:
    """How many of a conflicted partition's records the log backs as decided: those up to
    the last one whose entries (and every earlier record's) all folded valid (`landed`:
    where each entry's record landed, a pack's entries all where the pack did). The state
    each of them was decided on is then the log's: the first valid entry's `prev` was the
    true head, and each later valid entry's proves nothing valid came in between."""
    kept = 0
    for i, x in enumerate(part):
        if x.stop == x.first:
            continue
        if all(landed[k].offset in valid for k in range(x.first, x.stop)):
            kept = i + 1
        else:
            break
    return kept
