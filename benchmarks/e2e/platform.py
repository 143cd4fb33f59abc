"""A platform of the benchmark's own: a private broker on free ports, its own
CROUPIER_HOME in a temp dir, the topic catalogue, and the four services as processes.

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

from croupier.services.demo.stack import Stack, ensure_kafka
from croupier.services.infra.faust_app import service_port
from croupier.services.infra.local_broker import LocalBroker
from croupier.services.infra.settings import Settings
from tests.conftest import free_port


def _port(settings: Settings, service: str, worker: int) -> int:
    """Worker 0 on the service's (free) port, every other worker on a free port of its own."""
    return service_port(settings, service) if worker == 0 else free_port()


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
        self.settings = Settings(
            env="development",  # a benchmark platform runs on the development secrets
            kafka_bootstrap_servers=external or self.broker.bootstrap, home=self.home / "home",
            instance=f"bench-{uuid.uuid4().hex[:8]}", betting_window_seconds=self.betting_window_s,
            dealer_event_port=free_port(), game_evaluation_port=free_port(),
            bet_settlement_port=free_port(), wallet_port=free_port())
        ensure_kafka(self.settings)
        return self.settings.bootstrap_servers

    def start_services(self, timeout_s: float = 180.0) -> Stack:
        self.stack = Stack(self.settings, workers=self.workers, port_of=_port).start(timeout_s)
        return self.stack

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
