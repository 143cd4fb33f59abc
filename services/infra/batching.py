"""Batched I/O for every consumer: take records in batches, apply them in order, publish
everything they produced, and wait for the broker's acks together.

One ack round-trip per batch instead of one (or two) per record is what lets a single
worker keep up with a casino floor. Order is kept: a batch is applied in the order its
records were read, and the producer keeps the order of the records sent to one
partition (one in-flight batch per partition, idempotent producer). Offsets of a
batch are committed only after the batch is processed (Faust acks the events of a
`take_events` batch when the next one is taken), so a crash re-reads at most one
batch, and every consumer is idempotent on deterministic ids.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from contextlib import contextmanager

import faust
from faust.streams import _current_event

BATCH_MAX = 1000  # records at most per batch
BATCH_WITHIN_S = 0.005  # how long a partial batch waits for more before it is applied
Record = tuple[str, bytes, bytes]  # topic, key, value


def batches(stream: faust.StreamT, max_records: int = BATCH_MAX,
            within_s: float = BATCH_WITHIN_S) -> AsyncIterator[Sequence[faust.EventT]]:
    """The stream's events, a list at a time (each event keeps its topic and offset)."""
    return stream.take_events(max_records, within=within_s)


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
