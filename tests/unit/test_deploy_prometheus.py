"""deploy/prometheus: promtool accepts the configs and rules, every alert's unit tests
pass (one firing and one quiet case each), and configs, rules, settings and the
runbook agree. promtool comes from Debian's `prometheus` package, which `make test`
installs (deploy/prometheus/install-tools.sh) when it is missing."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml", reason="pyyaml is needed to read the deploy files")

from services.devtools.grafana_dashboards import (  # noqa: E402
    exported_metric_names,
    promql_metric_names,
    recorded_metric_names,
)
from services.infra.jmx_agent import DEFAULT_AGENT_PORT  # noqa: E402
from services.infra.settings import Settings  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PROM = ROOT / "deploy" / "prometheus"
CONFIGS = (PROM / "prometheus.yml", PROM / "prometheus.compose.yml")
RULES = (PROM / "rules" / "recording.yml", PROM / "rules" / "alerts.yml")
RULE_TESTS = PROM / "tests" / "alerts_test.yml"
RUNBOOK = ROOT / "docs" / "operator-guide.md"  # its "Alerts" section is the runbook
SERVICE_JOBS = {
    "croupier-dealer-event": ("dealer-event", "dealer_event_port"),
    "croupier-game-evaluation": ("game-evaluation", "game_evaluation_port"),
    "croupier-bet-settlement": ("bet-settlement", "bet_settlement_port"),
    "croupier-wallet": ("wallet", "wallet_port"),
}

needs_promtool = pytest.mark.skipif(
    shutil.which("promtool") is None,
    reason="promtool not installed: run deploy/prometheus/install-tools.sh "
           "(make test does; Debian package `prometheus`)",
)


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["promtool", *args], capture_output=True, text=True, cwd=PROM, timeout=120)


def load(path: Path):
    return yaml.safe_load(path.read_text())


def alerts() -> list[dict]:
    return [rule for group in load(RULES[1])["groups"] for rule in group["rules"]]


def targets(config: dict) -> dict[str, list[str]]:
    """job -> its targets: static ones, and `name:port` for each DNS service discovery."""
    return {job["job_name"]: [t for sc in job.get("static_configs", []) for t in sc["targets"]]
            + [f"{name}:{sd['port']}" for sd in job.get("dns_sd_configs", [])
               for name in sd["names"]]
            for job in config["scrape_configs"]}


@needs_promtool
@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name)
def test_promtool_check_config(config: Path) -> None:
    done = promtool("check", "config", config.name)
    assert done.returncode == 0, done.stdout + done.stderr


@needs_promtool
def test_promtool_check_rules() -> None:
    done = promtool("check", "rules", *(str(p.relative_to(PROM)) for p in RULES))
    assert done.returncode == 0, done.stdout + done.stderr


@needs_promtool
def test_promtool_test_rules() -> None:
    done = promtool("test", "rules", str(RULE_TESTS.relative_to(PROM)))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_expected_alerts_exist() -> None:
    assert {rule["alert"] for rule in alerts()} >= {
        "ServiceDown", "ConsumerLagGrowing", "SettlementLatencyP99High",
        "RefusedInputsSpike", "RtpDrift", "InvariantBreach"}


def test_every_alert_has_a_firing_and_a_quiet_unit_test() -> None:
    firing: set[str] = set()
    quiet: set[str] = set()
    for case in load(RULE_TESTS)["tests"]:
        for check in case.get("alert_rule_test", []):
            (firing if check.get("exp_alerts") else quiet).add(check["alertname"])
    names = {rule["alert"] for rule in alerts()}
    assert names - firing == set(), "alerts without a firing test"
    assert names - quiet == set(), "alerts without a non-firing test"


def runbook_anchors() -> set[str]:
    """GitHub-style anchors of the headings of the runbook."""
    anchors = set()
    for line in RUNBOOK.read_text().splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


@pytest.mark.parametrize("rule", alerts(), ids=lambda r: r["alert"])
def test_alert_has_severity_summary_description_and_runbook(rule: dict) -> None:
    assert rule["labels"]["severity"] in {"critical", "warning"}
    notes = rule["annotations"]
    assert notes["summary"].strip() and notes["description"].strip()
    path, _, anchor = notes["runbook_url"].partition("#")
    assert path == "docs/operator-guide.md" and ROOT / path == RUNBOOK and RUNBOOK.exists()
    assert anchor in runbook_anchors(), f"{path} has no heading for #{anchor}"


def test_rules_read_only_exported_or_recorded_metrics() -> None:
    known = exported_metric_names() | recorded_metric_names() | {"up"}
    for path in RULES:
        for group in load(path)["groups"]:
            for rule in group["rules"]:
                unknown = promql_metric_names(rule["expr"]) - known
                assert not unknown, f"{path.name} {rule.get('record') or rule.get('alert')}: {unknown}"


def test_recording_rule_names_follow_level_metric_operation() -> None:
    for name in recorded_metric_names():
        level, metric, operation = name.split(":")
        assert level and metric.startswith("croupier_") and operation, name


def test_native_config_scrapes_every_service_at_its_settings_port_and_kafka() -> None:
    defaults = Settings(_env_file=None)
    jobs = targets(load(CONFIGS[0]))
    assert set(jobs) == set(SERVICE_JOBS) | {"kafka"}
    for job, (_, field) in SERVICE_JOBS.items():
        assert jobs[job] == [f"127.0.0.1:{getattr(defaults, field)}"]
    assert jobs["kafka"] == [f"127.0.0.1:{DEFAULT_AGENT_PORT}"]


def test_compose_config_is_the_native_one_by_service_name() -> None:
    native, compose = (load(path) for path in CONFIGS)
    assert native["global"] == compose["global"]
    assert native["rule_files"] == compose["rule_files"]
    native_jobs, compose_jobs = targets(native), targets(compose)
    assert set(native_jobs) == set(compose_jobs)
    for job, (service, _) in SERVICE_JOBS.items():
        port = native_jobs[job][0].rsplit(":", 1)[1]
        assert compose_jobs[job] == [f"{service}:{port}"], "every replica, by DNS"
    assert compose_jobs["kafka"] == ["kafka-1:9404", "kafka-2:9404", "kafka-3:9404"]


def test_rule_files_of_the_configs_exist() -> None:
    for config in CONFIGS:
        for rule_file in load(config)["rule_files"]:
            assert (PROM / rule_file).resolve() in {p.resolve() for p in RULES}


def test_installer_is_an_executable_shell_script() -> None:
    script = PROM / "install-tools.sh"
    assert script.stat().st_mode & 0o111, "install-tools.sh must be executable"
    done = subprocess.run(["sh", "-n", str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
