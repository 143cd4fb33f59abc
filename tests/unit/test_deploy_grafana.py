"""deploy/grafana: provisioning and the dashboards' JSON. Every panel has a query,
every query parses (promtool), and every metric a query reads exists: defined in
services/infra/metrics.py, recorded by deploy/prometheus/rules/recording.yml, or
exported by the broker's JMX exporter rules. The live twin of this check scrapes the
running services (metric_names_in_dashboards() is shared)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from importlib.metadata import version
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml", reason="pyyaml is needed to read the deploy files")

from services.devtools.grafana_dashboards import (  # noqa: E402
    DASHBOARDS,
    DASHBOARDS_DIR,
    DATASOURCE,
    dashboard_files,
    exported_metric_names,
    iter_panels,
    jmx_exporter_metric_names,
    metric_names_in_dashboards,
    panel_queries,
    promql_metric_names,
    recorded_metric_names,
    render,
    tables_dashboard,
)

ROOT = Path(__file__).resolve().parents[2]
GRAFANA = ROOT / "deploy" / "grafana"


def dashboards() -> dict[str, dict]:
    return {path.name: json.loads(path.read_text()) for path in dashboard_files()}


def test_the_three_dashboards_exist_and_are_generated_from_code() -> None:
    assert sorted(p.name for p in dashboard_files()) == sorted(DASHBOARDS)
    for name, builder in DASHBOARDS.items():
        assert (DASHBOARDS_DIR / name).read_text() == render(builder), (
            f"{name} is stale: run `python -m services.devtools.grafana_dashboards`")


def test_the_sdk_is_the_build_for_the_grafana_compose_runs() -> None:
    """grafana-foundation-sdk publishes one build per Grafana version (`EPOCH!11.4.0`):
    the one that writes the dashboards must match the image that loads them."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    image = compose["services"]["grafana"]["image"]
    grafana = re.fullmatch(r"grafana/grafana:(\d+\.\d+)\.\d+", image)
    sdk = re.fullmatch(r"(?:\d+!)?(\d+\.\d+)\.\d+", version("grafana-foundation-sdk"))
    assert grafana and sdk, (image, version("grafana-foundation-sdk"))
    assert sdk.group(1) == grafana.group(1), f"SDK for Grafana {sdk.group(1)}, compose runs {image}"


def test_uids_and_panel_ids_are_unique() -> None:
    boards = dashboards().values()
    assert len({b["uid"] for b in boards}) == len(boards)
    # links, bookmarks and provisioning key on these: the generator must not change them
    assert {name: b["uid"] for name, b in dashboards().items()} == {
        "platform.json": "croupier-platform", "money.json": "croupier-money",
        "tables.json": "croupier-tables"}
    for board in boards:
        ids = [p["id"] for p in iter_panels(board)]
        assert len(ids) == len(set(ids)), board["uid"]


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_every_panel_queries_the_provisioned_prometheus(name: str) -> None:
    board = dashboards()[name]
    panels = list(iter_panels(board))
    assert panels
    for panel in panels:
        assert panel["datasource"] == DATASOURCE, panel["title"]
        exprs = [t.get("expr", "").strip() for t in panel.get("targets", [])]
        assert exprs and all(exprs), f"{name}: panel {panel['title']!r} has no query"
        grid = panel["gridPos"]
        assert 0 <= grid["x"] and grid["x"] + grid["w"] <= 24, panel["title"]


def unknown_metrics(directory: Path = DASHBOARDS_DIR) -> dict[str, list[str]]:
    known = (exported_metric_names() | recorded_metric_names() | jmx_exporter_metric_names()
             | {"up"})
    used = metric_names_in_dashboards(directory)
    return {name: sorted(where) for name, where in used.items() if name not in known}


def test_every_metric_a_panel_reads_exists() -> None:
    unknown = unknown_metrics()
    assert not unknown, f"dashboard queries read metrics nobody exports: {unknown}"


def test_the_metric_check_catches_a_metric_nobody_exports(tmp_path: Path) -> None:
    """The check reads the SDK's JSON: a panel or variable query naming a metric no
    service, rule or JMX exporter rule produces is reported, with where it is."""
    board = json.loads(render(tables_dashboard))
    board["panels"][0]["targets"][0]["expr"] = "sum(rate(croupier_no_such_total[5m]))"
    board["templating"]["list"][0]["query"]["query"] = "label_values(croupier_nor_this, table)"
    (tmp_path / "tables.json").write_text(json.dumps(board))
    assert unknown_metrics(tmp_path) == {
        "croupier_no_such_total": [f"tables.json: panel {board['panels'][0]['title']!r}"],
        "croupier_nor_this": ["tables.json: variable 'table'"]}


def test_dashboards_cover_what_operators_watch() -> None:
    used = {path: set() for path in DASHBOARDS}
    for name, where in metric_names_in_dashboards().items():
        for place in where:
            used[place.split(":")[0]].add(name)
    platform, money, tables = used["platform.json"], used["money.json"], used["tables.json"]
    assert {"all:croupier_settlement_latency_seconds:p99_5m",
            "all:croupier_end_to_end_latency_seconds:p99_5m",
            "service_topic:croupier_consumer_lag_records:sum",
            "service_route_status:croupier_http_requests:rate5m", "up"} <= platform
    assert {"profile_bet:croupier_rtp_realised:ratio_6h", "profile_bet:croupier_rtp_exact:ratio",
            "kind_currency:croupier_money_minor_units:rate5m",
            "croupier_house_result_minor_units"} <= money
    assert {"table_game_outcome:croupier_rounds:rate5m", "reason:croupier_round_voids:rate5m",
            "croupier_dealer_inputs_total"} <= tables


@pytest.mark.skipif(shutil.which("promtool") is None,
                    reason="promtool not installed: run deploy/prometheus/install-tools.sh")
def test_every_panel_query_is_valid_promql(tmp_path: Path) -> None:
    """promtool parses each panel query (Grafana variables replaced by a value)."""
    rules = []
    for name, board in dashboards().items():
        for i, (where, expr) in enumerate(panel_queries(board)):
            if where.startswith("variable"):
                continue
            concrete = re.sub(r"\$(?:\{[^}]*\}|\w+)", ".*", expr)
            rules.append({"record": f"check:{name.removesuffix('.json')}_{i}:query", "expr": concrete})
    rule_file = tmp_path / "panels.yml"
    rule_file.write_text(yaml.safe_dump({"groups": [{"name": "panels", "rules": rules}]}))
    done = subprocess.run(["promtool", "check", "rules", str(rule_file)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_datasource_provisioning_matches_the_dashboards() -> None:
    sources = yaml.safe_load((GRAFANA / "provisioning" / "datasources" / "prometheus.yml").read_text())
    (source,) = sources["datasources"]
    assert source["uid"] == DATASOURCE["uid"] and source["type"] == DATASOURCE["type"]
    assert source["url"] == "http://prometheus:9090"


def test_dashboard_provider_reads_the_mounted_dashboards() -> None:
    providers = yaml.safe_load((GRAFANA / "provisioning" / "dashboards" / "croupier.yml").read_text())
    (provider,) = providers["providers"]
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    mounts = dict(v.rsplit(":", 1)[0].split(":", 1) for v in compose["services"]["grafana"]["volumes"]
                  if v.startswith("./"))
    assert mounts["./deploy/grafana/dashboards"] == provider["options"]["path"]


@pytest.mark.parametrize("expr, names", [
    ('sum by (table, outcome) (rate(croupier_rounds_total{table=~"$table"}[5m])) * 60',
     {"croupier_rounds_total"}),
    ("histogram_quantile(0.99, sum by (le) (rate(a_bucket[$__rate_interval])))", {"a_bucket"}),
    ('x / on (profile, bet) group_left(game) y offset 5m and bool z', {"x", "y", "z"}),
    ("sum(rate(a_total[5m])) by (le) > 3 unless b", {"a_total", "b"}),
    ('label_values(croupier_rtp_exact_ratio{profile=~"$profile"}, bet)', {"croupier_rtp_exact_ratio"}),
    ("label_values(bet)", set()),
    ('up{job=~"croupier-.+|kafka"} == 0', {"up"}),
    ("profile_bet:croupier_rtp_exact:ratio - 4 * profile_bet:x:y", {
        "profile_bet:croupier_rtp_exact:ratio", "profile_bet:x:y"}),
])
def test_promql_metric_names(expr: str, names: set[str]) -> None:
    assert promql_metric_names(expr) == names
