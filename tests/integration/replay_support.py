"""Support for the live replay and rebuild tests: the topic catalogue applied to their broker,
recorded rounds written onto it as the services would have written them, and the `croupier`
command line run against it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from kafka import KafkaProducer

from croupier.services.infra import topic_admin
from croupier.services.infra.kafka_security import ADMIN, kafka_python_options
from croupier.shared.topics import topic_catalogue
from tests.round_builder import RecordedRound

ROOT = Path(__file__).resolve().parents[2]


def apply_topics(bootstrap: str) -> None:
    """The platform's topics, as `croupier topics apply` would create them."""
    admin = topic_admin.admin_client(bootstrap)
    topic_admin.apply(admin, topic_catalogue())
    admin.close()


def produce_rounds(bootstrap: str, rounds: list[RecordedRound]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, **kafka_python_options(ADMIN))
    for rec in rounds:
        for topic, key, value, at in rec.records():
            producer.send(topic, key=key.encode(), value=value,
                          timestamp_ms=int(at.timestamp() * 1000))
    producer.flush()
    producer.close()


def croupier(bootstrap: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": bootstrap}
    return subprocess.run([sys.executable, "-m", "croupier.services.cli", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120)


def replay_args(rec: RecordedRound, *extra: str) -> list[str]:
    return ["replay", "--table", rec.table_id, "--round", rec.round_id,
            "--at", rec.t0.isoformat(), *extra]
