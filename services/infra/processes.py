"""Start, watch and stop the services as separate OS processes (demo, tests, operators).

Each service runs as `python -m services.<package> worker`; readiness is its
`GET /health` answering 200, not merely a live pid.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import httpx

from services.infra import service_table
from services.infra.kafka_security import principal_env
from services.infra.settings import Settings


class JsonModel(Protocol):
    """A pydantic model as a process's environment carries it (the operator wallet's
    `Faults`: infra knows no simulator)."""

    def model_dump_json(self) -> str: ...


# settings every service process must share with the demo driver
SHARED_ENV = ("env", "instance", "home", "kafka_bootstrap_servers", "kafka_brokers",
              "topic_replication_factor",
              *(s.port_setting for s in service_table.SERVICES), "operator_api_port",
              "table_signing_secret", "table_events_key",
              "table_events_accept_unsigned", "operator_token", "player_token_secret",
              "player_token_key_id", "player_token_previous_keys", "player_token_ttl_seconds",
              "betting_window_seconds", "topic_partitions", "retention_ms",
              "kafka_security_protocol", "kafka_sasl_mechanism", "kafka_ssl_cafile",
              "kafka_local_secret", "cache_dir", "archive_url", "archive_flush_seconds",
              "archive_s3_access_key", "archive_s3_secret_key", "snapshot_every_entries",
              "snapshot_every_seconds", "wallet_state_window_hours")


# settings of one process alone: never handed on to the processes a stack starts
PER_PROCESS = frozenset({"worker_id", "web_port", "kafka_username", "kafka_password"})


def service_env(settings: Settings) -> dict[str, str]:
    """The environment a stack's processes share: the settings above, and every other
    setting this process was given (so a setting added later reaches them too)."""
    env = {}
    given = sorted(set(settings.model_fields_set) - set(SHARED_ENV) - PER_PROCESS)
    for name in (*SHARED_ENV, *given):
        value = getattr(settings, name)
        if value is None:
            continue
        key = "KAFKA_BOOTSTRAP_SERVERS" if name == "kafka_bootstrap_servers" else \
            f"CROUPIER_{name.upper()}"
        if isinstance(value, dict):
            env[key] = json.dumps(value)
        else:
            env[key] = str(value.resolve() if isinstance(value, Path) else value)
    env["KAFKA_BOOTSTRAP_SERVERS"] = settings.bootstrap_servers
    return env


def _overrides(env: dict[str, str]) -> dict:
    """The settings the child will read from `env` that decide its Kafka credentials."""
    out = {}
    for name in ("kafka_security_protocol", "kafka_sasl_mechanism", "kafka_username",
                 "kafka_password", "kafka_ssl_cafile", "kafka_local_secret", "cache_dir"):
        key = f"CROUPIER_{name.upper()}"
        if key in env:
            out[name] = env[key]
    return out


def terminate(proc: subprocess.Popen | None, timeout_s: float) -> None:
    """SIGTERM to the process's group, SIGKILL if it is still there after `timeout_s`."""
    terminate_all([proc], timeout_s)


def terminate_all(procs: Iterable[subprocess.Popen | None], timeout_s: float) -> None:
    """`terminate` for several processes at once: SIGTERM to every group first, then each
    awaited within one shared `timeout_s` (their clean shutdowns overlap, instead of one
    after another), SIGKILL to any group still there."""
    running = [p for p in procs if p is not None and p.poll() is None]
    for proc in running:
        os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    for proc in running:
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def worker_name(service: str, worker: int) -> str:
    """`wallet` for a service's first worker, `wallet/1`, `wallet/2`, ... for the others."""
    return service if worker == 0 else f"{service}/{worker}"


@dataclass
class ServiceProcess:
    """One worker of a service; several workers of one service share its consumer group
    and split the partitions between them."""

    name: str
    port: int
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    worker: int = 0
    proc: subprocess.Popen | None = None
    # another command than the service's own (`croupier operator-api`): it then runs with
    # the launcher's Kafka credentials, as the CLI would
    command: tuple[str, ...] | None = None

    @property
    def label(self) -> str:
        return worker_name(self.name, self.worker)

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise RuntimeError(f"{self.name} is not started")
        return self.proc.pid

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServiceProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child owns it
        self.proc = subprocess.Popen(
            [sys.executable, *(self.command or service_table.service(self.name).command)],
            # the service's own Kafka principal (never the launcher's: a test or the demo
            # driver may act as admin or operator, a service only as itself)
            env={**os.environ, **self.env, **self._principal_env(),
                 "CROUPIER_WORKER_ID": str(self.worker), "CROUPIER_WEB_PORT": str(self.port)},
            stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
            cwd=Path(__file__).resolve().parents[2],
        )
        log.close()
        return self

    def _principal_env(self) -> dict[str, str]:
        if self.command is not None:
            return {}
        settings = Settings(**_overrides(self.env))
        return principal_env(self.name, settings)

    def wait_ready(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}; "
                                   f"log tail:\n{self.log_tail()}")
            try:
                if httpx.get(f"{self.base_url}/health", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise TimeoutError(f"{self.name} not ready after {timeout_s}s; log tail:\n{self.log_tail()}")

    def stop(self, timeout_s: float = 20.0) -> None:
        """SIGTERM (Faust shuts down cleanly and commits), SIGKILL if it hangs."""
        terminate(self.proc, timeout_s)

    def kill(self) -> None:
        """SIGKILL: a crash, for restart tests."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def operator_api_process(settings: Settings, log_path: Path, env: dict[str, str]
                         ) -> ServiceProcess:
    """`croupier operator-api` on the settings' port: the replay reports and the console."""
    port = settings.operator_api_port
    return ServiceProcess("operator-api", port, log_path, env, command=(
        "-m", "services.cli", "operator-api", "--port", str(port)))


def operator_wallet_process(port: int, db: Path, log_path: Path, *,
                            keys: dict[str, str] | None = None,
                            rollback_unknown: str = "not_found", faults: JsonModel | None = None,
                            env: dict[str, str] | None = None) -> ServiceProcess:
    """The reference operator wallet (`croupier operator-wallet serve`) on `port` over the
    SQLite database `db`; `keys` by key id (default croupier's development key k1). Its
    keys and faults go through its environment, off the command line. Ready when GET
    /health answers; `kill()` then `start().wait_ready()` on the same `db` is a restart
    after a crash (every balance, transaction and stored answer is in the database)."""
    wallet_env = dict(env or {})
    if keys:
        wallet_env["OPERATOR_WALLET_KEYS"] = ",".join(f"{k}={v}" for k, v in keys.items())
    if faults is not None:
        wallet_env["OPERATOR_WALLET_FAULTS"] = faults.model_dump_json()
    return ServiceProcess("operator-wallet", port, log_path, wallet_env, command=(
        "-m", "services.cli", "operator-wallet", "serve", "--port", str(port),
        "--db", str(db.resolve()), "--rollback-unknown", rollback_unknown))


@dataclass
class ArchiverProcess:
    """`croupier archive run`, as the operator principal (it reads every topic, writes none);
    ready once its heartbeat file is touched. SIGTERM closes its open segments."""

    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen | None = None

    def start(self) -> ArchiverProcess:
        from services.infra.kafka_security import OPERATOR

        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child owns it
        settings = Settings(**_overrides(self.env))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "services.cli", "archive", "run"],
            env={**os.environ, **self.env, **principal_env(OPERATOR, settings)},
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, cwd=Path(__file__).resolve().parents[2])
        log.close()
        return self

    def stop(self, timeout_s: float = 60.0) -> None:
        terminate(self.proc, timeout_s)
