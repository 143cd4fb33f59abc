"""The topic catalogue applied to a real broker, read back with describe_configs (filter all)."""

from __future__ import annotations

import time
import uuid

import pytest
from kafka.admin import ConfigResource, ConfigResourceType

from services.infra import topic_admin
from shared.topics import (
    BETS_SETTLED_TOPIC,
    DAY_MS,
    INDEXES,
    SOURCE_OF_TRUTH,
    TABLE_EVENTS_TOPIC,
    RetentionTooShortError,
    topic_catalogue,
)

pytestmark = pytest.mark.kafka


@pytest.fixture
def admin(kafka_bootstrap):
    client = topic_admin.admin_client(kafka_bootstrap)
    yield client
    client.close()


def test_apply_creates_every_topic_with_declared_partitions_and_configs(admin):
    catalogue = topic_catalogue()
    topic_admin.apply(admin, catalogue)

    described = {t["name"]: t for t in admin.describe_topics([t.name for t in catalogue])}
    answer = admin.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, t.name) for t in catalogue], config_filter="all"
    )["topic"]
    for spec in catalogue:
        assert len(described[spec.name]["partitions"]) == spec.partitions, spec.name
        live = {key: entry["value"] for key, entry in answer[spec.name].items()}
        for key, value in spec.configs.items():
            assert live[key] == value, f"{spec.name} {key}: live {live[key]}, declared {value}"
        # a service's own log is its state, an index is complete only whole: kept forever
        # (-1); every other topic at least the dispute window
        assert int(live["retention.ms"]) >= DAY_MS or (
            (spec.name in SOURCE_OF_TRUTH or spec.name in INDEXES)
            and live["retention.ms"] == "-1")


def test_second_apply_changes_nothing(admin):
    catalogue = topic_catalogue()
    topic_admin.apply(admin, catalogue)
    again = topic_admin.apply(admin, catalogue)
    assert not again.changed
    assert again.created == [] and again.configs_changed == {} and again.drift == []


def test_apply_aligns_a_config_changed_behind_its_back(admin):
    catalogue = topic_catalogue()
    topic_admin.apply(admin, catalogue)
    admin.alter_configs(
        [ConfigResource(ConfigResourceType.TOPIC, BETS_SETTLED_TOPIC,
                        configs={"retention.ms": ("SET", str(3 * DAY_MS))})],
        incremental=True,
    )
    # KRaft applies a config change in the controller and the broker learns it a moment
    # later: wait until the broker describes it, so apply sees what an operator changed
    deadline = time.monotonic() + 15
    while topic_admin.describe(admin, [BETS_SETTLED_TOPIC])[BETS_SETTLED_TOPIC].configs[
            "retention.ms"] != str(3 * DAY_MS):
        assert time.monotonic() < deadline, "the broker never described the changed config"
        time.sleep(0.2)
    report = topic_admin.apply(admin, catalogue)
    assert report.configs_changed == {
        BETS_SETTLED_TOPIC: {"retention.ms": (str(3 * DAY_MS), catalogue[0].configs["retention.ms"])}
    }
    assert not topic_admin.apply(admin, catalogue).changed


def test_retention_below_a_day_is_refused_and_nothing_changes(admin):
    topic_admin.apply(admin, topic_catalogue())
    before = topic_admin.describe(admin, [TABLE_EVENTS_TOPIC])[TABLE_EVENTS_TOPIC].configs["retention.ms"]
    with pytest.raises(RetentionTooShortError, match="below 24 hours"):
        topic_admin.apply(admin, topic_catalogue(retention_ms=DAY_MS - 1))
    after = topic_admin.describe(admin, [TABLE_EVENTS_TOPIC])[TABLE_EVENTS_TOPIC].configs["retention.ms"]
    assert after == before


def test_every_new_partition_takes_its_first_write_when_apply_returns(admin, kafka_bootstrap):
    """An operator's first write after `croupier topics apply` is taken at once: apply
    returns only when every new partition's leader answers for it, not when the metadata
    first names a leader (a loaded broker answered "not leader" for 16 s after that)."""
    from kafka import KafkaProducer

    from services.infra import kafka_security

    suffix = uuid.uuid4().hex[:8]
    fresh = tuple(topic_catalogue()[0].model_copy(update={"name": f"served-{n}-{suffix}",
                                                          "partitions": 8})
                  for n in range(3))
    report = topic_admin.apply(admin, fresh)
    assert sorted(report.created) == sorted(t.name for t in fresh)
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, acks=1, retries=0,
                             **kafka_security.kafka_python_options(kafka_security.ADMIN))
    try:  # no retry: a partition whose leader is not serving yet fails its send
        sent = [producer.send(t.name, key=b"k", value=b"first", partition=p)
                for t in fresh for p in range(t.partitions)]
        offsets = [future.get(timeout=30).offset for future in sent]
    finally:
        producer.close()
    assert offsets == [0] * 24


def test_partitions_no_leader_answers_for_are_named_in_a_clear_error(admin, kafka_bootstrap):
    from kafka import TopicPartition

    name = f"served-missing-{uuid.uuid4().hex[:8]}"
    topic_admin.apply(admin, (topic_catalogue()[0].model_copy(update={"name": name,
                                                                       "partitions": 2}),))
    with pytest.raises(topic_admin.TopicsNotServed, match=name) as raised:
        topic_admin.wait_until_served(kafka_bootstrap, [TopicPartition(name, 0),
                                                        TopicPartition(name, 5)], timeout_s=3)
    assert "croupier topics apply" in str(raised.value)
