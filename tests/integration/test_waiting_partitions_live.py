"""A partition whose records wait in the log while Faust's consumer hands none of them on
(seen after a restart: faust-streaming fetched two of its four partitions) is read from
the log by the worker itself: a real Faust worker in this process, a real broker, one
partition paused in Faust's consumer to stand for the fetch that never comes."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from faust.types import TP
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from croupier.services.infra import metrics
from croupier.services.infra.batching import run_batches
from croupier.services.infra.faust_app import make_app
from croupier.services.infra.kafka_security import ADMIN, kafka_python_options
from croupier.services.infra.settings import Settings
from tests.conftest import free_port

pytestmark = pytest.mark.kafka


async def _until(check, timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.1)
    return True


def test_records_of_a_partition_the_consumer_stopped_fetching_are_applied(kafka_bootstrap,
                                                                          tmp_path):
    topic = f"waiting-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap, **kafka_python_options(ADMIN))
    admin.create_topics([NewTopic(topic, 2, 1)])
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, **kafka_python_options(ADMIN))

    def write(partition: int, count: int) -> None:
        for _ in range(count):
            producer.send(topic, key=b"k", value=b"v", partition=partition)
        producer.flush()

    settings = Settings(kafka_bootstrap_servers=kafka_bootstrap, home=tmp_path,
                        instance=f"waiting-{uuid.uuid4().hex[:6]}", web_port=free_port(),
                        partition_patience_seconds=2)
    applied: list[tuple[int, int]] = []
    skips = metrics.REWINDS.labels("admin", topic)

    async def scenario() -> dict[int, int]:
        app = make_app("admin", settings, persistent=False)  # the super user reads any topic

        @app.agent(app.topic(topic, key_type=bytes, value_type=bytes, internal=False))
        async def collect(stream):
            async def apply(batch):
                applied.extend((e.message.partition, e.message.offset) for e in batch)
            await run_batches(stream, apply)

        await app.start()
        try:
            write(0, 2)
            write(1, 2)
            assert await _until(lambda: len(applied) == 4), applied
            app.consumer.pause_partitions([TP(topic, 1)])  # Faust fetches partition 1 no more
            await asyncio.sleep(0.5)
            write(1, 3)
            write(0, 1)
            assert await _until(lambda: len(set(applied)) == 8), applied
            await asyncio.sleep(1.5)  # the commit interval: the re-read records are acked
        finally:
            await app.stop()
        offsets = admin.list_group_offsets(app.conf.id)[app.conf.id]
        return {tp.partition: meta.offset for tp, meta in offsets.items()
                if tp.topic == topic}

    before = skips._value.get()
    committed = asyncio.run(scenario())
    producer.close()
    admin.close()
    assert sorted(set(applied)) == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (1, 3),
                                    (1, 4)]
    assert [o for p, o in applied if p == 1][2:] == [2, 3, 4]  # in log order, each once
    assert skips._value.get() == before + 1  # one repair, logged and counted
    assert committed == {0: 3, 1: 5}  # and committed: a restart resumes after them
