"""The largest record on every topic of the broker: the catalogue topics and the
services' private and changelog topics alike (issue 10: no record above 64 KB).

Reads each partition from its start to the end offset it had when the scan began and
keeps only sizes (key + value + headers as serialized). aiokafka, whose record
parsing is compiled, reads the hundreds of thousands of records of a full run in
seconds where a pure-Python client takes minutes. Internal topics (`__consumer_offsets`,
...) are not the platform's and are skipped.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable

from aiokafka import AIOKafkaConsumer
from aiokafka.structs import TopicPartition
from kafka import KafkaConsumer

from services.infra.kafka_security import ADMIN, aiokafka_options, kafka_python_options
from shared.topics import BETS_PLACED_TOPIC

LIMIT_BYTES = 64 * 1024


def _size(record) -> int:
    headers = sum(len(k) + len(v or b"") for k, v in (record.headers or ()))
    return (max(record.serialized_key_size, 0) + max(record.serialized_value_size, 0)
            + headers)


def _partitions(bootstrap: str, topics: Iterable[str] | None) -> dict[str, set[int]]:
    """Every (or every named) non-internal topic and its partitions, from the metadata."""
    meta = KafkaConsumer(bootstrap_servers=bootstrap, **kafka_python_options(ADMIN))
    try:
        names = [t for t in (topics or meta.topics()) if not t.startswith("__")]
        return {t: meta.partitions_for_topic(t) or set() for t in names}
    finally:
        meta.close()


async def _scan(bootstrap: str, topics: Iterable[str] | None, timeout_s: float) -> dict:
    # admin: it scans every topic, the benchmark's own scratch topics included
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                **aiokafka_options(ADMIN),
                                auto_offset_reset="earliest",
                                max_partition_fetch_bytes=16 * 1024 * 1024,
                                fetch_max_bytes=64 * 1024 * 1024)
    await consumer.start()
    try:
        partitions = await asyncio.to_thread(_partitions, bootstrap, topics)
        names = sorted(partitions)
        tps = [TopicPartition(t, p) for t in names for p in partitions[t]]
        per_topic = dict.fromkeys(names, 0)
        counts = dict.fromkeys(names, 0)
        largest = {"topic": None, "partition": None, "offset": None, "bytes": 0}
        records = 0
        left: set[TopicPartition] = set()
        if tps:
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            ends = await consumer.end_offsets(tps)
            left = {tp for tp in tps if ends[tp] > await consumer.position(tp)}
        deadline = time.monotonic() + timeout_s
        while left and time.monotonic() < deadline:
            batch = await consumer.getmany(*left, timeout_ms=500, max_records=50_000)
            for tp, got in batch.items():
                for r in got:
                    if r.offset >= ends[tp]:
                        break
                    records += 1
                    counts[tp.topic] += 1
                    size = _size(r)
                    if size > per_topic[tp.topic]:
                        per_topic[tp.topic] = size
                    if size > largest["bytes"]:
                        largest = {"topic": tp.topic, "partition": tp.partition,
                                   "offset": r.offset, "bytes": size}
            for tp in list(left):  # deleted or compacted ranges leave gaps below the end
                if await consumer.position(tp) >= ends[tp]:
                    left.discard(tp)
        return {"largest": largest, "per_topic": per_topic, "counts": counts,
                "records_per_bet": records_per_bet(counts), "records": records,
                "topics": len(names), "complete": not left, "limit_bytes": LIMIT_BYTES,
                "ok": largest["bytes"] < LIMIT_BYTES and not left}
    finally:
        await consumer.stop()


def records_per_bet(counts: dict[str, int]) -> dict | None:
    """Records the platform wrote per funded bet, over the whole run: every topic but the
    benchmark's own pipe topics (`bench-pipe-*`), divided by the records on `bets.placed`
    (funded bets, plus a few intake marks per round: the figure is a slight underestimate).
    Each topic's share, so a before/after comparison shows where records went."""
    platform = {t: n for t, n in counts.items() if not t.startswith("bench-pipe-")}
    bets = platform.get(BETS_PLACED_TOPIC, 0)
    if not bets:
        return None
    return {"bets": bets, "records": sum(platform.values()),
            "per_bet": sum(platform.values()) / bets,
            "by_topic": {t: round(n / bets, 2) for t, n in sorted(platform.items()) if n}}


def largest_records(bootstrap: str, topics: Iterable[str] | None = None,
                    timeout_s: float = 300.0) -> dict:
    """{"largest": {"topic", "partition", "offset", "bytes"}, "per_topic": {topic: bytes},
    "records": n, "complete": bool, "ok": bool}; `complete` is False if time ran out."""
    return asyncio.run(_scan(bootstrap, list(topics) if topics else None, timeout_s))
