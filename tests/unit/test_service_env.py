"""A stack started from settings gives its service processes those settings: the
snapshot cadence and the wallet's state window included (the kill loop's wallets never
snapshotted because these two did not reach them)."""

from __future__ import annotations

from services.infra.processes import service_env
from services.infra.settings import Settings


def test_snapshot_and_window_settings_reach_the_service_processes(monkeypatch):
    given = Settings(env="development", snapshot_every_entries=40, snapshot_every_seconds=7.5,
                     wallet_state_window_hours=48)
    env = service_env(given)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    child = Settings()
    assert (child.snapshot_every_entries, child.snapshot_every_seconds,
            child.wallet_state_window_hours) == (40, 7.5, 48)


def test_every_setting_given_reaches_the_service_processes(monkeypatch):
    """A setting added after the shared list (the seamless wallet's) reaches a stack's
    processes without being listed; a process's own worker id and port never do."""
    given = Settings(env="development", wallet_mode="seamless",
                     operator_wallet_url="http://127.0.0.1:8110",
                     operator_wallet_debit_timeout_seconds=1.5,
                     operator_wallet_zero_credits=False, worker_id=3, web_port=9999)
    env = service_env(given)
    assert "CROUPIER_WORKER_ID" not in env and "CROUPIER_WEB_PORT" not in env
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    child = Settings()
    assert (child.wallet_mode, child.operator_wallet_url,
            child.operator_wallet_debit_timeout_seconds, child.operator_wallet_zero_credits) \
        == ("seamless", "http://127.0.0.1:8110", 1.5, False)
