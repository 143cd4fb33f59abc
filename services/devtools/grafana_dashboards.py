"""Grafana dashboards as code, and the metric names their queries use.

`python -m services.devtools.grafana_dashboards` (`make dashboards`) writes
`deploy/grafana/dashboards/*.json` from the definitions below, built with Grafana's
foundation SDK (a dev dependency; the JSON is committed and a test checks it is current).
`metric_names_in_dashboards()` lists every metric a panel query reads, so tests can
check each exists: statically against `services/infra/metrics.py`, the recording
rules and the Kafka JMX exporter config; live against a scrape of the services.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypedDict, TypeVar, Unpack

from grafana_foundation_sdk.builders import bargauge, prometheus, stat, table, timeseries
from grafana_foundation_sdk.builders import common as common_builders
from grafana_foundation_sdk.builders import dashboard as db
from grafana_foundation_sdk.cog.builder import Builder
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as dm

REPO_ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS_DIR = REPO_ROOT / "deploy" / "grafana" / "dashboards"
RECORDING_RULES = REPO_ROOT / "deploy" / "prometheus" / "rules" / "recording.yml"
JMX_EXPORTER_CONFIG = REPO_ROOT / "deploy" / "kafka" / "jmx-exporter.yml"
DATASOURCE = {"type": "prometheus", "uid": "prometheus"}

# --------------------------------------------------------------------------- PromQL

_KEYWORDS = frozenset({
    "by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool",
    "and", "or", "unless", "atan2", "inf", "nan", "start", "end",
})
_LABEL_LISTS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_GRAFANA_VARIABLE = re.compile(r"\$(?:\{[^}]*\}|\w+)")
_TOKEN = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*|\d[\w.]*|\S")


def promql_metric_names(expr: str) -> set[str]:
    """Metric names read by a PromQL expression (or a Grafana `label_values(...)` query).

    Not a parser, but enough for dashboards and rules: strings, label matchers,
    ranges and Grafana variables are dropped; functions, keywords and the label
    lists of by/without/on/ignoring/group_* are not metric names."""
    text = _STRING.sub('""', expr)
    text = _GRAFANA_VARIABLE.sub(" ", text)
    text = re.sub(r"\{[^{}]*\}", " ", text)
    text = re.sub(r"\[[^\[\]]*\]", " ", text)
    tokens = _TOKEN.findall(text)
    names: set[str] = set()
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        if tok.lower() in _LABEL_LISTS and nxt == "(":
            depth, i = 0, i + 1
            while i < len(tokens):
                depth += {"(": 1, ")": -1}.get(tokens[i], 0)
                if depth == 0:
                    break
                i += 1
        elif tok == "label_values" and nxt == "(":
            # label_values(metric, label) or label_values(label): only a metric if two args
            close = tokens.index(")", i) if ")" in tokens[i:] else len(tokens)
            args = tokens[i + 2:close]
            if "," in args and re.match(r"[A-Za-z_:]", args[0]):
                names.add(args[0])
            i = close
        elif (re.match(r"[A-Za-z_:]", tok) and nxt != "(" and tok.lower() not in _KEYWORDS
              and nxt.lower() not in ("by", "without")):  # `sum by (...) (...)`
            names.add(tok)
        i += 1
    return names


# ------------------------------------------------------------------- dashboards read

def dashboard_files(directory: Path = DASHBOARDS_DIR) -> list[Path]:
    return sorted(directory.glob("*.json"))


def iter_panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, including those nested in rows."""
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", [])


def panel_queries(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, PromQL) for every panel target and every query variable."""
    for panel in iter_panels(dashboard):
        for target in panel.get("targets", []):
            if target.get("expr"):
                yield f"panel {panel.get('title')!r}", target["expr"]
    for var in dashboard.get("templating", {}).get("list", []):
        query = var.get("query")
        if var.get("type") == "query":
            text = query.get("query") if isinstance(query, dict) else query
            if text:
                yield f"variable {var.get('name')!r}", text


def metric_names_in_dashboards(directory: Path = DASHBOARDS_DIR) -> dict[str, set[str]]:
    """{metric name: {"<file>: panel 'title'", ...}} for every query of every dashboard."""
    used: dict[str, set[str]] = {}
    for path in dashboard_files(directory):
        dashboard = json.loads(path.read_text())
        for where, expr in panel_queries(dashboard):
            for name in promql_metric_names(expr):
                used.setdefault(name, set()).add(f"{path.name}: {where}")
    return used


# --------------------------------------------------------------- names that exist

def exported_metric_names() -> set[str]:
    """Sample names the services export, from the metric objects in `metrics.py`."""
    from prometheus_client.metrics import MetricWrapperBase

    from services.infra import metrics

    suffixes = {"counter": ("_total", "_created"), "gauge": ("",),
                "histogram": ("_bucket", "_count", "_sum", "_created"),
                "summary": ("_count", "_sum", "_created"), "info": ("_info",)}
    names: set[str] = set()
    for obj in vars(metrics).values():
        if isinstance(obj, MetricWrapperBase):
            for family in obj.describe():
                names.update(family.name + suffix for suffix in suffixes.get(family.type, ("",)))
    return names


def recorded_metric_names(path: Path = RECORDING_RULES) -> set[str]:
    import yaml

    groups = yaml.safe_load(path.read_text())["groups"]
    return {rule["record"] for group in groups for rule in group["rules"] if "record" in rule}


def jmx_exporter_metric_names(path: Path = JMX_EXPORTER_CONFIG) -> set[str]:
    """Literal metric names of the broker's JMX exporter rules (templated ones skipped)."""
    import yaml

    rules = yaml.safe_load(path.read_text()).get("rules", [])
    return {rule["name"] for rule in rules if "name" in rule and "$" not in rule["name"]}


def scraped_metric_names(exposition: str) -> set[str]:
    """Sample names in a `/metrics` text exposition (for the live check)."""
    from prometheus_client.parser import text_string_to_metric_families

    return {sample.name for family in text_string_to_metric_families(exposition)
            for sample in family.samples}


# --------------------------------------------------------------- dashboards written
# Built with Grafana's foundation SDK (its build for the Grafana version docker-compose.yml
# runs): typed builders per panel kind, and the SDK's JSON encoder. The SDK lays panels
# out left to right and starts a grid row when one is full (24 wide): it does not wrap a
# panel that does not fit, so each row's widths add up to 24 (a test checks the grid).
# Panel ids are numbered after the build.

_DATASOURCE_REF = dm.DataSourceRef(type_val=DATASOURCE["type"], uid=DATASOURCE["uid"])
_LAST_NOT_NULL = ["lastNotNull"]  # Grafana's default reduction for stat and bar gauge
PanelT = TypeVar("PanelT", timeseries.Panel, stat.Panel, table.Panel, bargauge.Panel)


class _Layout(TypedDict, total=False):
    unit: str
    description: str
    width: int
    height: int


def _panel(panel: PanelT, title: str, targets: Iterable[tuple[str, str]], *, unit: str = "short",
           description: str = "", width: int = 12, height: int = 8, instant: bool = False) -> PanelT:
    """`panel` with what every croupier panel has: title, Prometheus queries A, B, ...
    (`(expr, legend)`; instant ones for stat and table), unit and size."""
    panel = (panel.title(title).description(description).datasource(_DATASOURCE_REF)
             .unit(unit).span(width).height(height))
    for i, (expr, legend) in enumerate(targets):
        query = (prometheus.Dataquery().ref_id(chr(ord("A") + i)).datasource(_DATASOURCE_REF)
                 .expr(expr).legend_format(legend))
        panel = panel.with_target(query.instant() if instant else query)
    return panel


def _timeseries(title: str, targets: Iterable[tuple[str, str]], **kw: Unpack[_Layout]) -> timeseries.Panel:
    return _panel(timeseries.Panel(), title, targets, **kw)


def _stat(title: str, targets: Iterable[tuple[str, str]], **kw: Unpack[_Layout]) -> stat.Panel:
    reduce = common_builders.ReduceDataOptions().calcs(_LAST_NOT_NULL)
    return _panel(stat.Panel().reduce_options(reduce), title, targets, instant=True, **kw)


def _table(title: str, targets: Iterable[tuple[str, str]], **kw: Unpack[_Layout]) -> table.Panel:
    return _panel(table.Panel().show_header(True), title, targets, instant=True, **kw)


def _bargauge(title: str, targets: Iterable[tuple[str, str]], **kw: Unpack[_Layout]) -> bargauge.Panel:
    reduce = common_builders.ReduceDataOptions().calcs(_LAST_NOT_NULL)
    return _panel(bargauge.Panel().reduce_options(reduce), title, targets, **kw)


def _variable(name: str, query: str, *, label: str) -> db.QueryVariable:
    """A multi-value Prometheus label variable, "All" (regex `.*`) selected."""
    return (db.QueryVariable(name).label(label).datasource(_DATASOURCE_REF)
            .query({"query": query, "refId": f"{name}-var"})
            .include_all(True).multi(True).all_value(".*")
            .refresh(dm.VariableRefresh.ON_TIME_RANGE_CHANGED).sort(dm.VariableSort.ALPHABETICAL_ASC)
            .current(dm.VariableOption(selected=True, text=["All"], value=["$__all"])))


def _dashboard(uid: str, title: str, description: str, panels: Iterable[Builder[dm.Panel]],
               variables: Iterable[db.QueryVariable] = ()) -> dm.Dashboard:
    board = (db.Dashboard(title).uid(uid).description(description).tags(["croupier"]).editable()
             .version(1).refresh("30s").time("now-6h", "now").timezone("utc")
             .annotations([]).variables(list(variables)))
    for panel in panels:
        board = board.with_panel(panel)
    built = board.build()
    for panel_id, panel_model in enumerate(built.panels or [], start=1):
        panel_model.id_val = panel_id
    return built


def platform_dashboard() -> dm.Dashboard:
    return _dashboard("croupier-platform", "croupier / platform",
                      "Throughput, latency, consumer lag and errors of the four services and Kafka.", [
        _stat("Services up", [('up{job=~"croupier-.+|kafka"}', "{{job}}")], width=8, height=5,
              description="1 when Prometheus scraped the target; 0 fires ServiceDown.")
        .color_mode(common.BigValueColorMode.BACKGROUND).graph_mode(common.BigValueGraphMode.NONE)
        .text_mode(common.BigValueTextMode.VALUE_AND_NAME),
        _stat("Invariant breaches (since start)", [
            ("sum by (invariant) (croupier_invariant_breaches_total)", "{{invariant}}")],
            width=8, height=5, description="Any value above 0 fires InvariantBreach.")
        .color_mode(common.BigValueColorMode.BACKGROUND).graph_mode(common.BigValueGraphMode.NONE),
        _stat("Rounds per minute", [("sum(table_game_outcome:croupier_rounds:rate5m) * 60", "rounds")],
              width=8, height=5).graph_mode(common.BigValueGraphMode.AREA),
        _timeseries("Throughput (per minute)", [
            ("sum by (game) (table_game_outcome:croupier_rounds:rate5m) * 60", "rounds {{game}}"),
            ("sum(table_game:croupier_round_results:rate5m) * 60", "round results"),
            ("sum by (state) (bet_state:croupier_bets:rate5m) * 60", "bets {{state}}")]),
        _timeseries("Settlement and end-to-end latency", [
            ("all:croupier_settlement_latency_seconds:p50_5m", "settlement p50"),
            ("all:croupier_settlement_latency_seconds:p99_5m", "settlement p99 (objective 2.5 s)"),
            ("all:croupier_end_to_end_latency_seconds:p50_5m", "end-to-end p50"),
            ("all:croupier_end_to_end_latency_seconds:p99_5m", "end-to-end p99")], unit="s",
            description="Settlement: round result to the round's last wallet credit. "
                        "End-to-end: last card scanned to that credit."),
        _timeseries("Consumer lag (records)", [
            ("service_topic:croupier_consumer_lag_records:sum", "{{service}} {{topic}}")],
            description="Growing lag above 1000 records fires ConsumerLagGrowing."),
        _timeseries("HTTP requests per second by status", [
            ("sum by (service, status) (service_route_status:croupier_http_requests:rate5m)",
             "{{service}} {{status}}")], unit="reqps"),
        _timeseries("HTTP error ratio (5xx)", [
            ('sum by (service) (service_route_status:croupier_http_requests:rate5m{status=~"5.."})'
             " / sum by (service) (service_route_status:croupier_http_requests:rate5m)", "{{service}}")],
            unit="percentunit"),
        _timeseries("HTTP p99 latency by route", [
            ("service_route:croupier_http_request_duration_seconds:p99_5m", "{{service}} {{route}}")],
            unit="s"),
        _timeseries("Kafka messages in per second by topic", [
            ("sum by (topic) (rate(kafka_server_messages_in_total[5m]))", "{{topic}}")],
            description="From the broker's JMX exporter agent (deploy/kafka/jmx-exporter.yml)."),
    ])


def money_dashboard() -> dm.Dashboard:
    sel = '{profile=~"$profile", bet=~"$bet"}'
    exact = f"profile_bet:croupier_rtp_exact:ratio{sel}"
    se = f"profile_bet:croupier_rtp_standard_error:ratio_6h{sel}"
    return _dashboard("croupier-money", "croupier / money",
                      "Stakes, payouts, house result, and realised RTP against the rule engine's "
                      "exact RTP per bet type. Money in integer minor units.", [
        _timeseries("Money moved per minute (minor units)", [
            ("sum by (kind, currency) (kind_currency:croupier_money_minor_units:rate5m) * 60",
             "{{kind}} {{currency}}")], width=12),
        _timeseries("House result (minor units)", [
            ("sum by (currency) (croupier_house_result_minor_units)", "{{currency}}")],
            description="Stakes minus payouts minus refunds, per wallet process since it started."),
        _timeseries("Stakes vs payouts per minute (minor units)", [
            ('sum by (currency) (kind_currency:croupier_money_minor_units:rate5m{kind="stake_debit"}) * 60',
             "stakes {{currency}}"),
            ('sum by (currency) (kind_currency:croupier_money_minor_units:rate5m{kind="payout"}) * 60',
             "payouts {{currency}}"),
            ('sum by (currency) (kind_currency:croupier_money_minor_units:rate5m{kind="bet_refund"}) * 60',
             "refunds {{currency}}")], width=24),
        _timeseries("Realised RTP vs exact RTP (6 h), with the ±4 SE alert band", [
            (f"profile_bet:croupier_rtp_realised:ratio_6h{sel}", "realised {{profile}} {{bet}}"),
            (exact, "exact {{profile}} {{bet}}"),
            (f"{exact} + 4 * {se}", "exact + 4 SE {{profile}} {{bet}}"),
            (f"{exact} - 4 * {se}", "exact - 4 SE {{profile}} {{bet}}")],
            unit="percentunit", width=24, height=10,
            description="Realised = returned / staked over 6 h; SE = sqrt(exact variance x sum of "
                        "squared stakes) / staked. Outside the band for 30 min with >= 1000 effective "
                        "bets fires RtpDrift."),
        _timeseries("RTP drift (standard errors)", [
            (f"profile_bet:croupier_rtp_drift:zscore6h{sel}", "{{profile}} {{bet}}")], width=12,
            description="(realised - exact) / SE; |z| > 4 is the RtpDrift bound."),
        _timeseries("Effective bets settled (6 h)", [
            (f"profile_bet:croupier_rtp_effective_bets:count6h{sel}", "{{profile}} {{bet}}")], width=12,
            description="(sum of stakes)^2 / sum of squared stakes; RtpDrift waits for 1000."),
        _table("RTP per bet type", [
            (f"profile_bet:croupier_rtp_realised:ratio_6h{sel}", "realised"),
            (f"profile_bet:croupier_rtp_exact:ratio{sel}", "exact"),
            (f"profile_bet:croupier_rtp_drift:zscore6h{sel}", "z"),
            (f"profile_bet:croupier_settled_stake_minor_units:increase6h{sel}", "staked 6 h")],
            width=24, height=10),
    ], variables=[
        _variable("profile", "label_values(croupier_rtp_exact_ratio, profile)", label="Profile"),
        _variable("bet", 'label_values(croupier_rtp_exact_ratio{profile=~"$profile"}, bet)', label="Bet"),
    ])


def tables_dashboard() -> dm.Dashboard:
    return _dashboard("croupier-tables", "croupier / tables",
                      "Rounds, voids and refused dealer inputs per table.", [
        _timeseries("Rounds per minute by table and outcome", [
            ('sum by (table, outcome) (table_game_outcome:croupier_rounds:rate5m{table=~"$table"}) * 60',
             "{{table}} {{outcome}}")], width=12),
        _timeseries("Round results per minute by table", [
            ('sum by (table, game) (table_game:croupier_round_results:rate5m{table=~"$table"}) * 60',
             "{{table}} {{game}}")], width=12),
        _timeseries("Voids per minute by reason", [
            ("reason:croupier_round_voids:rate5m * 60", "{{reason}}")], width=12),
        _bargauge("Voids in the last 24 h by reason", [
            ("sum by (reason) (increase(croupier_round_voids_total[24h]))", "{{reason}}")], width=12)
        .display_mode(common.BarGaugeDisplayMode.BASIC).orientation(common.VizOrientation.HORIZONTAL),
        _timeseries("Refused dealer inputs per minute by reason", [
            ('sum by (reason) (rate(croupier_dealer_inputs_total{outcome="refused", table=~"$table"}[5m]))'
             " * 60", "{{reason}}")], width=12),
        _timeseries("Refused share of dealer inputs by table", [
            ('table:croupier_dealer_inputs_refused:ratio_rate5m{table=~"$table"}', "{{table}} 5 m"),
            ('table:croupier_dealer_inputs_refused:ratio_rate1h{table=~"$table"}', "{{table}} 1 h")],
            unit="percentunit", width=12,
            description="Over 5 % and 3x the last hour's share, with at least 10 refusals, "
                        "fires RefusedInputsSpike."),
        _timeseries("Bet rejections per minute by reason", [
            ("reason:croupier_bet_rejections:rate5m * 60", "{{reason}}")], width=24),
        *_dealer_and_hold_panels(),
    ], variables=[_variable("table", "label_values(croupier_rounds_total, table)", label="Table")])


def _dealer_and_hold_panels() -> list[Builder[dm.Panel]]:
    """`croupier stats` live: hands per hour and the per-100-rounds figures of each dealer,
    and each table's hold against the hold its bets should give, with its z-score."""
    act = 'croupier_dealer_activity_total{table=~"$table", kind=~"%s"}'

    def dealer_sum(kinds: str, span: str) -> str:
        return f"sum by (dealer) (increase({act % kinds}[{span}]))"

    rounds = dealer_sum("completed|voided", "24h")
    by = "sum by (table, currency) (increase(croupier_table_%s_total{table=~\"$table\"}[24h]))"
    stake, returned = by % "settled_stake_minor_units", by % "settled_returned_minor_units"
    theory = by % "theoretical_returned_minor_units"
    variance = by % "hold_variance_minor_units_squared"
    return [
        _timeseries("Hands per hour by dealer", [
            (dealer_sum("completed", "1h"), "{{dealer}}")], width=12,
            description="Rounds each dealer completed in the last hour (`croupier stats` "
                        "counts the time at the table instead of the clock's hour)."),
        _table("Dealers, last 24 h (per 100 rounds)", [
            (rounds, "rounds"),
            (f"100 * {dealer_sum('voided', '24h')} / {rounds}", "voids"),
            (f"100 * {dealer_sum('refused_input', '24h')} / {rounds}", "refused inputs"),
            (f"100 * {dealer_sum('corrected', '24h')} / {rounds}", "corrections")], width=12),
        _timeseries("Hold vs theoretical hold by table (24 h)", [
            (f"1 - {returned} / {stake}", "hold {{table}} {{currency}}"),
            (f"1 - {theory} / {stake}", "theory {{table}} {{currency}}")],
            unit="percentunit", width=12,
            description="Hold: (stake - returned) / stake of the bets settled; theory: the "
                        "stake-weighted house edge of those bets, from their exact RTPs."),
        _timeseries("Hold z-score by table (24 h)", [
            (f"({theory} - {returned}) / sqrt({variance})", "{{table}} {{currency}}")],
            width=12,
            description="(hold - theoretical hold) / its standard deviation: beyond ±3 the "
                        "table's results are worth a look (a Counter keeps what a correction "
                        "or annulment took back: `croupier stats` is the exact figure)."),
    ]


DASHBOARDS = {"platform.json": platform_dashboard, "money.json": money_dashboard,
              "tables.json": tables_dashboard}


def render(builder: Callable[[], dm.Dashboard]) -> str:
    """The dashboard's JSON as committed: the SDK's encoding, indented, UTF-8 kept."""
    return json.dumps(builder(), cls=JSONEncoder, indent=2, ensure_ascii=False) + "\n"


def write_dashboards(directory: Path = DASHBOARDS_DIR) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, builder in DASHBOARDS.items():
        path = directory / name
        path.write_text(render(builder))
        written.append(path)
    return written


if __name__ == "__main__":
    for written_path in write_dashboards():
        print(written_path.relative_to(REPO_ROOT))
    sys.exit(0)
