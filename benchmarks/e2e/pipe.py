"""The baseline: a raw 4-hop aiokafka consume→produce pipe on the same broker.

producer → A → hop → B → hop → C → hop → D → sink. Each hop takes what a fetch
returns, produces it onward and waits for the acks together, which is the least a
Kafka service does per record, with no business logic and no state. Every figure of
the platform is divided by what this pipe does in the same run, so the ratios say
how far the services are from the broker's and the client library's own cost.
"""

from __future__ import annotations

import asyncio
import struct
import time
import uuid

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from benchmarks.e2e.stats import summary
from services.infra.kafka_clients import DURABLE_PRODUCER
from services.infra.kafka_security import ADMIN, aiokafka_options, kafka_python_options
from shared.topics import durability_configs

PAYLOAD_BYTES = 300  # about a BetPlaced record
WARMUP = 20


def _create_topics(bootstrap: str, names: list[str], partitions: int, replication: int) -> None:
    """As replicated and as durable as the platform's topics (shared/topics.py)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="bench-pipe",
                             **kafka_python_options(ADMIN))
    try:
        admin.create_topics([NewTopic(n, partitions, replication,
                                      topic_configs=durability_configs(replication))
                             for n in names])
    finally:
        admin.close()


async def _consumer(bootstrap: str, topic: str, partitions: int) -> AIOKafkaConsumer:
    """Assigned, not subscribed: no group join, reading from the start of a fresh topic."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                auto_offset_reset="earliest", **aiokafka_options(ADMIN))
    await consumer.start()
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    await consumer.seek_to_beginning(*tps)
    return consumer


async def _hop(consumer: AIOKafkaConsumer, producer: AIOKafkaProducer, dst: str, count: int,
               deadline: float) -> int:
    moved = 0
    while moved < count and time.monotonic() < deadline:
        batch = await consumer.getmany(timeout_ms=100, max_records=2000)
        acks = []
        for records in batch.values():
            for r in records:
                acks.append(await producer.send(dst, r.value, key=r.key))
        if acks:
            await asyncio.gather(*acks)
            moved += len(acks)
    return moved


async def _sink(consumer: AIOKafkaConsumer, arrivals: list[tuple[float, float]], count: int,
                deadline: float) -> None:
    """(send time, arrival time) of each message; its send time is in its first 8 bytes."""
    while len(arrivals) < count and time.monotonic() < deadline:
        batch = await consumer.getmany(timeout_ms=100, max_records=5000)
        now = time.time()
        for records in batch.values():
            for r in records:
                arrivals.append((struct.unpack(">d", r.value[:8])[0], now))


async def run_pipe(bootstrap: str, messages: int, rate: float | None, partitions: int = 4,
                   timeout_s: float = 120.0, replication: int = 1) -> dict:
    """Push `messages` through the 4 hops: as fast as possible (rate None) or paced at
    `rate` per second. Returns messages/s (first send → last arrival) and latency p50/p99."""
    tag = uuid.uuid4().hex[:8]
    names = [f"bench-pipe-{tag}-{x}" for x in "ABCD"]
    await asyncio.to_thread(_create_topics, bootstrap, names, partitions, replication)
    deadline = time.monotonic() + timeout_s
    consumers = [await _consumer(bootstrap, n, partitions) for n in names]
    # written as the services write: acks=all, idempotent (kafka_clients.DURABLE_PRODUCER)
    producers = [AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=2,
                                 max_batch_size=512 * 1024, **DURABLE_PRODUCER,
                                 **aiokafka_options(ADMIN)) for _ in range(4)]
    for p in producers:
        await p.start()
    filler = b"x" * (PAYLOAD_BYTES - 8)
    arrivals: list[tuple[float, float]] = []
    total = WARMUP + messages
    try:
        hops = [asyncio.create_task(_hop(consumers[i], producers[i + 1], names[i + 1], total,
                                         deadline)) for i in range(3)]
        sink = asyncio.create_task(_sink(consumers[3], arrivals, total, deadline))

        async def send(i: int) -> asyncio.Future:
            value = struct.pack(">d", time.time()) + filler
            return await producers[0].send(names[0], value, key=str(i % 64).encode())

        # warm-up: metadata, connections and fetch positions settle before the clock starts
        await asyncio.gather(*[await send(i) for i in range(WARMUP)])
        while len(arrivals) < WARMUP and time.monotonic() < deadline and not sink.done():
            await asyncio.sleep(0.01)
        cpu0 = time.process_time()
        first = time.time()
        acks = []
        for i in range(messages):
            if rate:
                await asyncio.sleep(max(0.0, first + i / rate - time.time()))
            acks.append(await send(i))
            if len(acks) >= 1000:
                await asyncio.gather(*acks)
                acks = []
        await asyncio.gather(*acks)
        await sink
        cpu = time.process_time() - cpu0
        for h in hops:
            h.cancel()
        await asyncio.gather(*hops, return_exceptions=True)
    finally:
        for c in consumers:
            await c.stop()
        for p in producers:
            await p.stop()
    timed = arrivals[WARMUP:]
    latencies = [arrived - sent for sent, arrived in timed]
    last = max((arrived for _, arrived in timed), default=None)
    seconds = (last - first) if last else None
    lat = summary(latencies)
    return {"messages": messages, "delivered": len(latencies), "offered_rate": rate,
            "messages_per_s": (len(latencies) / seconds) if seconds else None,
            "latency_p50_s": lat["p50"], "latency_p99_s": lat["p99"],
            "cpu_ms_per_message": cpu * 1000 / max(1, len(latencies)), "topics": names}


async def baseline(bootstrap: str, flood: int, paced_rate: float, paced_seconds: float,
                   replication: int = 1) -> dict:
    """Throughput from a flood of `flood` messages; latency from a paced run at the rate
    the HTTP latency is measured at, so both latencies are taken unsaturated."""
    fast = await run_pipe(bootstrap, flood, None, replication=replication)
    paced = await run_pipe(bootstrap, max(1, int(paced_rate * paced_seconds)), paced_rate,
                           replication=replication)
    return {"messages_per_s": fast["messages_per_s"],
            "flood_latency_p99_s": fast["latency_p99_s"],
            "latency_p50_s": paced["latency_p50_s"], "latency_p99_s": paced["latency_p99_s"],
            "cpu_ms_per_message": fast["cpu_ms_per_message"],
            "flood": fast, "paced": paced}
