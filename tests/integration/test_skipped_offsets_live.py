"""Offsets Faust's stream skipped are re-read from the real log: exactly the missing
range, decoded by the stream's own channel into events that carry their partition and
offset (the batch applies them before the record that jumped and acks them in order)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from faust.types import TP
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.structs import OffsetAndMetadata

from croupier.services.infra.contiguous import committed_offsets, reread
from croupier.services.infra.faust_app import make_app
from croupier.services.infra.kafka_security import ADMIN, kafka_python_options
from croupier.services.infra.log_reader import read_range
from croupier.services.infra.settings import Settings

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def written(kafka_bootstrap) -> tuple[str, list[bytes]]:
    """A fresh two-partition topic; ten records on partition 1 (and noise on 0)."""
    topic = f"skips-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap, **kafka_python_options(ADMIN))
    admin.create_topics([NewTopic(topic, 2, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, **kafka_python_options(ADMIN))
    values = [f"record {i}".encode() for i in range(10)]
    for i, value in enumerate(values):
        producer.send(topic, key=f"k{i}".encode(), value=value, partition=1)
        producer.send(topic, key=b"noise", value=b"noise", partition=0)
    producer.flush()
    producer.close()
    return topic, values


def test_read_range_returns_exactly_the_missing_offsets(kafka_bootstrap, written):
    topic, values = written
    records = read_range(kafka_bootstrap, topic, 1, 3, 7, principal=ADMIN)
    assert [(r.offset, r.value) for r in records] == [(o, values[o]) for o in range(3, 7)]
    assert read_range(kafka_bootstrap, topic, 1, 9, 10, principal=ADMIN)[0].value == values[9]


def test_reread_events_look_like_the_streams_own(kafka_bootstrap, written, tmp_path):
    topic, values = written
    settings = Settings(kafka_bootstrap_servers=kafka_bootstrap, home=tmp_path, instance="skips")
    app = make_app("game-evaluation", settings, persistent=False)
    stream = app.topic(topic, key_type=bytes, value_type=bytes).stream()
    tp = TP(topic, 1)
    events = asyncio.run(reread(stream, tp, 4, 6, ADMIN, generation_id=7))
    assert [(e.message.tp, e.message.offset, e.message.generation_id) for e in events] == [
        (tp, 4, 7), (tp, 5, 7)]
    assert [(e.key, e.value) for e in events] == [(b"k4", values[4]), (b"k5", values[5])]
    assert all(e.message.timestamp > 0 for e in events)


def test_committed_offsets_are_the_groups_own(kafka_bootstrap, written, tmp_path):
    """The baseline for the first record after a rebalance: what the group committed."""
    topic, _ = written
    settings = Settings(kafka_bootstrap_servers=kafka_bootstrap, home=tmp_path,
                        instance=f"skips-{uuid.uuid4().hex[:6]}")
    app = make_app("game-evaluation", settings, persistent=False)
    consumer = KafkaConsumer(bootstrap_servers=kafka_bootstrap, group_id=app.conf.id,
                             enable_auto_commit=False, **kafka_python_options(ADMIN))
    consumer.commit({TopicPartition(topic, 1): OffsetAndMetadata(6, "", -1)})
    consumer.close()
    assert asyncio.run(committed_offsets(app, ADMIN)()) == {TP(topic, 1): 6}
