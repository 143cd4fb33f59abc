"""A platform of the benchmark's own: a private broker on free ports, its own
CROUPIER_HOME in a temp dir, the topic catalogue, and the four services as processes.
With `wallet_mode="seamless"`, the wallet settles against the reference operator wallet
(its own process on a free port, started by the Stack), answering every call after
`operator_latency_ms` (its `latency_ms` fault).

Nothing is shared with a broker or services an engineer may be running, and `close()`
stops everything it started, whatever state the run ended in.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from services.demo.stack import Stack, ensure_kafka
from services.infra.faust_app import service_port
from services.infra.local_broker import LocalBroker, LocalCluster, cluster_nodes
from services.infra.settings import NODE_PORT_STEP, Settings
from services.simulators.operator_wallet.client import OperatorWalletClient
from tests.conftest import free_port
from tests.ports import free_stepped_ports


def _port(settings: Settings, service: str, worker: int) -> int:
    """Worker 0 on the service's (free) port, every other worker on a free port of its own."""
    return service_port(settings, service) if worker == 0 else free_port()


@dataclass
class Platform:
    workers: int = 1
    brokers: int = 1  # nodes of the run's own cluster (3: replication 3, min.insync 2)
    betting_window_s: int = 1800
    wallet_mode: str = "transfer"  # or "seamless"
    operator_latency_ms: int = 0  # seamless: the reference wallet's delay before each answer
    home: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="croupier-e2e-")))
    broker: LocalBroker | None = None  # the cluster's first node
    cluster: LocalCluster | None = None
    stack: Stack | None = None
    settings: Settings | None = None

    def start_broker(self) -> str:
        """The run's own broker, unless KAFKA_BOOTSTRAP_SERVERS names a (fresh) cluster."""
        external = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
        if not external:
            step = NODE_PORT_STEP
            self.cluster = cluster_nodes(
                self.home / "kafka", Settings().cache_dir, self.brokers,
                port=free_stepped_ports(self.brokers, step),
                controller_port=free_stepped_ports(self.brokers, step),
                heap="1g" if self.brokers == 1 else "512m",
                replication=Settings(kafka_brokers=self.brokers).replication_factor)
            self.cluster.up()
            self.broker = self.cluster.nodes[0]
        self.settings = Settings(
            env="development",  # a benchmark platform runs on the development secrets
            kafka_bootstrap_servers=external or self.cluster.bootstrap, home=self.home / "home",
            kafka_brokers=self.brokers,
            instance=f"bench-{uuid.uuid4().hex[:8]}", betting_window_seconds=self.betting_window_s,
            dealer_event_port=free_port(), game_evaluation_port=free_port(),
            bet_settlement_port=free_port(), wallet_port=free_port(),
            wallet_mode=self.wallet_mode, operator_wallet_url=(
                f"http://127.0.0.1:{free_port()}" if self.wallet_mode == "seamless" else None))
        ensure_kafka(self.settings)
        return self.settings.bootstrap_servers

    def start_services(self, timeout_s: float = 180.0) -> Stack:
        self.stack = Stack(self.settings, workers=self.workers, port_of=_port).start(timeout_s)
        if self.operator_latency_ms:
            with OperatorWalletClient(self.operator_wallet_url) as admin:
                admin.set_faults(latency_ms=self.operator_latency_ms)
        return self.stack

    @property
    def operator_wallet_url(self) -> str | None:
        """The reference operator wallet's URL in seamless mode, else None."""
        return self.settings.operator_wallet_url if self.wallet_mode == "seamless" else None

    def pids(self) -> dict[str, int]:
        """The service workers' pids, and the reference operator wallet's (seamless)."""
        procs = dict(self.stack.processes)
        if self.stack.operator_wallet is not None:
            procs["operator-wallet"] = self.stack.operator_wallet
        return {label: p.proc.pid for label, p in procs.items() if p.proc}

    def dead(self) -> list[str]:
        """Service workers that have exited (a crash under load is a result, not a hang)."""
        return [label for label, p in self.stack.processes.items()
                if p.proc is not None and p.proc.poll() is not None]

    def log_tail(self, label: str, lines: int = 15) -> str:
        return self.stack.processes[label].log_tail(lines)

    def stop_services(self) -> None:
        if self.stack is not None:
            self.stack.stop()

    def close(self, keep_home: bool = False) -> None:
        try:
            self.stop_services()
        finally:
            if self.cluster is not None:
                self.cluster.down()
            if not keep_home:
                shutil.rmtree(self.home, ignore_errors=True)
