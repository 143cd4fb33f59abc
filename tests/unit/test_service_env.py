"""A stack started from settings gives its service processes those settings: the
snapshot cadence and the wallet's state window included (the kill loop's wallets never
snapshotted because these two did not reach them)."""

from __future__ import annotations

from croupier.services.infra.processes import service_env
from croupier.services.infra.settings import Settings


def test_snapshot_and_window_settings_reach_the_service_processes(monkeypatch):
    given = Settings(env="development", snapshot_every_entries=40, snapshot_every_seconds=7.5,
                     wallet_state_window_hours=48)
    env = service_env(given)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    child = Settings()
    assert (child.snapshot_every_entries, child.snapshot_every_seconds,
            child.wallet_state_window_hours) == (40, 7.5, 48)
