"""Every service's GET /metrics, live: the four services as processes on the real broker,
two simulated tables (one with a void) and simulated players betting through the wallet.
The key series have data, and every metric a Grafana dashboard reads is exported."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from services.devtools.grafana_dashboards import (
    RECORDING_RULES,
    metric_names_in_dashboards,
    promql_metric_names,
    recorded_metric_names,
    scraped_metric_names,
)
from services.infra.processes import ServiceProcess
from services.infra.service_table import SERVICE_NAMES
from services.infra.settings import Settings
from services.simulators.players import PlayerSimulator
from services.simulators.tables.driver import BettingWindow, SimConfig
from services.simulators.tables.run import run_tables
from tests.integration.tables_live_support import running_services

pytestmark = pytest.mark.kafka
RUN = uuid.uuid4().hex[:6]
TABLES = {f"MBAC-{RUN}": "sbo-baccarat", f"MTF-{RUN}": "triple-face-id"}
# Not exported by the services: `up` is Prometheus's own, kafka_* the broker's JMX agent
# (the session broker runs without it).
NOT_FROM_SERVICES = ("up",)


@pytest.fixture(scope="module")
def services(platform_kafka, tmp_path_factory):
    home: Path = tmp_path_factory.mktemp("metrics-home")
    with running_services(platform_kafka, home, list(SERVICE_NAMES),
                          CROUPIER_BETTING_WINDOW_SECONDS="3",
                          CROUPIER_LAG_INTERVAL_SECONDS="1") as procs:
        yield procs


async def play(procs: dict[str, ServiceProcess]) -> None:
    players = PlayerSimulator(procs["wallet"].base_url, Settings().operator_token,
                              list(TABLES), players=3, seed=4, run_id=RUN)
    await players.setup()

    async def bet_while_open(info: BettingWindow) -> None:
        deadline = time.monotonic() + info.betting_pause
        while time.monotonic() < deadline:
            body = await players.current_round(info.table_id)
            if body and body["round_id"] == info.round_id and body["status"] == "open":
                await players.bet_on_round(body)
                return
            await asyncio.sleep(0.1)

    configs = [SimConfig(profile="sbo-baccarat", table_id=f"MBAC-{RUN}", rounds=4, seed=3,
                         betting_pause=1.5, faults=frozenset({"void"})),
               SimConfig(profile="triple-face-id", table_id=f"MTF-{RUN}", rounds=3, seed=5,
                         betting_pause=1.5)]
    try:
        summaries = await run_tables(configs, url=procs["dealer-event"].base_url,
                                     on_betting_open=bet_while_open)
    finally:
        await players.close()
    assert all(not s.unexpected for s in summaries), [s.unexpected for s in summaries]
    assert any(answer.startswith("20") for answer in players.answers), players.answers


def scrape(procs: dict[str, ServiceProcess]) -> dict[str, str]:
    return {name: httpx.get(f"{p.base_url}/metrics", timeout=10).text for name, p in procs.items()}


def samples(text: str) -> dict[str, list[tuple[dict, float]]]:
    out: dict[str, list[tuple[dict, float]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def total(series: dict, name: str, **match) -> float:
    return sum(v for labels, v in series.get(name, [])
               if all(labels.get(k) == want for k, want in match.items()))


def wait_settled(procs) -> dict[str, dict]:
    """Scrapes once the last round's settlement reached the wallet and the lag is measured."""
    deadline = time.monotonic() + 45
    while True:
        series = {name: samples(text) for name, text in scrape(procs).items()}
        wallet = series["wallet"]
        done = (total(wallet, "croupier_end_to_end_latency_seconds_count") > 0
                and total(wallet, "croupier_money_minor_units_total", kind="bet_refund") > 0
                and all("croupier_consumer_lag_records" in s for s in series.values()))
        if done or time.monotonic() > deadline:
            return series
        time.sleep(0.5)


def test_every_service_exports_its_key_series_and_everything_the_dashboards_read(services):
    asyncio.run(play(services))
    series = wait_settled(services)
    dealer, evaluation = series["dealer-event"], series["game-evaluation"]
    settlement, wallet = series["bet-settlement"], series["wallet"]
    table = f"MBAC-{RUN}"

    for name, s in series.items():
        assert total(s, "croupier_service_up", service=name) == 1, name
        assert "croupier_consumer_lag_records" in s, name
        assert total(s, "croupier_http_requests_total", service=name, route="/health",
                     status="200") > 0, name
    # dealer-event: inputs, rounds by outcome, voids by reason
    assert total(dealer, "croupier_dealer_inputs_total", table=table, outcome="accepted",
                 reason="none") > 10
    assert total(dealer, "croupier_rounds_total", table=table, game="baccarat",
                 outcome="completed") == 3
    assert total(dealer, "croupier_rounds_total", table=table, outcome="voided") == 1
    assert total(dealer, "croupier_rounds_total", table=f"MTF-{RUN}", game="triple_face",
                 outcome="completed") == 3
    assert total(dealer, "croupier_round_voids_total", reason="card_exposed") >= 1
    assert total(dealer, "croupier_http_requests_total", route="/inputs", method="POST") > 10
    # per dealer and table (`croupier stats` live): every round the simulator's dealer's
    dealers = {labels["dealer"] for labels, _ in dealer["croupier_dealer_activity_total"]
               if labels["table"] == table}
    assert len(dealers) == 1 and dealers != {"none"}, dealers
    assert total(dealer, "croupier_dealer_activity_total", table=table, kind="completed") == 3
    assert total(dealer, "croupier_dealer_activity_total", table=table, kind="voided") == 1
    # game-evaluation: results
    assert total(evaluation, "croupier_round_results_total", table=table, game="baccarat") == 3
    # bet-settlement: bets by state, rejections, realised and exact RTP
    for state in ("accepted", "settled", "voided"):
        assert total(settlement, "croupier_bets_total", state=state) > 0, state
    assert total(settlement, "croupier_settled_stake_minor_units_total") > 0
    assert total(settlement, "croupier_settled_stake_squared_minor_units_total") > 0
    assert "croupier_settled_returned_minor_units_total" in settlement
    assert total(settlement, "croupier_table_settled_stake_minor_units_total", table=table,
                 currency="IDR") > 0
    assert total(settlement, "croupier_table_theoretical_returned_minor_units_total",
                 table=table) > 0
    assert total(settlement, "croupier_table_hold_variance_minor_units_squared_total",
                 table=table) > 0
    assert total(settlement, "croupier_rtp_exact_ratio", profile="sbo-baccarat",
                 bet="banker") == pytest.approx(0.9894, abs=1e-3)
    assert total(settlement, "croupier_rtp_exact_variance_ratio", profile="triple-face-id",
                 bet="win") > 0
    assert total(settlement, "croupier_invariant_breaches_total",
                 invariant="settlement_conflict") == 0
    # wallet: money by kind, house result, latencies, no breach, HTTP by route template
    for kind in ("deposit", "stake_debit", "bet_refund"):
        assert total(wallet, "croupier_money_minor_units_total", kind=kind,
                     currency="IDR") > 0, kind
    assert "croupier_house_result_minor_units" in wallet
    assert total(wallet, "croupier_settlement_latency_seconds_count") > 0
    assert total(wallet, "croupier_end_to_end_latency_seconds_count") > 0
    assert total(wallet, "croupier_invariant_breaches_total") == 0
    routes = {labels["route"] for labels, _ in wallet["croupier_http_requests_total"]}
    assert "/players/{player_id}/bets" in routes and not any(RUN in r for r in routes)

    exported = set().union(*(scraped_metric_names(text) for text in scrape(services).values()))
    wanted = {name for name in metric_names_in_dashboards()
              if not name.startswith("kafka_") and name not in NOT_FROM_SERVICES}
    recorded = recorded_metric_names()
    missing = wanted - exported - recorded
    assert not missing, f"dashboards read metrics no service exports: {sorted(missing)}"
    rules = yaml.safe_load(RECORDING_RULES.read_text())["groups"]
    read_by_rules = set().union(*(promql_metric_names(rule["expr"]) for group in rules
                                  for rule in group["rules"]))
    missing = read_by_rules - exported - recorded
    assert not missing, f"recording rules read metrics no service exports: {sorted(missing)}"
