"""End to end over the real broker: all four services as processes, every shipped profile,
100+ rounds and 5,000+ bets; then every settlement against the rule engine, every money
invariant, a replay of a real round in all three formats, and a rebuild against the wallet."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from services.demo.session import DemoConfig, play
from services.demo.stack import Stack, ensure_kafka
from services.demo.summary import summarise, wait_until_settled
from services.infra.processes import service_env
from services.infra.settings import Settings
from services.operator.rebuild import rebuild
from services.operator.wallet_client import live_balances
from shared.profile import list_profiles
from tests.conftest import free_port, instance_for

pytestmark = pytest.mark.kafka
ROOT = Path(__file__).resolve().parents[2]


def _settings(platform_kafka: str, home: Path) -> Settings:
    return Settings(kafka_bootstrap_servers=platform_kafka, home=home,
                    instance=instance_for(home),
                    dealer_event_port=free_port(), game_evaluation_port=free_port(),
                    bet_settlement_port=free_port(), wallet_port=free_port(),
                    betting_window_seconds=60)


def croupier(settings: Settings, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **service_env(settings), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "services.cli", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=600)


@pytest.fixture(scope="module")
def platform(platform_kafka, tmp_path_factory):
    settings = _settings(platform_kafka, tmp_path_factory.mktemp("e2e-home"))
    ensure_kafka(settings)
    stack = Stack(settings).start()
    try:
        config = DemoConfig(rounds=17, players=50, profiles=tuple(list_profiles()),
                            betting_pause=3.0, bets_per_player=2, seed=11)
        run = asyncio.run(play(settings, config, stack.url("dealer-event"), stack.url("wallet")))
        books, mine = wait_until_settled(platform_kafka, run, timeout_s=180)
        wallet = stack.url("wallet")
        rebuilt = rebuild(platform_kafka,
                          lambda ps: live_balances(wallet, settings.operator_token, ps))
        summary = summarise(run, books, mine, {}, rebuild_differences=len(rebuilt.differences))
        yield settings, run, summary, rebuilt
    finally:
        stack.stop()


def test_volume_covers_every_profile(platform):
    _, run, summary, _ = platform
    assert summary.rounds >= 100, summary.rounds
    assert summary.bets >= 5_000, summary.bets
    assert set(summary.tables.values()) == set(list_profiles())
    assert {r.profile for r in summary.returns} == set(list_profiles())
    assert all(not t.unexpected for t in run.tables.values()), \
        {t: s.unexpected[:3] for t, s in run.tables.items() if s.unexpected}


def test_every_settlement_and_invariant_holds(platform):
    _, _, summary, _ = platform
    failed = [(c.name, c.problems[:5]) for c in summary.invariants if not c.ok]
    assert summary.invariants_ok, failed
    assert summary.bets == summary.bets_settled + summary.bets_voided + summary.bets_rejected
    assert summary.house_result == summary.stake - summary.payout - summary.refunds
    names = {c.name for c in summary.invariants}
    assert "this session: every settlement equals the rule engine's" in names


def test_players_were_refused_for_the_right_reasons(platform):
    _, run, _, _ = platform
    codes = {code.split(" ", 1)[1] for code in run.answers if " " in code}
    assert {"below_minimum", "bet_not_offered", "bad_position", "insufficient_funds"} <= codes


def test_rebuild_from_the_log_equals_the_live_wallet(platform):
    _, _, _, rebuilt = platform
    assert rebuilt.clean, rebuilt.differences[:10]
    assert rebuilt.rounds_recomputed >= 100


@pytest.mark.parametrize("fmt", ["text", "json", "html"])
def test_the_sample_round_replays_to_match(platform, fmt, tmp_path):
    settings, _, summary, _ = platform
    sample = summary.sample_round
    out = tmp_path / f"report.{fmt}"
    done = croupier(settings, "replay", "--table", sample.table_id, "--round", sample.round_id,
                    "--at", sample.at, "--format", fmt, "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("MATCH")
    text = out.read_text()
    if fmt == "json":
        assert json.loads(text)["verdict"] == "MATCH"
    else:
        assert "MATCH" in text and sample.round_id in text
