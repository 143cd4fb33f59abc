"""Batched I/O under the kernel's consume loop (`services.infra.consume_loop.consume`):
publish everything a batch produced and wait for the broker's acks together, and retry a
batch a frozen or moving broker failed.

One ack round-trip per batch instead of one (or two) per record is what lets a single
worker keep up with a casino floor. Order is kept: a batch is applied in the order its
records were read, and the producer keeps the order of the records sent to one partition.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import faust
from aiokafka.errors import KafkaTimeoutError
from faust.streams import _current_event

log = logging.getLogger(__name__)
BATCH_MAX = 1000  # records at most per batch
Record = tuple[str, bytes, bytes]  # topic, key, value
ApplyBatch = Callable[[Sequence[Any]], Awaitable[None]]  # applies one batch of input records


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


def retried_on_transient(apply: ApplyBatch, what: str, first_pause_s: float = 0.5,
                         max_pause_s: float = 30.0,
                         before_retry: Callable[[Sequence[Any]], None] | None = None
                         ) -> ApplyBatch:
    """`apply`, tried again while it fails with a transient broker error (pausing twice as
    long each time, at most `max_pause_s`); any other error is raised at once. Safe because
    applying a batch again is what a redelivery does: every consumer is idempotent (the
    kernel's `until_applied` folds the batch's partitions again in `before_retry`). A
    record the domain code cannot apply never gets here: it is dead-lettered
    (`services.infra.dead_letters.apply_each`), so no record is retried forever."""

    async def retried(batch: Sequence[Any]) -> None:
        pause = first_pause_s
        while True:
            try:
                await apply(batch)
                return
            except Exception as error:
                if not transient(error):
                    raise
                if before_retry is not None:
                    before_retry(batch)
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


async def publish_all(app: faust.App, records: Iterable[Record]) -> None:
    """Send every record (in order), then wait until the broker acknowledged all of them."""
    acks = [await app.producer.send(topic, key, value, None, None, None)
            for topic, key, value in records]
    if acks:
        await asyncio.gather(*acks)
