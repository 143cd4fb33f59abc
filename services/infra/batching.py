"""Batched I/O for every consumer: take records in batches, apply them in order, publish
everything they produced, and wait for the broker's acks together.

One ack round-trip per batch instead of one (or two) per record is what lets a single
worker keep up with a casino floor. A batch is whatever arrived while the previous one
was being applied and acknowledged: one task reads the stream into a queue all the time
and the agent takes everything queued so far, so at low load a batch is one record (no
added latency) and under load it grows by itself. (Faust's `take_events` stops reading
while its caller works and then waits a fixed time: on a loaded machine its batches
stayed at a handful of records and intake stalled.)

Order is kept: a batch is applied in the order its records were read, and the producer
keeps the order of the records sent to one partition. Offsets: the stream does not ack
by itself; each event is acked only after its batch was applied and everything it wrote
(its output records and its tables' changelog records alike) was acknowledged, so a
crash re-reads at most the unfinished batch, a worker taking over a partition never
recovers table state older than the offset it resumes from, and every consumer is
idempotent on deterministic ids.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

import faust
from aiokafka.errors import KafkaTimeoutError
from faust.streams import _current_event

from croupier.services.infra.contiguous import (
    CommittedOffsets,
    ContiguousReader,
    ContiguousReads,
    committed_offsets,
    watch_waiting_partitions,
)
from croupier.services.infra.faust_app import service_of
from croupier.services.infra.observability import progress_of

log = logging.getLogger(__name__)
BATCH_MAX = 1000  # records at most per batch
Record = tuple[str, bytes, bytes]  # topic, key, value
ApplyBatch = Callable[[Sequence[faust.EventT]], Awaitable[None]]


async def run_batches(stream: faust.Stream, apply: ApplyBatch,
                      max_records: int = BATCH_MAX,
                      baseline: CommittedOffsets | None = None) -> None:
    """Call `apply(batch)` for every batch of the stream's events, in order; each event
    keeps its topic, partition and offset. The events are acked after `apply` returns and
    the producer is flushed (table changelogs included). Offsets the stream skips are
    re-read from the log and applied in their place, and so are the records of a partition
    the stream stopped handing on (`croupier.services.infra.contiguous`). A partition's
    first record after a rebalance is checked against `baseline()` (the next offset to
    apply, per partition: a service's own checkpoints), by default the group's committed
    offsets (then a commit past an unprocessed record goes unseen: faust-streaming #606)."""
    manual = stream.noack()
    track_buffer(stream.app.producer)
    apply = until_applied(apply, f"{stream.app.conf.id}: applying a batch")
    progress = progress_of(stream.app)
    queue: asyncio.Queue = asyncio.Queue(maxsize=4 * max_records)

    service = service_of(stream.app)
    reads = ContiguousReads(service, baseline or committed_offsets(stream.app, service))

    reader = ContiguousReader(manual, reads, queue, service)

    def behind() -> bool:  # the batches are behind the reader: a busy worker, not a stuck one
        return queue.qsize() > queue.maxsize // 2

    reading = asyncio.ensure_future(reader.read())
    topics = topics_of(stream)  # none in a test context: nothing to watch
    watcher = asyncio.ensure_future(
        watch_waiting_partitions(stream.app, topics, reads, reader.from_log, behind) if topics
        else asyncio.Future())
    try:
        while True:
            getting = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({getting, reading, watcher},
                                         return_when=asyncio.FIRST_COMPLETED)
            if getting not in done:  # the reader or the watcher ended or failed: let it raise
                getting.cancel()
                for task in done:
                    task.result()
                return
            batch = [getting.result()]
            while len(batch) < max_records and not queue.empty():
                batch.append(queue.get_nowait())
            await apply(batch)
            await flush_all(stream.app.producer)
            for event in batch:
                await manual.ack(event)
            progress.batch_finished()
    finally:
        reading.cancel()
        watcher.cancel()


def topics_of(stream: faust.StreamT) -> set[str]:
    """The topics a stream reads."""
    channel = getattr(stream, "channel", None)
    return set(channel.topics) if isinstance(channel, faust.TopicT) else set()


class _Unacknowledged:
    """The records a producer's buffer took (Faust's tables send their changelog records
    through it) that the broker has not acknowledged yet."""

    def __init__(self, buffer) -> None:
        self.futures: set[asyncio.Future] = set()
        put = buffer.put

        def tracked_put(fut: asyncio.Future) -> None:
            self.futures.add(fut)
            fut.add_done_callback(self.futures.discard)
            put(fut)

        buffer.put = tracked_put


_unacknowledged: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def track_buffer(producer) -> _Unacknowledged:
    """Start (once per producer) keeping the futures of every buffered record."""
    if producer.buffer not in _unacknowledged:
        _unacknowledged[producer.buffer] = _Unacknowledged(producer.buffer)
    return _unacknowledged[producer.buffer]


async def flush_all(producer) -> None:
    """Return once every record sent or buffered so far is acknowledged by the broker.

    `producer.flush()` alone is not enough: Faust's buffer flush gives up after 0.1 s
    without progress, so on a loaded machine a batch's offsets could be committed before
    its changelog records were written, and a worker killed then lost that state (a bet
    recorded, its round's header not). The buffered records' own futures are awaited."""
    pending = list(track_buffer(producer).futures)
    await producer.flush()
    if pending:
        await asyncio.gather(*pending)


def transient(error: BaseException) -> bool:
    """A broker error that goes away by itself (connection lost, leader moving, a send
    timed out): worth retrying. Anything else is not the broker's fault."""
    return getattr(error, "retriable", False) or isinstance(
        error, KafkaTimeoutError | ConnectionError | TimeoutError)


def until_applied(apply: ApplyBatch, what: str, first_pause_s: float = 0.5,
                  max_pause_s: float = 30.0) -> ApplyBatch:
    """`apply`, tried again while it fails with a transient broker error (pausing twice as
    long each time, at most `max_pause_s`); any other error is raised at once. Safe because
    applying a batch again is what a redelivery does: every consumer is idempotent. A
    record the domain code cannot apply never gets here: it is dead-lettered
    (`croupier.services.infra.dead_letters.apply_each`), so no record is retried forever."""

    async def retried(batch: Sequence[faust.EventT]) -> None:
        pause = first_pause_s
        while True:
            try:
                await apply(batch)
                return
            except Exception as error:
                if not transient(error):
                    raise
                log.warning("%s of %d record(s): broker error %r; retrying in %.1f s", what,
                            len(batch), error, pause)
                await asyncio.sleep(pause)
                pause = min(2 * pause, max_pause_s)

    return retried


@contextmanager
def processing(event: faust.EventT) -> Iterator[None]:
    """Make `event` the current event while its key's table entries are read or written.

    A Faust table stores a value in the store of the current event's partition and
    writes its changelog record to that partition. Inside a batch the stream's current
    event is the batch's last record, maybe of another partition: every table access
    on behalf of a record must happen inside `processing(record)`, or its state lands in
    a partition that another worker will own after a rebalance. (Faust has no public way
    to set it: this uses the context variable its streams use.)"""
    token = _current_event.set(weakref.ref(event))
    try:
        yield
    finally:
        _current_event.reset(token)


async def publish_placed(app: faust.App, records: Iterable[Record]) -> list[tuple[int, int]]:
    """`publish_all`, answering where each record landed: (partition, offset), in order."""
    acks = [await app.producer.send(topic, key, value, None, None, None)
            for topic, key, value in records]
    metadata = await asyncio.gather(*acks) if acks else []
    return [(m.partition, m.offset) for m in metadata]


async def publish_all(app: faust.App, records: Iterable[Record]) -> None:
    """Send every record (in order), then wait until the broker acknowledged all of them."""
    acks = [await app.producer.send(topic, key, value, None, None, None)
            for topic, key, value in records]
    if acks:
        await asyncio.gather(*acks)
