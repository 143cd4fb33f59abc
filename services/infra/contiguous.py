"""Every offset of a partition is processed: the offsets Faust's stream skips are re-read.

Faust's stream can skip a record without a word around a rebalance, and its commit then
moves past it (it tolerates one missing offset at the head of a partition). Seen in
clean-clone e2e runs after a kill -9: game-evaluation's new owner of a partition went
from offset 43 to 45 of table.events within one consumer generation, so a table's
chain of events had a hole and the table was flagged; bet-settlement's new owner never
read a round's result (its first record after the rebalance was past the committed
offset). Seeking Faust's consumer back did not re-deliver the offsets.

So the reader does it itself. Every topic our agents read is append-only (delete
policy, no transactions), so a partition's offsets are contiguous. A record is checked
against the one before it in the same consumer generation, and the first record of a
partition after a rebalance against the offset the group committed (read from the
broker once per rebalance; Faust's own copy can be stale). Offsets missing in between
are re-read from the log (kafka-python, outside the consumer group), decoded by the
stream's own channel, and handed on before the record that jumped, so the batch applies
them in log order and acks them like any other record (their offsets are then committed
in order). A record read twice is harmless: every consumer is idempotent. Each repair
is logged and counted (`croupier_consumer_skips_total`).

A partition can also go quiet: seen in a clean-clone run, a restarted bet-settlement was
assigned all four partitions and Faust's consumer fetched only two of them (faust-streaming
issues 166 and 629); the others never delivered a record, so a round on them never
settled and no jump was ever seen. `WaitingPartitions` notices a partition whose next
offset stays put while the log holds more, and the reader reads those records itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from time import monotonic
from typing import cast

import faust
from faust.types import TP, AppT, ChannelT
from faust.types.tuples import ConsumerMessage

from croupier.services.infra import metrics
from croupier.services.infra.faust_app import service_of, settings_of
from croupier.services.infra.kafka_clients import admin_client
from croupier.services.infra.log_reader import LogEnds, read_range

log = logging.getLogger(__name__)
CommittedOffsets = Callable[[], Awaitable[dict[TP, int]]]
FromLog = Callable[[TP, int, int, int], Awaitable[None]]  # tp, start, stop, generation


class ContiguousReads:
    """Follows each partition's offsets within a consumer generation."""

    def __init__(self, service: str, committed: CommittedOffsets | None = None) -> None:
        self.service = service
        self.committed = committed  # the group's committed offsets, asked once per rebalance
        self.generation: int | None = None
        self.expected: dict[TP, int] = {}  # the next offset to read, per partition
        self.baseline: dict[TP, int] | None = None

    async def admit(self, event: faust.EventT) -> int | None:
        """Note the record's offset. Returns the first offset the stream skipped before
        this record (the skipped ones are `[returned, this record's offset)`), else None."""
        message = event.message
        self._enter(message.generation_id)
        tp, offset = message.tp, message.offset
        want = self.expected.get(tp)
        if want is None:
            want = (await self._baseline()).get(tp)
            log.info("%s: %s resumes at offset %d (the group committed %s)", self.service, tp,
                     offset, want)
        self.expected[tp] = offset + 1
        if want is not None and offset > want:
            metrics.REWINDS.labels(self.service, tp.topic).inc()
            log.warning("%s: %s jumped from offset %d to %d: the stream skipped %d record(s); "
                        "re-reading them from the log", self.service, tp, want, offset,
                        offset - want)
            return want
        return None

    async def next_offsets(self, generation: int, tps: Iterable[TP]) -> dict[TP, int]:
        """The next offset the stream should hand on, per partition: after the last one it
        did in this generation, else the group's committed offset, else the log's start."""
        self._enter(generation)
        baseline = await self._baseline()
        return {tp: self.expected.get(tp, baseline.get(tp, 0)) for tp in tps}

    def read_up_to(self, tp: TP, stop: int) -> None:
        """The reader itself handed on `tp`'s records up to `stop` (not the stream)."""
        self.expected[tp] = max(stop, self.expected.get(tp, 0))

    def _enter(self, generation: int | None) -> None:
        if generation != self.generation:  # a rebalance: positions were reset
            self.generation = generation
            self.expected.clear()
            self.baseline = None

    async def _baseline(self) -> dict[TP, int]:
        if self.baseline is None:
            self.baseline = {}
            if self.committed is not None:
                try:
                    self.baseline = await self.committed()
                except Exception as error:  # noqa: BLE001 - then only in-order reads are checked
                    log.warning("%s: reading the group's committed offsets failed (%r): only "
                                "offsets within a generation are checked until the next "
                                "rebalance", self.service, error)
        return self.baseline


class WaitingPartitions:
    """Partitions whose records wait in the log while the stream hands none of them on.

    A partition is stuck when its next offset has not moved for `patience_s` although the
    log holds records past it. A partition the stream merely reads slowly moves; one the
    stream is done with has nothing waiting."""

    def __init__(self, patience_s: float) -> None:
        self.patience_s = patience_s
        self.waiting: dict[TP, tuple[int, float]] = {}  # next offset, since when it waits

    def stuck(self, nexts: Mapping[TP, int], ends: Mapping[TP, int],
              now: float) -> dict[TP, tuple[int, int]]:
        """The offsets `[start, stop)` to read from the log, per stuck partition."""
        stuck: dict[TP, tuple[int, int]] = {}
        for tp in set(self.waiting) - set(nexts):  # no longer assigned here
            del self.waiting[tp]
        for tp, start in nexts.items():
            stop = ends.get(tp, start)
            if stop <= start:
                self.waiting.pop(tp, None)
                continue
            seen = self.waiting.get(tp)
            if seen is None or seen[0] != start:
                self.waiting[tp] = (start, now)
            elif now - seen[1] >= self.patience_s:
                stuck[tp] = (start, stop)
                del self.waiting[tp]
        return stuck


async def watch_waiting_partitions(app: AppT, topics: set[str], reads: ContiguousReads,
                                   from_log: FromLog, busy: Callable[[], bool]) -> None:
    """Every few seconds, have `from_log` hand on the records of any assigned partition of
    `topics` the stream has not handed on for `partition_patience_seconds` although the log
    holds them. Skips a check while partitions move or while `busy()`."""
    service = service_of(app)
    patience_s = settings_of(app).partition_patience_seconds
    waiting = WaitingPartitions(patience_s)
    ends = LogEnds(bootstrap_of(app), service)
    try:
        while True:
            await asyncio.sleep(min(5.0, patience_s / 3))
            if app.rebalancing or busy():
                continue
            generation = app.consumer_generation_id
            tps = {tp for tp in app.consumer.assignment() if tp.topic in topics}
            try:
                nexts = await reads.next_offsets(generation, tps)
                stuck = waiting.stuck(nexts, await asyncio.to_thread(ends.read, tps),
                                      monotonic())
            except Exception as error:  # noqa: BLE001 - Kafka may hiccup; the next tick retries
                log.warning("%s: checking for partitions that wait failed (%r); next tick "
                            "retries", service, error)
                continue
            for tp, (start, stop) in sorted(stuck.items()):
                log.warning("%s: %s has records waiting at offsets %d..%d and the stream "
                            "handed none on for %.0f s: reading them from the log", service,
                            tp, start, stop - 1, patience_s)
                metrics.REWINDS.labels(service, tp.topic).inc()
                await from_log(tp, start, stop, generation)
                reads.read_up_to(tp, stop)
    finally:
        await asyncio.to_thread(ends.close)


def bootstrap_of(app: AppT) -> str:
    return ",".join(f"{url.host}:{url.port}" for url in app.conf.broker)


def committed_offsets(app: AppT, principal: str) -> CommittedOffsets:
    """Reads the app's consumer group's committed offsets from the broker."""

    def read() -> dict[TP, int]:
        admin = admin_client(bootstrap_of(app), principal, client_id=app.conf.id)
        try:
            offsets = admin.list_group_offsets(app.conf.id).get(app.conf.id, {})
        finally:
            admin.close()
        return {TP(tp.topic, tp.partition): meta.offset for tp, meta in offsets.items()
                if meta.offset is not None and meta.offset >= 0}

    async def committed() -> dict[TP, int]:
        return await asyncio.to_thread(read)

    return committed


async def reread(stream: faust.StreamT, tp: TP, start: int, stop: int, principal: str,
                 generation_id: int) -> list[faust.EventT]:
    """The records of `tp` from `start` to `stop - 1`, read from the log and decoded by the
    stream's channel into events like the ones the stream yields."""
    records = await asyncio.to_thread(read_range, bootstrap_of(stream.app), tp.topic,
                                      tp.partition, start, stop, principal)
    # a stream reads a channel (StreamT declares it only as an iterator)
    channel = cast(ChannelT, stream.channel)
    events = []
    for record in records:
        message = ConsumerMessage(
            record.topic, record.partition, record.offset, record.timestamp / 1000.0,
            record.timestamp_type, list(record.headers or []), record.key, record.value,
            record.checksum, record.serialized_key_size, record.serialized_value_size, tp,
            generation_id=generation_id)
        events.append(await channel.decode(message))
    if len(events) != stop - start:
        log.warning("%s: of the %d skipped offset(s) of %s, the log still holds %d",
                    principal, stop - start, tp, len(events))
    return events


class ContiguousReader:
    """A stream's records, every offset of them, onto a queue: what the stream hands on,
    with the ranges it skipped (`ContiguousReads`) read from the log and put first. The one
    reader under every batch loop (`batching.run_batches`, `kernel.run_own_log`);
    `from_log` is also what the waiting-partitions watch hands stuck ranges to."""

    def __init__(self, stream: faust.StreamT, reads: ContiguousReads, queue: asyncio.Queue,
                 service: str) -> None:
        self.stream = stream
        self.reads = reads
        self.queue = queue
        self.service = service

    async def from_log(self, tp: TP, start: int, stop: int, generation: int) -> None:
        """Queue `tp`'s records `[start, stop)`, read from the log, like the stream's own."""
        for event in await reread(self.stream, tp, start, stop, self.service, generation):
            await self.queue.put(event)

    async def read(self) -> None:
        async for event in self.stream.events():
            skipped_from = await self.reads.admit(event)
            if skipped_from is not None:
                message = event.message
                await self.from_log(message.tp, skipped_from, message.offset,
                                    message.generation_id)
            await self.queue.put(event)
