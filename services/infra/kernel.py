"""The processor kernel: a service whose state is the fold of its own log.

For each batch of input records (`run_own_log`):
1. every input partition the batch touches is recovered first: its own log's partition is
   folded (from the worker's cached state onwards, or from the start), and the outputs of
   entries not known to be published are published again;
2. records the own log says were applied are skipped (a redelivery, or Faust handing on
   from a committed offset behind the log); a record past the next one the log expects
   makes the reader read the gap from the log first (`contiguous`, baselined on the own
   log's checkpoints, never on the consumer group's commit);
3. the service's pure `decide(state, record)` gives each record an answer and maybe an
   entry; entries are chained (`own_log.Batch`) and sent to the own log's partition;
4. once acknowledged, each partition's entries are checked to have landed where their
   chain said; if another writer came in between, the partition is folded again from the
   log and its records decided again (they are idempotent);
5. the entries are folded into the state (the same `fold_entry` as recovery), their
   outputs published and acknowledged, then the answers given and the records acked.

No service core knows about crashes: the kernel owns checkpoints, fencing and the outbox.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

import faust
from faust.types import TP
from kafka import KafkaConsumer, TopicPartition

from croupier.services.infra import metrics
from croupier.services.infra.batching import (
    BATCH_MAX,
    flush_all,
    publish_all,
    topics_of,
    track_buffer,
)
from croupier.services.infra.contiguous import (
    ContiguousReads,
    reread,
    watch_waiting_partitions,
)
from croupier.services.infra.faust_app import service_of
from croupier.services.infra.log_reader import log_reader
from croupier.services.infra.observability import progress_of
from croupier.services.infra.own_log import (
    Batch,
    Fold,
    MakeEntry,
    Overlay,
    PartitionState,
    Record,
    fold_entry,
    skip_to,
)

log = logging.getLogger(__name__)
E = TypeVar("E")
MAX_CONFLICTS = 5  # a batch decided again this often lost its partition for good


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
Answer = Callable[[faust.EventT, Decided], None]


class LostPartition(Exception):
    """Another writer keeps winning this partition's log: this worker no longer owns it."""


def _read_log(bootstrap: str, principal: str, topic: str, partition: int, start: int
              ) -> tuple[list[Any], int]:
    """The records of one partition from `start` to its end, and the end (blocking)."""
    consumer: KafkaConsumer = log_reader(bootstrap, principal)
    try:
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
                 key_of: Callable[[Any], bytes | None], bootstrap: str) -> None:
        self.service = service
        self.topic = topic
        self.fold = fold
        self.parse = parse
        self.key_of = key_of
        self.bootstrap = bootstrap
        self.states: dict[int, PartitionState] = {}
        self.owned: set[int] = set()  # recovered in the current assignment
        self._locks: dict[int, asyncio.Lock] = {}
        self.publish: Callable[[list[Record]], Awaitable[None]] | None = None

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
                state = self.states[partition] = PartitionState(partition)
            await self.catch_up(state)
            if state.unpublished and self.publish is not None:
                await self.publish([r for _, e in state.unpublished
                                    for r in self.fold.outputs(e)])
                outputs_acked(state, state.head)
            self.owned.add(partition)
            return state

    async def catch_up(self, state: PartitionState) -> None:
        """Fold what the log holds past what `state` has seen."""
        records, end = await asyncio.to_thread(_read_log, self.bootstrap, self.service,
                                               self.topic, state.partition, state.end)
        folded = 0
        for record in records:
            try:
                entry = self.parse(record.value)
            except Exception as error:  # noqa: BLE001 - not an entry: counted, skipped
                log.error("%s: %s[%d]@%d is not an entry of its own log (%r): skipped",
                          self.service, self.topic, state.partition, record.offset, error)
                skip_to(state, record.offset + 1)
                state.void += 1
                continue
            folded += fold_entry(state, record.offset, entry, self.fold)
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


async def _send_entries(app: faust.App, own: OwnLog, partition: int, entries: Sequence[Any]
                        ) -> list[int]:
    """Send one partition's entries in order; the offsets they landed at."""
    futures = [await app.producer.send(own.topic, own.key_of(e), e.model_dump_json().encode(),
                                       partition, None, None)
               for e in entries]
    return [meta.offset for meta in await asyncio.gather(*futures)]


async def run_own_log(stream: faust.Stream, own: OwnLog, decide: Decide, answer: Answer,
                      lock: asyncio.Lock | None = None, max_records: int = BATCH_MAX) -> None:
    """Apply the stream's records through `decide`, with `own` as the only state."""
    app = cast(faust.App, stream.app)
    manual = stream.noack()
    track_buffer(app.producer)
    progress = progress_of(app)
    service = service_of(app)
    queue: asyncio.Queue = asyncio.Queue(maxsize=4 * max_records)
    inputs = topics_of(stream)

    async def publish(records: list[Record]) -> None:
        await publish_all(app, records)

    own.publish = publish

    async def baseline() -> dict[TP, int]:
        """Where each assigned input partition resumes: after what the own log applied."""
        assigned = {tp for tp in app.consumer.assignment() if tp.topic in inputs}
        own.revoke(set(own.owned) - {tp.partition for tp in assigned})
        nexts: dict[TP, int] = {}
        for tp in assigned:
            state = await own.recover(tp.partition)
            nexts[tp] = state.resume_at(tp.topic, tp.partition)
        return nexts

    reads = ContiguousReads(service, baseline)

    async def from_log(tp: TP, start: int, stop: int, generation: int) -> None:
        for event in await reread(manual, tp, start, stop, service, generation):
            await queue.put(event)

    async def read() -> None:
        async for event in manual.events():
            skipped_from = await reads.admit(event)
            if skipped_from is not None:
                message = event.message
                await from_log(message.tp, skipped_from, message.offset, message.generation_id)
            await queue.put(event)

    async def follow_assignment() -> None:
        """Recover newly assigned partitions at once (their keys answer 503 until then),
        even before any of their records arrives."""
        while True:
            await asyncio.sleep(0.5)
            if app.rebalancing:
                continue
            try:
                assigned = {tp.partition for tp in app.consumer.assignment()
                            if tp.topic in inputs}
            except Exception:  # noqa: BLE001 - no consumer yet
                continue
            own.revoke(own.owned - assigned)
            for partition in sorted(assigned - own.owned):
                await own.recover(partition)

    def behind() -> bool:
        return queue.qsize() > queue.maxsize // 2

    tasks = [asyncio.ensure_future(read()), asyncio.ensure_future(follow_assignment())]
    if inputs:
        tasks.append(asyncio.ensure_future(
            watch_waiting_partitions(app, inputs, reads, from_log, behind)))
    try:
        while True:
            getting = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({getting, *tasks}, return_when=asyncio.FIRST_COMPLETED)
            if getting not in done:
                getting.cancel()
                for task in done:
                    task.result()
                return
            batch = [getting.result()]
            while len(batch) < max_records and not queue.empty():
                batch.append(queue.get_nowait())
            if lock is not None:
                async with lock:
                    await apply_batch(app, own, batch, decide, answer)
            else:
                await apply_batch(app, own, batch, decide, answer)
            for event in batch:
                await manual.ack(event)
            progress.batch_finished()
    finally:
        for task in tasks:
            task.cancel()


async def apply_batch(app: faust.App, own: OwnLog, events: Sequence[faust.EventT],
                      decide: Decide, answer: Answer) -> None:
    """Decide, write, verify, fold, publish, answer: one batch of input records."""
    by_partition: dict[int, list[faust.EventT]] = {}
    for event in events:
        by_partition.setdefault(event.message.partition, []).append(event)
    pending = dict(by_partition)
    decided: dict[int, list[tuple[faust.EventT, Decided]]] = {}
    attempts = 0
    while pending:
        attempts += 1
        batches: dict[int, Batch] = {}
        also: list[Record] = []
        for partition, part_events in pending.items():
            state = own.state(partition) or await own.recover(partition)
            batch = batches[partition] = Batch(state, own.fold)
            decided[partition] = []
            for event in part_events:
                message = event.message
                d = decide(batch.scratch, event)
                if state.applied(message.topic, message.partition, message.offset):
                    # the own log holds it (a redelivery, or another writer's entry won the
                    # race): decided only for its answer, which changes nothing
                    d.entries, d.also = [], []
                for make in d.entries:
                    batch.add(make)
                also += d.also
                decided[partition].append((event, d))
        sent = {p: asyncio.ensure_future(_send_entries(app, own, p, b.entries))
                for p, b in batches.items() if b.entries}
        offsets = {p: await f for p, f in sent.items()}
        conflicted: dict[int, list[faust.EventT]] = {}
        outputs: list[Record] = list(also)
        committed: dict[int, int] = {}
        for partition, batch in batches.items():
            landed = offsets.get(partition, [])
            if batch.landed_as_chained(landed):
                for _, entry in batch.commit(landed):
                    outputs += own.fold.outputs(entry)
                if landed:
                    committed[partition] = landed[-1]
                continue
            metrics.REWINDS.labels(own.service, own.topic).inc()
            log.warning("%s: %s[%d]: entries landed at %s, not %s: another writer came in "
                        "between; folding the log again and deciding again", own.service,
                        own.topic, partition, landed, batch.expected)
            await own.recover(partition)  # folds what landed, publishes the outbox
            conflicted[partition] = pending[partition]
            decided.pop(partition, None)
        await publish_all(app, outputs)
        await flush_all(app.producer)
        for partition, through in committed.items():
            outputs_acked(own.states[partition], through)
        for partition in list(decided):
            for event, d in decided.pop(partition):
                answer(event, d)
        pending = conflicted
        if pending and attempts >= MAX_CONFLICTS:
            for partition in pending:
                own.revoke({partition})
            raise LostPartition(f"{own.service}: lost the race for {own.topic} partitions "
                                f"{sorted(pending)} {attempts} times")
