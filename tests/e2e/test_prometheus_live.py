"""The live check: a real Prometheus server scrapes the four services while a short demo
session plays, evaluates the repo's rules, and answers its HTTP API with data for the key
series (rounds, bets, latency, realised and exact RTP); Chromium photographs the RTP graph."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from services.demo.session import DemoConfig, play
from services.demo.stack import Stack, ensure_kafka
from services.demo.summary import wait_until_settled
from tests.browser_screenshot import PNG_MAGIC, chromium_binary, screenshot
from tests.e2e.platform_support import platform_settings
from tests.prometheus_server import PrometheusServer, prometheus_binary, rtp_graph_expr

pytestmark = [pytest.mark.kafka, pytest.mark.skipif(
    prometheus_binary() is None,
    reason="prometheus not installed: run deploy/prometheus/install-tools.sh (make test does)")]

KEY_SERIES = {
    "rounds": "sum(croupier_rounds_total) > 0",
    "bets": 'sum(croupier_bets_total{state="settled"}) > 0',
    "settlement latency": "sum(croupier_settlement_latency_seconds_count) > 0",
    "end-to-end latency": "sum(croupier_end_to_end_latency_seconds_count) > 0",
    "latency p99 rule": "all:croupier_settlement_latency_seconds:p99_5m",
    "exact RTP": 'croupier_rtp_exact_ratio{profile="sbo-baccarat", bet="banker"}',
    "realised RTP rule": 'profile_bet:croupier_rtp_realised:ratio_6h{profile="sbo-baccarat"}',
    "consumer lag": "croupier_consumer_lag_records",
    "http requests": 'sum(croupier_http_requests_total{service="wallet"}) > 0',
}


@pytest.fixture(scope="module")
def observed(platform_kafka, tmp_path_factory):
    settings = platform_settings(platform_kafka, tmp_path_factory.mktemp("prom-home"),
                                 betting_window_s=4)  # 2 tables of 20 players: 40 bets a round
    ensure_kafka(settings)
    with Stack(settings) as stack:
        targets = {f"croupier-{name}": [stack.url(name).removeprefix("http://")]
                   for name in stack.processes}
        with PrometheusServer(targets) as prom:
            prom.wait_for_targets_up(timeout_s=60)
            config = DemoConfig(rounds=5, players=20, profiles=("sbo-baccarat", "triple-face-id"),
                                betting_pause=1.5, seed=3)
            run = asyncio.run(play(settings, config, stack.url("dealer-event"),
                                   stack.url("wallet")))
            wait_until_settled(platform_kafka, run, timeout_s=60)
            yield prom


@pytest.mark.parametrize("name", sorted(KEY_SERIES))
def test_prometheus_answers_the_key_series(observed, name):
    result = observed.wait_for_series(KEY_SERIES[name], timeout_s=45)
    assert result and all(float(r["value"][1]) == float(r["value"][1]) for r in result)


def test_every_service_target_is_up(observed):
    jobs = {t["labels"]["job"]: t["health"] for t in observed.targets()}
    assert jobs == {f"croupier-{n}": "up" for n in
                    ("dealer-event", "game-evaluation", "bet-settlement", "wallet")}


@pytest.mark.skipif(chromium_binary() is None, reason="chromium not installed (make test does)")
def test_rtp_graph_screenshot(observed, tmp_path):
    observed.wait_for_series(KEY_SERIES["realised RTP rule"], timeout_s=45)
    target = Path(os.environ.get("CROUPIER_SCREENSHOT_DIR", tmp_path)) / "prometheus-rtp.png"
    url = observed.graph_url(rtp_graph_expr('{profile="sbo-baccarat", bet="banker"}'),
                             range_input="5m")
    screenshot(url, target)
    assert target.read_bytes()[:8] == PNG_MAGIC and target.stat().st_size > 10_000
