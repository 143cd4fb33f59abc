"""A real Prometheus server, run natively for the live checks (no Docker).

`PrometheusServer` writes a throw-away configuration that scrapes the given targets
every second (and loads the repo's recording and alert rules, evaluated every
second too), starts Debian's `/usr/bin/prometheus` on a free loopback port with its
own temporary storage, waits for `/-/ready`, answers queries through the HTTP API
and stops and deletes everything on exit. It never touches port 9090 or the
package's own service. Install the binary with `deploy/prometheus/install-tools.sh`.

    with PrometheusServer({"croupier-wallet": ["127.0.0.1:8104"]}) as prom:
        prom.wait_for_series("croupier_rounds_total")
        prom.query("sum(croupier_rounds_total)")
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx

from tests.ports import free_port

REPO_ROOT = Path(__file__).resolve().parents[1]
PROMETHEUS_DIR = REPO_ROOT / "deploy" / "prometheus"
RULE_FILES = (PROMETHEUS_DIR / "rules" / "recording.yml", PROMETHEUS_DIR / "rules" / "alerts.yml")
TEMP_PREFIX = "croupier-prometheus-"  # install-tools.sh spares processes run from here


class PrometheusError(RuntimeError):
    """The Prometheus server could not be started, or a query failed."""


def prometheus_binary() -> str | None:
    return shutil.which("prometheus")


def scrape_config(targets: Mapping[str, Iterable[str]], *, scrape_interval: str = "1s",
                  rule_files: Iterable[Path] = RULE_FILES) -> dict[str, Any]:
    """A prometheus.yml (as a dict) scraping `{job: [host:port, ...]}`."""
    return {
        "global": {"scrape_interval": scrape_interval, "scrape_timeout": scrape_interval,
                   "evaluation_interval": scrape_interval},
        "rule_files": [str(Path(path).resolve()) for path in rule_files],
        "scrape_configs": [
            {"job_name": job, "static_configs": [{"targets": list(hosts)}]}
            for job, hosts in targets.items()
        ],
    }


class PrometheusServer:
    """One Prometheus process with its own config, storage and port."""

    def __init__(self, targets: Mapping[str, Iterable[str]], *, scrape_interval: str = "1s",
                 rule_files: Iterable[Path] = RULE_FILES, port: int | None = None,
                 binary: str | None = None) -> None:
        self.config = scrape_config(targets, scrape_interval=scrape_interval, rule_files=rule_files)
        self.port = port or free_port()
        self.binary = binary or prometheus_binary()
        self.workdir: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path | None:
        return self.workdir / "prometheus.log" if self.workdir else None

    def start(self, timeout_s: float = 30.0) -> PrometheusServer:
        if not self.binary:
            raise PrometheusError("prometheus is not installed; run deploy/prometheus/install-tools.sh")
        self.workdir = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX))
        config_file = self.workdir / "prometheus.yml"
        config_file.write_text(json.dumps(self.config, indent=2))  # JSON is YAML
        with open(self.workdir / "prometheus.log", "wb") as log:
            self.proc = subprocess.Popen(
                [self.binary, f"--config.file={config_file}",
                 f"--storage.tsdb.path={self.workdir / 'data'}",
                 f"--web.listen-address=127.0.0.1:{self.port}",
                 "--storage.tsdb.retention.time=1d", "--log.level=warn"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                cwd=self.workdir, start_new_session=True,
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                log_text = self.log_tail()
                self.stop()
                raise PrometheusError(f"prometheus exited during start-up:\n{log_text}")
            try:
                if httpx.get(f"{self.url}/-/ready", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        log_text = self.log_tail()
        self.stop()
        raise PrometheusError(f"prometheus not ready after {timeout_s:.0f}s:\n{log_text}")

    def stop(self, timeout_s: float = 10.0) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def __enter__(self) -> PrometheusServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log_tail(self, lines: int = 30) -> str:
        log = self.log_file
        if log is None or not log.exists():
            return "(no log)"
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) or "(empty log)"

    def api(self, path: str, **params: str) -> Any:
        """GET /api/v1/<path>; the `data` of a successful answer."""
        try:
            answer = httpx.get(f"{self.url}/api/v1/{path}", params=params, timeout=10.0).json()
        except (httpx.HTTPError, ValueError) as exc:
            raise PrometheusError(f"/api/v1/{path} failed: {exc}") from exc
        if answer.get("status") != "success":
            raise PrometheusError(f"/api/v1/{path} {params}: {answer.get('error', answer)}")
        return answer["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query: [{"metric": {labels}, "value": [ts, "value"]}, ...]."""
        return self.api("query", query=expr)["result"]

    def targets(self) -> list[dict[str, Any]]:
        return self.api("targets")["activeTargets"]

    def wait_for_series(self, expr: str, timeout_s: float = 30.0,
                        poll_s: float = 0.5) -> list[dict[str, Any]]:
        """Poll an instant query until it returns data; raise with the targets' state if not."""
        deadline = time.monotonic() + timeout_s
        while True:
            result = self.query(expr)
            if result:
                return result
            if time.monotonic() >= deadline:
                health = [(t["labels"].get("job"), t["health"], t.get("lastError", ""))
                          for t in self.targets()]
                raise PrometheusError(f"no data for {expr!r} after {timeout_s:.0f}s; targets: {health}")
            time.sleep(poll_s)

    def wait_for_targets_up(self, timeout_s: float = 30.0) -> list[dict[str, Any]]:
        """Wait until every configured target has been scraped successfully."""
        deadline = time.monotonic() + timeout_s
        while True:
            targets = self.targets()
            if targets and all(t["health"] == "up" for t in targets):
                return targets
            if time.monotonic() >= deadline:
                raise PrometheusError("targets not up: " + ", ".join(
                    f"{t['scrapeUrl']}={t['health']} {t.get('lastError', '')}" for t in targets))
            time.sleep(0.5)

    def graph_url(self, *exprs: str, range_input: str = "5m") -> str:
        """The graph page (table tab off, graph tab on) plotting each expression."""
        params: dict[str, str] = {}
        for i, expr in enumerate(exprs):
            params.update({f"g{i}.expr": expr, f"g{i}.tab": "0", f"g{i}.range_input": range_input})
        return f"{self.url}/graph?{urlencode(params)}"


def rtp_graph_expr(selector: str = "", bound: float = 4.0) -> str:
    """One expression drawing realised RTP, exact RTP and exact ± `bound` standard
    errors (the RtpDrift alert's band) per bet, each line named by a `line` label.
    `selector` narrows the bets, e.g. '{profile="sbo-baccarat", bet="banker"}'."""
    realised = f"profile_bet:croupier_rtp_realised:ratio_6h{selector}"
    exact = f"profile_bet:croupier_rtp_exact:ratio{selector}"
    se = f"profile_bet:croupier_rtp_standard_error:ratio_6h{selector}"
    lines = {
        "realised": realised,
        "exact": exact,
        f"exact + {bound:g} SE": f"{exact} + {bound:g} * {se}",
        f"exact - {bound:g} SE": f"{exact} - {bound:g} * {se}",
    }
    return " or ".join(f'label_replace({expr}, "line", "{name}", "", "")' for name, expr in lines.items())
