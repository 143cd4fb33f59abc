"""Support for the end-to-end tests that run the whole platform as processes (the platform
run, the kill loop, the demo command and the Prometheus check): their settings, the ports of
a service's extra workers, the `croupier` command line, and the books and the rebuild read
back after a session (one definition, imported by all of them instead of from one another's
test modules)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from services.demo.session import DemoRun
from services.demo.stack import Stack
from services.demo.summary import DemoSummary, summarise, wait_until_settled
from services.infra.faust_app import service_port
from services.infra.processes import service_env
from services.infra.settings import Settings
from services.operator.rebuild import RebuildReport, rebuild
from services.operator.wallet_client import live_balances
from tests.conftest import free_port, instance_for

ROOT = Path(__file__).resolve().parents[2]


def platform_settings(bootstrap: str, home: Path, betting_window_s: int = 6) -> Settings:
    """A platform of its own (instance, home, free ports) on `bootstrap`, with the development
    secrets and a betting timer of `betting_window_s` (6 s: six tables' 600 bets a round are
    answered in about 2 s; a round lasts about that long plus its deal, so the timer sets a
    session's length)."""
    return Settings(kafka_bootstrap_servers=bootstrap, home=home, instance=instance_for(home),
                    env="development", dealer_event_port=free_port(),
                    game_evaluation_port=free_port(), bet_settlement_port=free_port(),
                    wallet_port=free_port(), operator_api_port=free_port(),
                    betting_window_seconds=betting_window_s)


def worker_port(settings: Settings, service: str, worker: int) -> int:
    """A `Stack`'s `port_of`: the first worker on the service's port, the others on free ones."""
    return service_port(settings, service) if worker == 0 else free_port()


def croupier(settings: Settings, *args: str, columns: int = 200) -> subprocess.CompletedProcess:
    env = {**os.environ, **service_env(settings), "COLUMNS": str(columns)}
    return subprocess.run([sys.executable, "-m", "services.cli", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=600)


def settle_and_rebuild(bootstrap: str, settings: Settings, stack: Stack, run: DemoRun,
                       timeout_s: float) -> tuple[DemoSummary, RebuildReport]:
    """Once every bet of the session has its end (or `timeout_s` is up): the session's summary
    (every invariant, the rebuild's differences counted) and the rebuild from the log compared
    with the live wallet."""
    books, mine = wait_until_settled(bootstrap, run, timeout_s=timeout_s)
    wallet = stack.url("wallet")
    rebuilt = rebuild(bootstrap, lambda ps: live_balances(wallet, settings.operator_token, ps))
    summary = summarise(run, books, mine, {}, rebuild_differences=len(rebuilt.differences))
    return summary, rebuilt
