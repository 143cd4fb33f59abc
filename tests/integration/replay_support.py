"""Support for the live replay and rebuild tests: the topic catalogue applied to their broker,
recorded rounds written onto it as the services would have written them, and the `croupier`
command line run against it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from kafka import KafkaProducer

from services.infra import topic_admin
from services.infra.kafka_security import ADMIN, kafka_python_options
from shared.topics import topic_catalogue
from tests.conftest import free_port
from tests.round_builder import RecordedRound

ROOT = Path(__file__).resolve().parents[2]


def apply_topics(bootstrap: str) -> None:
    """The platform's topics, as `croupier topics apply` would create them."""
    admin = topic_admin.admin_client(bootstrap)
    topic_admin.apply(admin, topic_catalogue())
    admin.close()


def produce_rounds(bootstrap: str, rounds: list[RecordedRound]) -> None:
    produce_records(bootstrap, [r for rec in rounds for r in rec.records()])


def produce_records(bootstrap: str, records: list[tuple[str, str, bytes, datetime]]) -> None:
    """(topic, key, value, timestamp) records appended in the order given."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, **kafka_python_options(ADMIN))
    for topic, key, value, at in records:
        producer.send(topic, key=key.encode(), value=value, timestamp_ms=int(at.timestamp() * 1000))
    producer.flush()
    producer.close()


def record_round_among_others(bootstrap: str) -> RecordedRound:
    """A three-bet round of two players put on the log between six other tables' rounds;
    records are stamped in the order they are appended, as the services' are (a back-dated
    record behind newer ones is not what a live log holds)."""
    run = uuid.uuid4().hex[:6]
    now = datetime.now(UTC)
    others = [RecordedRound(table_id=f"X{run}-{i}", round_id=f"R{i}",
                            t0=now + timedelta(milliseconds=20 * i),
                            bets=((f"x{run}-{i}", f"p{run}", "player", 1000),)) for i in range(6)]
    target = RecordedRound(table_id=f"T{run}", round_id=f"R-{run}",
                           t0=now + timedelta(milliseconds=70),
                           bets=((f"b1-{run}", f"alice-{run}", "banker", 1_000),
                                 (f"b2-{run}", f"alice-{run}", "player", 500),
                                 (f"b3-{run}", f"bob-{run}", "fortune_six", 100)))
    produce_rounds(bootstrap, [*others[:3], target, *others[3:]])
    return target


@contextmanager
def operator_api_process(bootstrap: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """`croupier operator-api` on a free port, answering /health; yields its base URL."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "services.cli", "operator-api",
                             "--port", str(port)],
                            env={**os.environ, "KAFKA_BOOTSTRAP_SERVERS": bootstrap, **(env or {})},
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def croupier(bootstrap: str, *args: str, env: dict[str, str] | None = None
             ) -> subprocess.CompletedProcess:
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": bootstrap, **(env or {})}
    return subprocess.run([sys.executable, "-m", "services.cli", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120)


def replay_args(rec: RecordedRound, *extra: str) -> list[str]:
    return ["replay", "--table", rec.table_id, "--round", rec.round_id,
            "--at", rec.t0.isoformat(), *extra]
