"""Produce and consume through a consumer group on the real broker."""

from __future__ import annotations

import uuid

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from services.infra import topic_admin
from services.infra.kafka_security import ADMIN, kafka_python_options
from shared.topics import DEALER_REJECTIONS_TOPIC, topic_catalogue

pytestmark = pytest.mark.kafka


def _consume(bootstrap: str, group: str, want: int, tables: set[str]) -> list:
    consumer = KafkaConsumer(
        DEALER_REJECTIONS_TOPIC, bootstrap_servers=bootstrap, group_id=group,
        **kafka_python_options(ADMIN),
        auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=8000,
    )
    got = []
    try:
        for record in consumer:
            if record.key.decode() in tables:
                got.append(record)
            if len(got) >= want:
                break
        consumer.commit()
    finally:
        consumer.close()
    return got


def test_keyed_records_round_trip_in_order_and_the_group_remembers(kafka_bootstrap):
    admin = topic_admin.admin_client(kafka_bootstrap)
    topic_admin.apply(admin, topic_catalogue())
    admin.close()
    run = uuid.uuid4().hex[:8]
    tables = {f"T{run}-{i}" for i in range(3)}
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, **kafka_python_options(ADMIN))
    for seq in range(10):
        for table in sorted(tables):
            producer.send(DEALER_REJECTIONS_TOPIC, key=table.encode(), value=f"{table}:{seq}".encode())
    producer.flush()
    producer.close()

    group = f"croupier-test-{run}"
    got = _consume(kafka_bootstrap, group, want=30, tables=tables)
    assert len(got) == 30
    for table in tables:
        mine = [r for r in got if r.key.decode() == table]
        assert [r.value.decode() for r in mine] == [f"{table}:{s}" for s in range(10)]
        assert len({r.partition for r in mine}) == 1, "one table's records share a partition"

    # The group committed its offsets: a new member of the same group starts after them.
    assert _consume(kafka_bootstrap, group, want=1, tables=tables) == []
    consumer = KafkaConsumer(bootstrap_servers=kafka_bootstrap, group_id=group,
                             **kafka_python_options(ADMIN))
    partition = got[0].partition
    committed = consumer.committed(TopicPartition(DEALER_REJECTIONS_TOPIC, partition))
    consumer.close()
    assert committed is not None and committed > got[0].offset
