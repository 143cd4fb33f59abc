"""`croupier kafka up|status|down` and `topics` as an operator runs them, as processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from services.infra.local_broker import JARS_MARKER, jars_dir
from services.infra.settings import Settings
from shared.topics import CATALOGUE_NAMES, TABLE_EVENTS_TOPIC
from tests.conftest import free_port

pytestmark = pytest.mark.kafka
CROUPIER = [sys.executable, "-m", "services.cli"]


def croupier(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([*CROUPIER, *args], env=env, capture_output=True, text=True,
                          timeout=180, cwd=Path(__file__).resolve().parents[2])


def _local_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "KAFKA_BOOTSTRAP_SERVERS"}
    env.update(CROUPIER_HOME=str(home), CROUPIER_KAFKA_PORT=str(free_port()),
               CROUPIER_KAFKA_CONTROLLER_PORT=str(free_port()),
               CROUPIER_KAFKA_METRICS_PORT=str(free_port()), COLUMNS="200")
    return env


@pytest.mark.skipif(bool(os.environ.get("KAFKA_BOOTSTRAP_SERVERS")),
                    reason="an external cluster is configured: no local broker is managed")
def test_up_status_down_with_cached_jars(tmp_path, kafka_bootstrap):
    # kafka_bootstrap has already fetched the jars on this machine: up must reuse them.
    marker = jars_dir(Settings().cache_dir) / JARS_MARKER
    assert marker.exists()
    marker_mtime = marker.stat().st_mtime_ns
    env = _local_env(tmp_path)

    assert croupier("kafka", "status", env=env).returncode == 1
    up = croupier("kafka", "up", env=env)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert "cached at" in up.stdout and "downloaded" not in up.stdout
        assert marker.stat().st_mtime_ns == marker_mtime
        status = croupier("kafka", "status", env=env)
        assert status.returncode == 0 and "ready" in status.stdout
        again = croupier("kafka", "up", env=env)
        assert again.returncode == 0 and "cached at" in again.stdout

        applied = croupier("topics", "apply", env=env)
        assert applied.returncode == 0 \
            and applied.stdout.count("created") == len(CATALOGUE_NAMES), applied.stdout
        reapplied = croupier("topics", "apply", env=env)
        assert "already match" in reapplied.stdout
        checked = croupier("topics", "check", env=env)
        assert checked.returncode == 0 and "no drift" in checked.stdout \
            and "replication 1" in checked.stdout, checked.stdout + checked.stderr
        status_json = croupier("kafka", "status", "--json", env=env)
        [node] = json.loads(status_json.stdout)["nodes"]
        assert node["id"] == 1 and node["up"] and node["pid"] \
            and node["port"] == int(env["CROUPIER_KAFKA_PORT"])
        # more copies than brokers: refused before anything is written, naming the setting
        three = croupier("topics", "apply", env={**env, "CROUPIER_TOPIC_REPLICATION_FACTOR": "3"})
        assert three.returncode == 2 and "CROUPIER_TOPIC_REPLICATION_FACTOR" in three.stdout \
            and "the cluster has 1" in three.stdout, three.stdout + three.stderr
        # more partitions would move keys: refused with the reason, and check names it
        wider = {**env, "CROUPIER_TOPIC_PARTITIONS": "8"}
        refused_partitions = croupier("topics", "apply", env=wider)
        assert refused_partitions.returncode == 1 \
            and "keys to other partitions" in refused_partitions.stdout, refused_partitions.stdout
        drift = croupier("topics", "check", env=wider)
        assert drift.returncode == 1 and "table.events: partitions 4 live, 8 declared" \
            in drift.stdout, drift.stdout
        assert croupier("topics", "check", env=env).returncode == 0  # nothing was changed
        refused = croupier("topics", "apply", "--retention-ms", "3600000", env=env)
        assert refused.returncode == 2 and "below 24 hours" in refused.stdout
    finally:
        down = croupier("kafka", "down", env=env)
    assert down.returncode == 0 and "kafka stopped" in down.stdout
    assert croupier("kafka", "status", env=env).returncode == 1


def test_external_cluster_is_used_and_no_broker_is_started(tmp_path, kafka_bootstrap):
    env = _local_env(tmp_path)
    env["KAFKA_BOOTSTRAP_SERVERS"] = kafka_bootstrap
    up = croupier("kafka", "up", env=env)
    assert up.returncode == 0, up.stdout + up.stderr
    assert "external kafka" in up.stdout and "ready" in up.stdout
    assert not (tmp_path / "kafka").exists(), "no local broker data may be created"
    described = croupier("topics", "describe", env=env)
    assert described.returncode == 0 and TABLE_EVENTS_TOPIC in described.stdout
