"""`croupier stats`, `GET /stats` and the console's Statistics page against the real broker:
a known floor (tests/stats_floor.py) whose first minutes are only in the archive and the
rest only in the log's tail; every answer gives the same figures for each dealer and table."""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from services.infra.settings import Settings
from tests.integration.archive_support import producer
from tests.integration.replay_support import apply_topics, croupier, operator_api_process
from tests.stats_floor import Record, StatsFloor, expected_dealers, expected_tables, stats_floor

pytestmark = pytest.mark.kafka


def produce(bootstrap: str, records: list[Record]) -> None:
    prod = producer(bootstrap)
    for topic, key, value, ms in records:
        prod.send(topic, key=key.encode(), value=value, timestamp_ms=ms)
    prod.flush()
    prod.close()


@pytest.fixture(scope="module")
def floor(platform_kafka, tmp_path_factory):
    """The floor two hours ago: its first three minutes archived, the rest in the log only."""
    apply_topics(platform_kafka)
    url = (tmp_path_factory.mktemp("stats") / "archive").as_uri()
    f = stats_floor(uuid.uuid4().hex[:6], datetime.now(UTC) - timedelta(hours=2))
    cut = int((f.start + timedelta(minutes=3)).timestamp() * 1000)
    produce(platform_kafka, [r for r in f.records if r[3] < cut])
    archived = croupier(platform_kafka, "archive", "run", "--url", url, "--once")
    assert archived.returncode == 0, archived.stderr[-2000:]
    produce(platform_kafka, [r for r in f.records if r[3] >= cut])
    return platform_kafka, f, {"CROUPIER_ARCHIVE_URL": url}


def window(f: StatsFloor) -> dict[str, str]:
    return {"from": (f.start - timedelta(minutes=1)).isoformat(),
            "to": (f.start + timedelta(minutes=30)).isoformat()}


def check(found: dict, f: StatsFloor) -> None:
    """The floor's dealers and tables (other modules' records on the broker aside)."""
    dealers = {d["dealer"]: d for d in found["dealers"]}
    for name, expected in expected_dealers(f).items():
        assert {k: dealers[name][k] for k in expected} == expected, name
    tables = {t["table_id"]: t for t in found["tables"]}
    for table, expected in expected_tables(f).items():
        assert {k: tables[table][k] for k in expected} == expected, table
        assert isinstance(tables[table]["z"], float)


def test_croupier_stats_gives_each_dealers_and_tables_figures(floor):
    bootstrap, f, env = floor
    span = window(f)
    got = croupier(bootstrap, "stats", "--from", span["from"], "--to", span["to"], "--json",
                   env=env)
    assert got.returncode == 0, got.stderr
    check(json.loads(got.stdout), f)
    text = croupier(bootstrap, "stats", "--from", span["from"], "--to", span["to"], env=env)
    assert text.returncode == 0, text.stderr
    ana = next(line for line in text.stdout.splitlines() if line.startswith(f.ana))
    assert ana.split()[1:7] == ["4", "60.0", "0", "2", "1", "0.0"]
    table_a = expected_tables(f)[f.table_a]
    assert f"{100 * table_a['hold']:.2f}%" in text.stdout
    bad = croupier(bootstrap, "stats", "--from", span["to"], "--to", span["from"], env=env)
    assert bad.returncode == 2 and "is not after its start" in bad.stderr


def test_the_operator_api_and_the_console_give_the_same_figures(floor):
    bootstrap, f, env = floor
    token = Settings().operator_token
    with operator_api_process(bootstrap, env) as url:
        assert httpx.get(f"{url}/stats").status_code == 401
        got = httpx.get(f"{url}/stats", params=window(f), timeout=60,
                        headers={"Authorization": f"Bearer {token}"})
        assert got.status_code == 200, got.text
        check(got.json(), f)
        bad = httpx.get(f"{url}/stats", params={"from": "yesterday"}, timeout=60,
                        headers={"Authorization": f"Bearer {token}"})
        assert bad.status_code == 422 and "ISO 8601" in bad.text
        with httpx.Client(base_url=url, timeout=60) as console:
            closed = console.get("/console/stats")  # without a session: to the login
            assert closed.status_code == 303 and closed.headers["Location"] == "/console/login"
            csrf = re.search(r'name="csrf_token" value="([^"]+)"',
                             console.get("/console/login").text).group(1)
            console.post("/console/login", data={"token": token, "csrf_token": csrf})
            page = console.get("/console/stats", params={"hours": 3})
        assert page.status_code == 200, page.text
        row = re.search(rf'<tr data-dealer="{f.ana}">(.*?)</tr>', page.text).group(1)
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
        assert cells[2:7] == ["4", "60.0", "0", "2", "1"]
        table_a = expected_tables(f)[f.table_a]
        assert f"{100 * table_a['hold']:.2f}%" in page.text
        assert 'href="/console/stats"' in page.text
