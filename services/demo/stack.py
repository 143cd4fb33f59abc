"""The running platform for the demo and the end-to-end test: Kafka (local or external),
the topic catalogue, and the four services as separate OS processes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from services.infra import topic_admin
from services.infra.faust_app import service_port
from services.infra.local_broker import BrokerError, admin_ready, broker_from_settings
from services.infra.processes import SERVICES, ServiceProcess
from services.infra.settings import Settings
from shared.topics import topic_catalogue

# settings every service process must share with the demo driver
SHARED_ENV = ("instance", "home", "kafka_bootstrap_servers", "dealer_event_port", "game_evaluation_port",
              "bet_settlement_port", "wallet_port", "table_signing_secret", "operator_token",
              "player_token_secret", "betting_window_seconds", "topic_partitions", "retention_ms")


def service_env(settings: Settings) -> dict[str, str]:
    env = {}
    for name in SHARED_ENV:
        value = getattr(settings, name)
        if value is None:
            continue
        key = "KAFKA_BOOTSTRAP_SERVERS" if name == "kafka_bootstrap_servers" else \
            f"CROUPIER_{name.upper()}"
        env[key] = str(value.resolve() if isinstance(value, Path) else value)
    env["KAFKA_BOOTSTRAP_SERVERS"] = settings.bootstrap_servers
    return env


def ensure_kafka(settings: Settings) -> str:
    """The cluster to use: the external one, or the local broker (started if it is down)."""
    if settings.uses_external_kafka:
        if admin_ready(settings.bootstrap_servers) is None:
            raise BrokerError(f"external Kafka at {settings.bootstrap_servers} is not reachable")
    else:
        broker_from_settings(settings).start()
    admin = topic_admin.admin_client(settings.bootstrap_servers)
    try:
        topic_admin.apply(admin, topic_catalogue(settings.retention_ms, settings.topic_partitions))
    finally:
        admin.close()
    return settings.bootstrap_servers


@dataclass
class Stack:
    """The four services; `start()` waits until every one answers /health."""

    settings: Settings
    processes: dict[str, ServiceProcess] = field(default_factory=dict)

    def start(self, timeout_s: float = 120.0) -> Stack:
        env = service_env(self.settings)
        logs = (self.settings.home / "logs").resolve()
        for name in SERVICES:
            self.processes[name] = ServiceProcess(name, service_port(self.settings, name),
                                                  logs / f"{name}.log", env).start()
        try:
            for proc in self.processes.values():
                proc.wait_ready(timeout_s)
        except Exception:
            self.stop()
            raise
        return self

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{service_port(self.settings, name)}"

    def stop(self) -> None:
        for proc in reversed(list(self.processes.values())):
            proc.stop()

    def __enter__(self) -> Stack:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
