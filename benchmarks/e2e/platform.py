"""A platform of the benchmark's own: a private broker on free ports, its own
CROUPIER_HOME in a temp dir, the topic catalogue, and the four services as processes.

Nothing is shared with a broker or services an engineer may be running, and `close()`
stops everything it started, whatever state the run ended in.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from services.demo.stack import Stack, ensure_kafka
from services.infra.local_broker import LocalBroker
from services.infra.processes import SERVICES
from services.infra.settings import Settings

SERVICE_PORTS = ("dealer_event_port", "game_evaluation_port", "bet_settlement_port",
                 "wallet_port")


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stack_ports(settings: Settings, workers: int) -> list[int]:
    """Every port the stack will listen on, by the stack's own rule for worker i."""
    port_of = Stack.__dataclass_fields__["port_of"].default
    return [port_of(settings, name, w) for name in SERVICES for w in range(workers)]


@dataclass
class Platform:
    workers: int = 1
    betting_window_s: int = 1800
    home: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="croupier-e2e-")))
    broker: LocalBroker | None = None
    stack: Stack | None = None
    settings: Settings | None = None

    def start_broker(self) -> str:
        """The run's own broker, unless KAFKA_BOOTSTRAP_SERVERS names a (fresh) cluster."""
        external = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
        if not external:
            self.broker = LocalBroker(data_dir=self.home / "kafka", cache_dir=Settings().cache_dir,
                                      port=free_port(), controller_port=free_port())
            self.broker.start()
        instance = f"bench-{uuid.uuid4().hex[:8]}"
        for _ in range(100):  # service ports whose every worker's port is free too
            self.settings = Settings(
                kafka_bootstrap_servers=external or self.broker.bootstrap,
                home=self.home / "home", instance=instance,
                betting_window_seconds=self.betting_window_s,
                **{name: free_port() for name in SERVICE_PORTS})
            ports = stack_ports(self.settings, self.workers)
            if len(set(ports)) == len(ports) and all(p < 65536 and _free(p) for p in ports):
                break
        else:
            raise RuntimeError("no free ports for every service worker")
        ensure_kafka(self.settings)
        return self.settings.bootstrap_servers

    def start_services(self, timeout_s: float = 180.0) -> Stack:
        self.stack = Stack(self.settings, workers=self.workers).start(timeout_s)
        return self.stack

    @property
    def bootstrap(self) -> str:
        return self.settings.bootstrap_servers

    def pids(self) -> dict[str, int]:
        return {label: p.proc.pid for label, p in self.stack.processes.items() if p.proc}

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
            if self.broker is not None:
                self.broker.stop()
            if not keep_home:
                shutil.rmtree(self.home, ignore_errors=True)
