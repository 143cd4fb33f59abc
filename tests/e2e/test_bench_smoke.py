"""Smoke test of the end-to-end benchmark's pure helpers (benchmarks/e2e): percentiles,
/proc CPU parsing, and the largest-record scanner against the session's real broker.
The timed benchmark itself runs only in `make bench`."""

from __future__ import annotations

import os
import uuid

import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from benchmarks.e2e import cpu
from benchmarks.e2e.records import LIMIT_BYTES, largest_records
from benchmarks.e2e.stats import percentile, summary
from services.infra.kafka_security import ADMIN, kafka_python_options


def test_percentiles_interpolate_between_ranks():
    values = list(range(1, 101))  # 1..100
    assert percentile(values, 50) == pytest.approx(50.5)
    assert percentile(values, 99) == pytest.approx(99.01)
    assert percentile([3.0], 99) == 3.0
    assert percentile([], 50) is None
    assert summary([2.0, 1.0]) == {"count": 2, "p50": 1.5, "p99": pytest.approx(1.99), "max": 2.0}
    with pytest.raises(ValueError):
        percentile(values, 101)


def test_proc_stat_parsing_survives_odd_command_names():
    # fields 14 and 15 (utime, stime) after a comm holding spaces and a ')'
    text = "4242 (python -m x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 3 4 20 0 9 0"
    assert cpu.parse_stat(text, ticks=100) == pytest.approx(3.0)


def test_cpu_of_this_process_is_read_and_a_missing_one_is_none():
    assert cpu.cpu_seconds(os.getpid()) >= 0
    assert cpu.cpu_seconds(2**22 + 12345) is None
    per = cpu.per_item({"a": 1.0, "b": None}, {"a": 3.0, "b": 2.0}, items=1000, seconds=10,
                       idle_rate={"a": 0.1})
    assert per == {"a": pytest.approx(1.0), "b": None}  # (2 s - 0.1 × 10 s) / 1000 bets
    assert cpu.by_service({"wallet": 1.0, "wallet/1": 2.0, "dealer-event": None}) == \
        {"wallet": 3.0, "dealer-event": None}


@pytest.mark.kafka
def test_largest_record_scanner_finds_the_biggest_record(kafka_bootstrap):
    topics = [f"bench-smoke-{uuid.uuid4().hex[:8]}-{i}" for i in range(2)]
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap, **kafka_python_options(ADMIN))
    try:
        admin.create_topics([NewTopic(t, 2, 1) for t in topics])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, max_request_size=2 * 1024 * 1024,
                             **kafka_python_options(ADMIN))
    for i in range(50):
        producer.send(topics[0], key=b"k%d" % i, value=b"v" * 100)
    producer.send(topics[1], key=b"big", value=b"x" * 70_000)  # over the 64 KB target
    producer.send(topics[1], key=None, value=b"y" * 10)
    producer.flush()
    producer.close()
    found = largest_records(kafka_bootstrap, topics=topics, timeout_s=60)
    assert found["complete"]
    assert found["records"] == 52
    assert found["largest"]["topic"] == topics[1]
    assert found["largest"]["bytes"] == 3 + 70_000
    assert found["per_topic"][topics[0]] == len(b"k10") + 100
    assert not found["ok"] and found["limit_bytes"] == LIMIT_BYTES
