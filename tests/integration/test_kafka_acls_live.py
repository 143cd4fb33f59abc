"""Only the owner writes a topic (issue 11, item 3), proved against the real broker: it
authenticates every client (SASL) and refuses, by ACL, a forged produce from any principal
but the topic's owner; a client without credentials gets nowhere."""

from __future__ import annotations

import os
import uuid

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError, TopicAuthorizationFailedError

from services.infra import topic_admin
from services.infra.kafka_security import (
    ADMIN,
    OPERATOR,
    PRINCIPALS,
    TABLE_DEVICE,
    WRITERS,
    kafka_python_options,
    secured,
)
from services.infra.settings import Settings
from shared.topics import (
    BETS_SETTLED_TOPIC,
    DEALER_INPUTS_TOPIC,
    OPERATOR_ACTIONS_TOPIC,
    ROUND_RESULTS_TOPIC,
    TABLE_CORRECTIONS_TOPIC,
    TABLE_EVENTS_TOPIC,
    WALLET_TRANSACTIONS_TOPIC,
    topic_catalogue,
)

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.skipif(bool(os.environ.get("KAFKA_BOOTSTRAP_SERVERS")),
                       reason="needs the local broker's principals and ACLs"),
    pytest.mark.skipif(not secured(Settings()), reason="CROUPIER_KAFKA_SECURITY_PROTOCOL=PLAINTEXT"),
]


@pytest.fixture(scope="module")
def bootstrap(kafka_bootstrap: str) -> str:
    admin = topic_admin.admin_client(kafka_bootstrap)
    try:
        topic_admin.apply(admin, topic_catalogue(), acls_for="acl-test")
    finally:
        admin.close()
    return kafka_bootstrap


def produce(bootstrap: str, principal: str, topic: str) -> None:
    """One record on `topic` as `principal`; raises what the broker answered. Not
    idempotent: a principal with no write right at all (the operator) is otherwise refused
    even earlier, at InitProducerId (ClusterAuthorizationFailed); this tests the topic ACL."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, max_block_ms=10_000,
                             request_timeout_ms=10_000, enable_idempotence=False,
                             **kafka_python_options(principal))
    try:
        forged = f'{{"forged_by":"{principal}","id":"{uuid.uuid4().hex}"}}'.encode()
        producer.send(topic, key=b"T-forged", value=forged).get(timeout=15)
    finally:
        producer.close(timeout=5)


def refused(bootstrap: str, principal: str, topic: str) -> bool:
    try:
        produce(bootstrap, principal, topic)
    except TopicAuthorizationFailedError:
        return True
    return False


OTHERS_THAN_DEALER_EVENT = ("wallet", "game-evaluation", "bet-settlement", TABLE_DEVICE, OPERATOR)


@pytest.mark.parametrize("principal", OTHERS_THAN_DEALER_EVENT)
def test_the_broker_refuses_a_forged_table_event_from_any_other_principal(
        bootstrap: str, principal: str) -> None:
    assert refused(bootstrap, principal, TABLE_EVENTS_TOPIC)


def test_dealer_event_writes_table_events(bootstrap: str) -> None:
    produce(bootstrap, "dealer-event", TABLE_EVENTS_TOPIC)


@pytest.mark.parametrize("topic", [ROUND_RESULTS_TOPIC, WALLET_TRANSACTIONS_TOPIC, DEALER_INPUTS_TOPIC,
                                   BETS_SETTLED_TOPIC, OPERATOR_ACTIONS_TOPIC,
                                   TABLE_CORRECTIONS_TOPIC])
def test_every_topic_is_written_by_its_owners_only(bootstrap: str, topic: str) -> None:
    owners = set(WRITERS[topic])
    for principal in PRINCIPALS:
        if principal == ADMIN:
            continue  # the super user: it applies topics and ACLs
        if principal in owners:
            produce(bootstrap, principal, topic)
        else:
            assert refused(bootstrap, principal, topic), f"{principal} wrote {topic}"


def test_the_operator_reads_every_topic_and_writes_only_its_overrides(bootstrap: str) -> None:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                             enable_auto_commit=False, **kafka_python_options(OPERATOR))
    try:
        for topic in WRITERS:
            tps = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic)]
            assert consumer.end_offsets(tps)  # READ/DESCRIBE granted
    finally:
        consumer.close()
    for topic in WRITERS:
        if topic == OPERATOR_ACTIONS_TOPIC:  # each use of an override (issue 19), nothing else
            produce(bootstrap, OPERATOR, topic)
        else:
            assert refused(bootstrap, OPERATOR, topic), topic


def test_a_client_without_credentials_is_refused(bootstrap: str) -> None:
    with pytest.raises(KafkaError):
        producer = KafkaProducer(bootstrap_servers=bootstrap, max_block_ms=5_000,
                                 request_timeout_ms=5_000, bootstrap_timeout_ms=5_000,
                                 security_protocol="PLAINTEXT")
        try:
            producer.send(TABLE_EVENTS_TOPIC, key=b"T-forged", value=b"{}").get(timeout=10)
        finally:
            producer.close(timeout=2)


def test_a_wrong_password_is_refused(bootstrap: str) -> None:
    options = {**kafka_python_options("dealer-event"), "sasl_plain_password": "guessed"}
    with pytest.raises(KafkaError):
        producer = KafkaProducer(bootstrap_servers=bootstrap, max_block_ms=5_000,
                                 request_timeout_ms=5_000, bootstrap_timeout_ms=5_000,
                                 **options)
        try:
            producer.send(TABLE_EVENTS_TOPIC, key=b"T-forged", value=b"{}").get(timeout=10)
        finally:
            producer.close(timeout=2)


def test_the_table_simulator_writes_dealer_inputs_as_a_table_device(bootstrap: str) -> None:
    """`simulate-table --via-kafka` is a device: it may write dealer.inputs, nothing else."""
    from services.simulators.tables.transport import KafkaTransport

    transport = KafkaTransport(bootstrap)
    producer = transport._producer
    try:
        assert producer.config["sasl_plain_username"] == TABLE_DEVICE
        producer.send(DEALER_INPUTS_TOPIC, key=b"T-device", value=b"{}").get(timeout=30)
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send(TABLE_EVENTS_TOPIC, key=b"T-device", value=b"{}").get(timeout=30)
    finally:
        producer.close(timeout=5)
