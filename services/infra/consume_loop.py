"""The kernel's consume loop, under every consuming path of a service (`consume`), and its
other mode for a view every worker keeps whole (`follow`): what each input partition is
read from, and the records (`InputRecord`) every batch hands on to the service's `apply`
(for a service on its own log, `kernel.run_own_log`). docs/decisions/kernel.md.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import faust
from aiokafka import AIOKafkaConsumer
from aiokafka import TopicPartition as ConsumerTP
from aiokafka.admin import AIOKafkaAdminClient
from faust.types import TP

from services.infra.batching import BATCH_MAX, ApplyBatch, track_buffer, transient
from services.infra.consumer import (
    Owners,
    kernel_group,
    new_consumer,
    register,
    subscribe,
)
from services.infra.faust_app import service_of, settings_of
from services.infra.kafka_security import aiokafka_options
from services.infra.observability import progress_of

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Message:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes
    timestamp: float | None = None  # seconds since the epoch (as Faust's messages)

    @property
    def tp(self) -> TP:
        return TP(self.topic, self.partition)


class InputRecord:
    """An input record as the kernel hands it to `decide` (the shape of a Faust event:
    `message` with topic, partition, offset, key, value and timestamp; `key`, `value`)."""

    def __init__(self, topic: str, partition: int, offset: int, key: bytes | None,
                 value: bytes, timestamp: float | None = None) -> None:
        self.message = _Message(topic, partition, offset, key, value, timestamp)
        self.key, self.value = key, value

    @classmethod
    def of(cls, record: Any) -> InputRecord:
        """A consumer record (aiokafka's)."""
        return cls(record.topic, record.partition, record.offset, record.key, record.value,
                   record.timestamp / 1000 if record.timestamp is not None else None)


class LostPartition(Exception):
    """Another writer keeps winning these partitions' log: this worker no longer owns them
    (the consume loop positions them again from the log, as on an assignment)."""

    def __init__(self, message: str, partitions: set[int]) -> None:
        super().__init__(message)
        self.partitions = partitions


ResumeAt = Callable[[TP], Awaitable["int | None"]]  # where an input partition resumes
Hook = Callable[[set[int]], "Awaitable[None] | None"]


async def consume(app: faust.App, topics: Sequence[str], position: ResumeAt,
                  apply: ApplyBatch, revoked: Hook, assigned: Hook | None = None,
                  max_records: int = BATCH_MAX) -> None:
    """The kernel's consume loop, under every consuming path of a service: each input
    partition assigned to this worker waits, paused, until `position(tp)` says where it
    resumes (the service's own log's checkpoint; None: the log knows nothing of it, so
    the group's commit, else the partition's start); then every batch the consumer
    fetches (one record at low load, up to `max_records` under load) goes through
    `apply`, and the group's commit after it only tells monitoring how far it got.
    `revoked`/`assigned`: the partitions (numbers) a rebalance took or gave."""
    service = service_of(app)
    settings = settings_of(app)
    track_buffer(app.producer)
    progress = progress_of(app)
    owners = register(app.conf.id, Owners(str(app.conf.canonical_url),
                                          kernel_group(settings.instance, service)))
    consumer = new_consumer(settings.bootstrap_servers, owners.group, owners,
                            aiokafka_options(service),
                            session_timeout_ms=int(app.conf.broker_session_timeout * 1000),
                            heartbeat_interval_ms=int(app.conf.broker_heartbeat_interval * 1000))
    subscribe(consumer, topics, owners, revoked, assigned)
    await consumer.start()
    commits = _Commits()
    try:
        while True:
            await _position(consumer, owners, position, service)
            fetched = await consumer.getmany(timeout_ms=200, max_records=max_records)
            batch: list[Any] = [InputRecord.of(record) for tp, records in fetched.items()
                                if TP(tp.topic, tp.partition) in owners.ready
                                for record in records]
            if not batch:
                await commits.flush(consumer, owners)  # idle: the group's commit catches up
                continue
            try:
                await apply(batch)
            except LostPartition as lost:  # positioned again, from the log
                log.warning("%s: %s", service, lost)
                owners.ready -= {tp for tp in owners.ready if tp.partition in lost.partitions}
                continue
            commits.add(batch)
            if commits.due():
                await commits.flush(consumer, owners)
            progress.batch_finished()
    finally:
        await consumer.stop()


COMMIT_EVERY_S = 0.5  # under load, the group's commit at most this often (monitoring only)


class _Commits:
    """The group's offsets after the batches applied, committed at most every
    `COMMIT_EVERY_S` under load and at once when the loop goes idle: the commit only tells
    monitoring (lag) and tests how far a worker got, never where it resumes, and one commit
    request per batch cost each service an OffsetCommit round trip (and the broker a
    write to its offsets log) per batch (measured: 2-3 % of the wallet's and
    bet-settlement's event loop at intake)."""

    def __init__(self) -> None:
        self.nexts: dict[ConsumerTP, int] = {}
        self.last = time.monotonic()

    def add(self, batch: Sequence[Any]) -> None:
        nexts = self.nexts
        for event in batch:
            m = event.message
            at = ConsumerTP(m.topic, m.partition)
            if m.offset + 1 > nexts.get(at, 0):
                nexts[at] = m.offset + 1

    def due(self) -> bool:
        return time.monotonic() - self.last >= COMMIT_EVERY_S

    async def flush(self, consumer: Any, owners: Owners) -> None:
        self.last = time.monotonic()
        if not self.nexts:
            return
        nexts, self.nexts = self.nexts, {}
        held = {at: n for at, n in nexts.items() if TP(at.topic, at.partition) in owners.held}
        if held:
            await _commit(consumer, held)


async def _position(consumer: Any, owners: Owners, position: ResumeAt, service: str) -> None:
    """Position each held input partition not yet ready where `position` says (a broker
    failing this is retried on the next turn; the partition stays paused meanwhile)."""
    for tp in sorted(owners.held - owners.ready):
        try:
            at = await position(tp)
        except Exception as error:  # noqa: BLE001 - retried next turn, the partition paused
            if not transient(error):
                raise
            log.warning("%s: positioning %s[%d] failed (%r); retrying", service, tp.topic,
                        tp.partition, error)
            await asyncio.sleep(0.5)
            return
        if tp not in owners.held:  # revoked meanwhile
            continue
        partition = ConsumerTP(tp.topic, tp.partition)
        if at is None:  # the log names nothing of it: the group's commit, else the start
            at = await consumer.committed(partition) or 0
        consumer.seek(partition, at)
        consumer.resume(partition)
        owners.ready.add(tp)
        log.info("%s: %s[%d] resumes at %d", service, tp.topic, tp.partition, at)


async def _commit(consumer: Any, nexts: dict[ConsumerTP, int]) -> None:
    """The group's offsets `nexts`: for monitoring (lag), never to resume from."""
    try:
        await consumer.commit(nexts)
    except Exception as error:  # noqa: BLE001 - a rebalance in between: the next owner
        # resumes from its own log anyway
        log.info("committing the group's offsets failed (%r); nothing depends on it", error)


async def follow(app: faust.App, topic: str, since_ms: Callable[[], int], apply: ApplyBatch,
                 caught_up: Callable[[], None], max_records: int = BATCH_MAX) -> None:
    """The kernel's loop for a view every worker keeps whole (the wallet's table views):
    every partition of `topic`, outside any group (nothing committed, nothing owned), each
    from its first record at or after `since_ms()` (the end if none), every fetched batch
    through `apply`; `caught_up()` once every partition has reached the end it had when the
    loop began. The view is a fold of those records, in memory: a failure (the broker gone)
    starts the loop over from `since_ms()`, so `apply` must be idempotent on what it has
    folded."""
    service = service_of(app)
    bootstrap = settings_of(app).bootstrap_servers
    while True:
        try:
            await _follow_once(service, bootstrap, topic, since_ms, apply, caught_up, max_records)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - the broker went away: start over from the log
            log.exception("%s: following %s failed; starting over", service, topic)
            await asyncio.sleep(1)


async def _partitions_of(service: str, bootstrap: str, topic: str) -> list[int]:
    """`topic`'s partitions as the cluster says now (a fresh metadata request through the
    admin client, not a consumer's cache); waits while the topic does not exist yet."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, **aiokafka_options(service))
    await admin.start()
    try:
        while True:
            described = await admin.describe_topics([topic])
            partitions = sorted(p["partition"] for t in described if t["topic"] == topic
                                and not t["error_code"] for p in t["partitions"])
            if partitions:
                return partitions
            log.warning("%s: waiting for topic %s", service, topic)
            await asyncio.sleep(1)
    finally:
        await admin.close()


async def _follow_once(service: str, bootstrap: str, topic: str, since_ms: Callable[[], int],
                       apply: ApplyBatch, caught_up: Callable[[], None],
                       max_records: int) -> None:
    partitions = await _partitions_of(service, bootstrap, topic)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                enable_auto_commit=False, auto_offset_reset="earliest",
                                **aiokafka_options(service))
    await consumer.start()
    try:
        tps = [ConsumerTP(topic, p) for p in partitions]
        consumer.assign(tps)
        since = since_ms()
        starts = await consumer.offsets_for_times({tp: since for tp in tps})
        for tp in tps:
            if starts.get(tp) is None:
                await consumer.seek_to_end(tp)
            else:
                consumer.seek(tp, starts[tp].offset)
        ends = await consumer.end_offsets(tps)
        behind = True
        while True:
            fetched = await consumer.getmany(timeout_ms=200, max_records=max_records)
            batch = [InputRecord.of(record) for records in fetched.values()
                     for record in records]
            if batch:
                await apply(batch)
            if behind and all([await consumer.position(tp) >= ends[tp] for tp in tps]):
                behind = False
                caught_up()
    finally:
        await consumer.stop()
