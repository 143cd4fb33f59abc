"""Read a topic from the start of retention to the end offsets it had when the read started.

With an archive, from the start of the archive: the archive's
`services.archive.store_ops.read_archive_then_log` reads what retention has deleted
from a partition there and the rest here.

The one way the platform reads a whole topic: dealer-event rebuilding its table
states before it takes any input, the audit and `croupier rebuild`, and tests
reading back what the services wrote. Order within a partition is the log's.
kafka-python, blocking: callers on an event loop run it in a thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from kafka import KafkaConsumer, TopicPartition
from kafka.consumer.fetcher import ConsumerRecord

from services.infra.kafka_security import OPERATOR, kafka_python_options

if TYPE_CHECKING:  # faust only where LogEnds runs (the services): the CLI's readers skip it
    from faust.types import TP


class LogReadError(RuntimeError):
    pass


def log_reader(bootstrap: str, principal: str) -> KafkaConsumer:
    """A consumer outside any group (it commits nothing) with large fetches."""
    return KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                         group_id=None, client_id="croupier-log-reader",
                         max_partition_fetch_bytes=8 * 1024 * 1024,
                         fetch_max_bytes=64 * 1024 * 1024,
                         **kafka_python_options(principal))


def read_to_end(bootstrap: str, topic: str, progress: Callable[[int, int], None] | None = None,
                stall_s: float = 30.0, partitions: Iterable[int] | None = None,
                principal: str = OPERATOR, ends_out: dict[int, int] | None = None
                ) -> Iterator[ConsumerRecord]:
    """Every record of `topic` up to the end offsets it had when the read started.

    `progress(done, total)` is told after each poll; a read that makes no progress for
    `stall_s` seconds fails (a long log is fine, a stuck one is not). `partitions`: read
    only these partitions (a worker rebuilding the keys of the partitions assigned to it);
    None reads them all. Large fetches, and partitions paused once read to their end, keep
    the cost per record independent of the log's size. `ends_out` is given each partition's
    end offset (where the read stops: the next record lands there)."""
    consumer = log_reader(bootstrap, principal)
    wanted = None if partitions is None else set(partitions)
    try:
        existing = consumer.partitions_for_topic(topic)
        if not existing:
            raise LogReadError(f"topic {topic} does not exist; run `croupier topics apply`")
        if wanted is not None:
            missing = wanted - existing
            if missing:
                raise LogReadError(f"topic {topic} has no partition(s) {sorted(missing)}")
            existing = wanted
        tps = [TopicPartition(topic, p) for p in sorted(existing)]
        if not tps:
            return
        consumer.assign(tps)
        begins = consumer.beginning_offsets(tps)
        ends = consumer.end_offsets(tps)
        if ends_out is not None:
            ends_out.update({tp.partition: ends[tp] for tp in tps})
        total = sum(ends[tp] - begins[tp] for tp in tps)
        pending = {tp for tp in tps if ends[tp] > begins[tp]}
        consumer.pause(*(set(tps) - pending))
        for tp in pending:
            consumer.seek(tp, begins[tp])
        done = 0
        last_progress = time.monotonic()
        while pending:
            if time.monotonic() - last_progress > stall_s:
                raise LogReadError(f"reading {topic} stalled for {stall_s:.0f} s "
                                   f"at {done} of {total} records")
            for tp, records in consumer.poll(timeout_ms=500, max_records=5000).items():
                end = ends[tp]
                for record in records:
                    if record.offset < end:
                        done += 1
                        yield record
                if records:
                    last_progress = time.monotonic()
            if progress:
                progress(done, total)
            for tp in list(pending):  # also past trailing transaction markers, never returned
                if consumer.position(tp) >= ends[tp]:
                    pending.discard(tp)
                    consumer.pause(tp)
    finally:
        consumer.close()


def log_starts(bootstrap: str, topic: str, principal: str = OPERATOR) -> dict[int, int]:
    """Each partition's first offset the log still holds."""
    consumer = log_reader(bootstrap, principal)
    try:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        return {tp.partition: offset for tp, offset in consumer.beginning_offsets(tps).items()}
    finally:
        consumer.close()


class LogEnds:
    """The end offsets of partitions, from a client outside any group (used in a thread;
    recreated after a failure)."""

    def __init__(self, bootstrap: str, principal: str) -> None:
        self.bootstrap = bootstrap
        self.principal = principal
        self._consumer: KafkaConsumer | None = None

    def read(self, tps: Iterable[TP]) -> dict[TP, int]:
        wanted = [TopicPartition(tp.topic, tp.partition) for tp in tps]
        if not wanted:
            return {}
        if self._consumer is None:
            self._consumer = log_reader(self.bootstrap, self.principal)
        try:
            ends = self._consumer.end_offsets(wanted)
        except Exception:
            self.close()
            raise
        from faust.types import TP
        return {TP(tp.topic, tp.partition): end for tp, end in ends.items()}

    def close(self) -> None:
        if self._consumer is not None:
            consumer, self._consumer = self._consumer, None
            consumer.close()
