"""The live-check machinery, proven without the services: a real Prometheus server
(tests/prometheus_server.py) scrapes a tiny HTTP server exporting croupier's
RTP counters, evaluates the repo's recording and alert rules, answers the HTTP API,
and headless Chromium photographs its graph page (tests/browser_screenshot.py).
Prometheus and Chromium are Debian packages that `make test` installs when missing."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from tests.browser_screenshot import PNG_MAGIC, chromium_binary, screenshot
from tests.prometheus_server import (
    PrometheusError,
    PrometheusServer,
    free_port,
    prometheus_binary,
    rtp_graph_expr,
)

pytestmark = pytest.mark.skipif(
    prometheus_binary() is None,
    reason="prometheus not installed: run deploy/prometheus/install-tools.sh (make test does)")

LABELS = {"profile": "sbo-baccarat", "bet": "banker"}


@pytest.fixture
def exporter() -> Iterator[str]:
    """A /metrics endpoint with croupier's RTP series, fed by a thread (1000 a bet)."""
    registry = CollectorRegistry()
    labels = list(LABELS)
    stake = Counter("croupier_settled_stake_minor_units_total", "s", labels, registry=registry)
    squared = Counter("croupier_settled_stake_squared_minor_units_total", "s2", labels,
                      registry=registry)
    returned = Counter("croupier_settled_returned_minor_units_total", "r", labels, registry=registry)
    Gauge("croupier_rtp_exact_ratio", "e", labels, registry=registry).labels(**LABELS).set(0.98942)
    Gauge("croupier_rtp_exact_variance_ratio", "v", labels, registry=registry).labels(**LABELS).set(0.87)
    port = free_port()
    server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    stop = threading.Event()

    def feed() -> None:
        pays = (1950, 0, 1000, 0)  # win, lose, push, lose: returned / staked = 0.7375
        i = 0
        while not stop.wait(0.02):
            stake.labels(**LABELS).inc(1000)
            squared.labels(**LABELS).inc(1000 ** 2)
            returned.labels(**LABELS).inc(pays[i % 4])
            i += 1

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        stop.set()
        feeder.join(5)
        server.shutdown()
        thread.join(5)


def test_live_prometheus_scrapes_evaluates_rules_and_answers(exporter: str, tmp_path: Path) -> None:
    with PrometheusServer({"croupier-test": [exporter]}) as prom:
        assert prom.port != 9090 and prom.workdir is not None
        targets = prom.wait_for_targets_up(timeout_s=20)
        assert [t["labels"]["job"] for t in targets] == ["croupier-test"]

        raw = prom.wait_for_series("croupier_settled_stake_minor_units_total", timeout_s=20)
        assert raw[0]["metric"]["profile"] == "sbo-baccarat"
        realised = prom.wait_for_series("profile_bet:croupier_rtp_realised:ratio_6h", timeout_s=30)
        assert realised[0]["metric"] == {"__name__": "profile_bet:croupier_rtp_realised:ratio_6h",
                                         **LABELS}
        assert 0.6 < float(realised[0]["value"][1]) < 0.9  # 0.7375 give or take a bet
        se = prom.wait_for_series("profile_bet:croupier_rtp_standard_error:ratio_6h", timeout_s=10)
        assert float(se[0]["value"][1]) > 0

        rules = prom.api("rules")["groups"]
        alerts = {r["name"] for g in rules for r in g["rules"] if r["type"] == "alerting"}
        assert {"ServiceDown", "RtpDrift", "InvariantBreach"} <= alerts
        # far below exact with only a few hundred bets: not yet enough to alert on
        assert prom.query('ALERTS{alertname="RtpDrift", alertstate="firing"}') == []

        url = prom.graph_url(rtp_graph_expr('{bet="banker"}'), range_input="1m")
        assert url.startswith(prom.url + "/graph?g0.expr=")
        if chromium_binary() is None:
            pytest.skip("chromium not installed: run deploy/prometheus/install-tools.sh chromium")
        png = screenshot(url, tmp_path / "rtp.png")
        data = png.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 20_000
    assert prom.workdir is None and prom.proc is None


def test_prometheus_server_reports_a_bad_start() -> None:
    server = PrometheusServer({"x": ["127.0.0.1:1"]}, scrape_interval="bogus")
    with pytest.raises(PrometheusError, match="exited during start-up"):
        server.start(timeout_s=15)
    assert server.proc is None and server.workdir is None
