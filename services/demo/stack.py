"""The running platform for the demo and the end-to-end test: Kafka (local or external),
the topic catalogue, and the four services as separate OS processes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from services.infra import topic_admin
from services.infra.faust_app import port_of_worker, service_port
from services.infra.local_broker import BrokerError, admin_ready, cluster_from_settings
from services.infra.processes import (
    ArchiverProcess,
    ServiceProcess,
    operator_api_process,
    operator_wallet_process,
    service_env,
    terminate_all,
    worker_name,
)
from services.infra.service_table import SERVICE_NAMES
from services.infra.settings import Settings

REFERENCE_WALLET_PORT = 8110


def seamless_settings(settings: Settings) -> Settings:
    """`settings` in seamless mode against the reference operator wallet (its URL on this
    machine unless one is set)."""
    url = settings.operator_wallet_url or f"http://127.0.0.1:{REFERENCE_WALLET_PORT}"
    return settings.model_copy(update={"wallet_mode": "seamless", "operator_wallet_url": url})


def reference_operator_wallet(settings: Settings, logs: Path) -> ServiceProcess:
    """The reference operator wallet on the port of the settings' `operator_wallet_url`,
    holding the wallet's signing key, over `<home>/operator-wallet.sqlite`."""
    url = settings.operator_wallet_url or f"http://127.0.0.1:{REFERENCE_WALLET_PORT}"
    port = urlsplit(url).port or REFERENCE_WALLET_PORT
    return operator_wallet_process(
        port, settings.home / "operator-wallet.sqlite", logs / "operator-wallet.log",
        keys={settings.operator_wallet_key_id: settings.operator_wallet_secret},
        rollback_unknown=settings.operator_wallet_rollback_unknown)


def ensure_kafka(settings: Settings) -> str:
    """The cluster to use: the external one, or the local broker (started if it is down)."""
    if settings.uses_external_kafka:
        if admin_ready(settings.bootstrap_servers) is None:
            raise BrokerError(f"external Kafka at {settings.bootstrap_servers} is not reachable")
    else:
        cluster_from_settings(settings).up()
    admin = topic_admin.admin_client(settings.bootstrap_servers)
    try:
        topic_admin.apply(admin, topic_admin.catalogue_of(settings), acls_for=settings.instance)
    finally:
        admin.close()
    return settings.bootstrap_servers


@dataclass
class Stack:
    """The four services, `workers` processes each (named `wallet`, `wallet/1`, ...);
    `start()` waits until every one answers /health. With `archive`, the archiver too
    (stopped last, so that it closes its segments on what the services wrote); with
    `console`, the operator API (its console at /console/), started once the wallet is up."""

    settings: Settings
    workers: int = 1
    port_of: Callable[[Settings, str, int], int] = port_of_worker
    processes: dict[str, ServiceProcess] = field(default_factory=dict)
    archive: bool = False
    archiver: ArchiverProcess | None = None
    console: bool = False
    operator_api: ServiceProcess | None = None
    # seamless mode: the reference operator wallet the wallet settles against (started
    # first, on the port of `operator_wallet_url`, over a database in the home)
    operator_wallet: ServiceProcess | None = None

    def start(self, timeout_s: float = 120.0) -> Stack:
        env = service_env(self.settings)
        logs = (self.settings.home / "logs").resolve()
        if self.settings.wallet_mode == "seamless":
            self.operator_wallet = reference_operator_wallet(self.settings, logs).start()
            self.operator_wallet.wait_ready(timeout_s)
        for name in SERVICE_NAMES:
            for worker in range(self.workers):
                label = worker_name(name, worker)
                self.processes[label] = ServiceProcess(
                    name, self.port_of(self.settings, name, worker),
                    logs / f"{label.replace('/', '-')}.log", env, worker=worker).start()
        if self.archive:
            self.archiver = ArchiverProcess(logs / "archiver.log", env).start()
        try:
            for proc in self.processes.values():
                proc.wait_ready(timeout_s)
            if self.console:
                self.operator_api = operator_api_process(
                    self.settings, logs / "operator-api.log", env).start()
                self.operator_api.wait_ready(timeout_s)
        except Exception:
            self.stop()
            raise
        return self

    def url(self, name: str) -> str:
        """The base URL of a service's first worker (any worker answers for any key)."""
        return self.processes[name].base_url if name in self.processes else \
            f"http://127.0.0.1:{service_port(self.settings, name)}"

    @property
    def console_url(self) -> str | None:
        return None if self.operator_api is None else f"{self.operator_api.base_url}/console/"

    def stop(self, timeout_s: float = 20.0) -> None:
        """The operator API and every worker at once (each shuts down on its own log: no
        order among them), then the archiver, then the reference operator wallet."""
        terminate_all([p.proc for p in (self.operator_api, *self.processes.values())
                       if p is not None], timeout_s)
        if self.archiver is not None:
            self.archiver.stop()
        if self.operator_wallet is not None:
            self.operator_wallet.stop()

    def __enter__(self) -> Stack:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
