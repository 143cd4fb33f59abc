"""Benchmark: replaying one round stays flat as the log grows (it seeks by time).

Target (issue "Disputes"): one round's replay under 2 seconds with 1,000,000
events in the log, and no more than 1.5x its time with 10,000. The baseline is
measured in the same run: the same round replayed when the log held 10,000
events. Runs its own broker in a temporary directory unless
KAFKA_BOOTSTRAP_SERVERS is set.

    python benchmarks/bench_replay.py [--events 1000000] [--repeat 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafka import KafkaProducer  # noqa: E402

from services.infra import topic_admin  # noqa: E402
from services.infra.local_broker import LocalBroker  # noqa: E402
from services.infra.settings import Settings  # noqa: E402
from services.operator.replay_service import ReplayRequest, run_replay  # noqa: E402
from shared.topics import topic_catalogue  # noqa: E402
from tests.conftest import free_port  # noqa: E402
from tests.round_builder import RecordedRound  # noqa: E402

BASELINE_EVENTS = 10_000
FILLER_TABLES = 200


def produce_filler(bootstrap: str, count: int, start: datetime, end: datetime) -> None:
    """`count` table events of other tables, timestamps spread evenly over [start, end)."""
    sample = RecordedRound(table_id="FILLER", round_id="F").events
    values = [e.model_dump_json().encode() for e in sample]
    keys = [f"filler-{i}".encode() for i in range(FILLER_TABLES)]
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, batch_size=512 * 1024,
                             compression_type=None, acks=1, enable_idempotence=False)
    span_ms = (end - start).total_seconds() * 1000
    base_ms = start.timestamp() * 1000
    for i in range(count):
        producer.send("table.events", key=keys[i % FILLER_TABLES], value=values[i % len(values)],
                      timestamp_ms=int(base_ms + span_ms * i / count))
    producer.flush()
    producer.close()


def produce_round(bootstrap: str, rec: RecordedRound) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for topic, key, value, at in rec.records():
        producer.send(topic, key=key.encode(), value=value, timestamp_ms=int(at.timestamp() * 1000))
    producer.flush()
    producer.close()


def time_replay(bootstrap: str, rec: RecordedRound, repeat: int) -> tuple[float, int]:
    times, read = [], 0
    request = ReplayRequest(table_id=rec.table_id, round_id=rec.round_id, played_at=rec.t0)
    for _ in range(repeat):
        began = time.perf_counter()
        report, _, read = run_replay(bootstrap, request)
        times.append(time.perf_counter() - began)
        assert report.verdict == "MATCH", report.differences
    return statistics.median(times), read


def run(bootstrap: str, events: int, repeat: int) -> dict:
    admin = topic_admin.admin_client(bootstrap)
    topic_admin.apply(admin, topic_catalogue())
    admin.close()
    now = datetime.now(UTC)
    rec = RecordedRound(table_id=f"BENCH-{uuid.uuid4().hex[:6]}", round_id="R1",
                        t0=now - timedelta(hours=2))
    produce_filler(bootstrap, BASELINE_EVENTS // 2, now - timedelta(hours=3), rec.t0)
    produce_round(bootstrap, rec)
    produce_filler(bootstrap, BASELINE_EVENTS // 2, rec.t0 + timedelta(minutes=10),
                   now - timedelta(minutes=90))
    small, small_read = time_replay(bootstrap, rec, repeat)
    began = time.perf_counter()
    produce_filler(bootstrap, events - BASELINE_EVENTS, now - timedelta(minutes=90), now)
    fill_seconds = time.perf_counter() - began
    large, large_read = time_replay(bootstrap, rec, repeat)
    return {
        "baseline_log_events": BASELINE_EVENTS, "log_events": events,
        "replay_seconds_baseline": round(small, 4), "replay_seconds": round(large, 4),
        "ratio": round(large / small, 3), "records_read_baseline": small_read,
        "records_read": large_read, "fill_seconds": round(fill_seconds, 1),
        "target_ok": large < 2.0 and large / small <= 1.5,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    external = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    broker = None
    if not external:
        broker = LocalBroker(data_dir=Path(tempfile.mkdtemp(prefix="croupier-bench-")),
                             cache_dir=Settings().cache_dir, port=free_port(),
                             controller_port=free_port())
        broker.start()
    try:
        figures = run(external or broker.bootstrap, args.events, args.repeat)
    finally:
        if broker:
            broker.stop()
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"replay of one round, median of {args.repeat}:")
        print(f"  log of {figures['baseline_log_events']:>9,} events: "
              f"{figures['replay_seconds_baseline']:.3f} s ({figures['records_read_baseline']} "
              "records read)")
        print(f"  log of {figures['log_events']:>9,} events: {figures['replay_seconds']:.3f} s "
              f"({figures['records_read']} records read)")
        print(f"  ratio {figures['ratio']:.2f}x (target <= 1.5x, and < 2 s): "
              f"{'OK' if figures['target_ok'] else 'MISSED'}")
    return 0 if figures["target_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
