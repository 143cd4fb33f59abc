"""`croupier demo --summary-json` as an operator runs it: a process that starts its own
services, plays, prints the summary, writes the JSON and stops what it started."""

from __future__ import annotations

import json

import pytest

from tests.conftest import free_port
from tests.e2e.platform_support import croupier, platform_settings

pytestmark = pytest.mark.kafka


def test_croupier_demo_runs_to_its_summary(platform_kafka, tmp_path):
    settings = platform_settings(platform_kafka, tmp_path / "home", betting_window_s=3)
    out = tmp_path / "summary.json"
    done = croupier(settings, "demo", "--rounds", "2", "--players", "10", "--betting-pause",
                    "1.5", "--summary-json", str(out), columns=80)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads(out.read_text())
    assert summary["invariants_ok"] is True and summary["rounds"] >= 6
    for key in ("rounds", "bets", "stake", "payout", "house_result"):
        assert isinstance(summary[key], int)
    assert summary["sample_round"]["table_id"] and summary["sample_round"]["round_id"]
    assert "ALL INVARIANTS HOLD" in done.stdout and "croupier replay --table" in done.stdout
    assert "services stopped" in done.stdout
    # piped at 80 columns (as `make demo | tee` is): the command is still whole (issue 13)
    command = summary["sample_round"]["replay_command"]
    assert f"  {command}" in done.stdout.splitlines(), done.stdout[-3000:]


def test_croupier_demo_runs_seamless_against_the_reference_operator_wallet(platform_kafka,
                                                                            tmp_path):
    """Issue 20: `croupier demo --wallet seamless` starts the reference operator wallet,
    funds the players there, and its summary reconciles croupier's calls with it."""
    settings = platform_settings(platform_kafka, tmp_path / "home", betting_window_s=3
                                 ).model_copy(update={
                                     "operator_wallet_url": f"http://127.0.0.1:{free_port()}"})
    out = tmp_path / "summary.json"
    done = croupier(settings, "demo", "--wallet", "seamless", "--rounds", "2", "--players", "8",
                    "--betting-pause", "1.5", "--profiles", "sbo-baccarat,triple-face-id",
                    "--summary-json", str(out), columns=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads(out.read_text())
    checks = {c["name"]: c for c in summary["invariants"]}
    reconciled = checks["reconciliation with the operator's wallet: no difference"]
    assert reconciled["ok"] and reconciled["checked"] > 0, reconciled
    assert summary["invariants_ok"] is True and summary["bets"] > 0
    assert "operator wallet" in done.stdout and "seamless" in done.stdout
    assert (tmp_path / "home" / "operator-wallet.sqlite").exists()
