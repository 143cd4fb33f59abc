"""Support for the archive's live tests: the archiver as a process of its own, records put on
the catalogue's topics, and the log and the archive read back for comparison."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from kafka import KafkaProducer

from services.archive.archiver import Archiver, ArchiverStats
from services.archive.store_ops import archived_partitions, read_archived
from services.infra.archive_store import ArchiveStore, open_store
from services.infra.kafka_security import ADMIN, kafka_python_options
from services.infra.log_reader import read_to_end

ROOT = Path(__file__).resolve().parents[2]


def archiver_process(bootstrap: str, url: str, log: Path, *args: str,
                     env: dict[str, str] | None = None) -> subprocess.Popen:
    full_env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": bootstrap, **(env or {})}
    return subprocess.Popen(
        [sys.executable, "-m", "services.cli", "archive", "run", "--url", url, *args],
        cwd=ROOT, env=full_env, stdout=log.open("ab"), stderr=subprocess.STDOUT,
        start_new_session=True)


def archive_once(bootstrap: str, url: str) -> ArchiverStats:
    """What `croupier archive run --once` does, in this process (a test that archives many
    times pays the command's start-up once): archive up to the log's end, then stop."""
    archiver = Archiver(bootstrap, open_store(url), flush_seconds=0.3)
    try:
        return archiver.run(threading.Event(), once=True)
    finally:
        archiver.close()


def kill9(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)


def producer(bootstrap: str) -> KafkaProducer:
    return KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, **kafka_python_options(ADMIN))


def log_records(bootstrap: str, topic: str) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """(partition, offset, key, value) of every record the log holds, partition by partition."""
    return sorted((r.partition, r.offset, r.key, r.value) for r in read_to_end(bootstrap, topic))


def archived_records(store: ArchiveStore, topic: str
                     ) -> list[tuple[int, int, bytes | None, bytes | None]]:
    return [(r.partition, r.offset, r.key, r.value) for p in archived_partitions(store, topic)
            for r in read_archived(store, topic, p)]
