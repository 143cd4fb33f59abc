"""Issue 20, deliverable 3: `croupier reconcile`'s options and exit codes, the operator API's
GET /reconcile, and the two readers (the operator's paged, signed report; croupier's
topic), with fake sources injected where `run_reconcile` reads them: no broker, no
operator wallet (the live test with a real broker is tests/integration)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from aiohttp.test_utils import TestClient, TestServer
from typer.testing import CliRunner

from services.cli import reconcile_cmd
from services.cli.main import app
from services.infra.settings import Settings
from services.operator import reconcile_sources
from services.operator.http_api import make_app
from services.operator.reconcile import Unreadable
from services.operator.reconcile_sources import (
    ReconcileSourceError,
    operator_transactions,
    read_operator_calls,
    window_of,
)
from shared.events.operator_wallet import (
    KEY_ID_HEADER,
    SIGNATURE_HEADER,
    TransactionsPage,
    verify,
)
from tests.unit.test_reconcile import call, op

runner = CliRunner()
NOW = datetime.now(UTC)
EARLIER = NOW - timedelta(hours=2)
FROM = (NOW - timedelta(days=1)).date().isoformat()  # the default (today) may miss EARLIER
SETTINGS = Settings(env="development", operator_token="op-token-for-tests",
                    wallet_url="http://127.0.0.1:9", operator_wallet_url="http://wallet.test",
                    operator_wallet_key_id="k2", operator_wallet_secret="s3cret")


class Sides:
    """The two sides `run_reconcile` reads, faked: what it was asked, what it answers."""

    def __init__(self, calls: list[Any], operator: list[Any],
                 unreachable: bool = False) -> None:
        self.calls, self.operator, self.unreachable = calls, operator, unreachable
        self.asked: list[tuple[str, str, bytes]] = []

    def read_calls(self, bootstrap: str, archive: object = None) -> Iterator[Any]:
        return iter(self.calls)

    def transactions(self, url: str, key_id: str, key: bytes,
                     page_size: int = 1000) -> Iterator[Any]:
        self.asked.append((url, key_id, key))
        if self.unreachable:
            raise ReconcileSourceError(f"the operator wallet at {url} is unreachable: refused")
        return iter(self.operator)


@pytest.fixture
def sides(monkeypatch: pytest.MonkeyPatch) -> Sides:
    faked = Sides([call("debit", "debit:B1", 100, at=EARLIER)],
                  [op("debit", "debit:B1", 100, at=EARLIER)])
    monkeypatch.setattr(reconcile_sources, "read_operator_calls", faked.read_calls)
    monkeypatch.setattr(reconcile_sources, "operator_transactions", faked.transactions)
    monkeypatch.setattr(reconcile_sources, "archive_from_settings", lambda settings: None)
    monkeypatch.setattr(reconcile_cmd, "get_settings", lambda: SETTINGS)
    return faked


def test_no_difference_exits_0_and_says_so(sides: Sides) -> None:
    result = runner.invoke(app, ["reconcile", "--from", FROM])
    assert result.exit_code == 0, result.output
    assert "reconcile: 0 differences" in result.output
    assert "1 transactions" in result.output
    # signed with the settings' key id and secret, at the settings' URL
    assert sides.asked[0] == ("http://wallet.test", "k2", b"s3cret")


def test_differences_exit_1_each_named_with_its_ids(sides: Sides) -> None:
    sides.operator = []
    result = runner.invoke(app, ["reconcile", "--from", FROM])
    assert result.exit_code == 1, result.output
    assert "missing_at_operator: player P1, transaction debit:B1" in result.output
    assert "player_net_mismatch: player P1" in result.output


def test_json_is_the_report(sides: Sides) -> None:
    sides.operator = []
    result = runner.invoke(app, ["reconcile", "--from", FROM, "--json", "--player", "P1"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["clean"] is False and report["player"] == "P1"
    assert {d["name"] for d in report["differences"]} >= {"missing_at_operator"}
    assert report["note"].startswith("the window ends at")  # --to defaults to now - settle


def test_the_player_option_reconciles_one_player(sides: Sides) -> None:
    sides.operator = []
    result = runner.invoke(app, ["reconcile", "--from", FROM, "--player", "P2"])
    assert result.exit_code == 0, result.output


def test_a_day_is_the_whole_utc_day(sides: Sides) -> None:
    result = runner.invoke(app, ["reconcile", "--day", "2026-12-01", "--json"])
    report = json.loads(result.stdout)
    assert (report["since"], report["until"]) == ("2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z")
    assert result.exit_code == 0 and report["transactions"] == 0 and report["note"] is None


@pytest.mark.parametrize("args,says", [
    (["--day", "2026-12-01", "--from", "2026-12-01"], "not both"),
    (["--day", "yesterday"], "bad day"),
    (["--from", "noon"], "bad time"),
    (["--from", "2026-12-02", "--to", "2026-12-01"], "the window is empty"),
])
def test_a_bad_window_exits_2_naming_it(sides: Sides, args: list[str], says: str) -> None:
    result = runner.invoke(app, ["reconcile", *args])
    assert result.exit_code == 2 and says in result.output, result.output


def test_an_unreachable_operator_wallet_exits_2_naming_it(sides: Sides) -> None:
    sides.unreachable = True
    result = runner.invoke(app, ["reconcile", "--from", FROM])
    assert result.exit_code == 2
    assert "the operator wallet at http://wallet.test is unreachable" in result.output


def test_any_other_failure_exits_2_not_1(sides: Sides, monkeypatch: pytest.MonkeyPatch) -> None:
    """1 means differences: a crash (an archive that cannot be read, say) must not say so."""
    def broken(bootstrap: str, archive: object = None) -> Iterator[Any]:
        raise OSError("archive bucket unreachable")
    monkeypatch.setattr(reconcile_sources, "read_operator_calls", broken)
    result = runner.invoke(app, ["reconcile", "--from", FROM])
    assert result.exit_code == 2
    assert "reconcile could not run: OSError: archive bucket unreachable" in result.output


def test_no_operator_wallet_configured_exits_2(sides: Sides,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reconcile_cmd, "get_settings",
                        lambda: SETTINGS.model_copy(update={"operator_wallet_url": None}))
    result = runner.invoke(app, ["reconcile", "--from", FROM])
    assert result.exit_code == 2 and "CROUPIER_OPERATOR_WALLET_URL" in result.output


def test_the_window_ends_the_settle_time_before_now() -> None:
    now = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
    start, end, note = window_of(None, None, None, now, timedelta(seconds=60))
    assert (start, end) == (datetime(2026, 12, 3, tzinfo=UTC), now - timedelta(seconds=60))
    assert note is not None and "60 s" in note
    start, end, note = window_of("2026-12-02T10:00", "2026-12-02T11:00Z", None, now,
                                 timedelta(seconds=60))
    assert (start.hour, end.hour, note) == (10, 11, None) and start.tzinfo is not None


# ---------------------------------------------------------------- the operator API

def _api(path: str, token: str | None = "op-token-for-tests") -> tuple[int, dict, dict]:
    async def get() -> tuple[int, dict, dict]:
        async with TestClient(TestServer(make_app(SETTINGS))) as client:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            answer = await client.get(path, headers=headers)
            return answer.status, dict(answer.headers), await answer.json()
    return asyncio.run(get())


def test_the_operator_api_serves_the_same_report(sides: Sides) -> None:
    status, headers, body = _api(f"/reconcile?from={FROM}")
    assert status == 200 and body["clean"] is True and headers["X-Croupier-Verdict"] == "CLEAN"
    sides.operator = []
    status, headers, body = _api(f"/reconcile?from={FROM}&player=P1")
    assert status == 200 and headers["X-Croupier-Verdict"] == "DIFFERENCES"
    assert "missing_at_operator" in {d["name"] for d in body["differences"]}


def test_the_operator_api_route_is_for_the_operator_and_names_its_errors(sides: Sides) -> None:
    assert _api("/reconcile", token=None)[0] == 401
    status, _, body = _api("/reconcile?day=someday")
    assert status == 422 and "bad day" in body["error"]["message"]
    assert _api("/reconcile?margin=-5")[0] == 422
    sides.unreachable = True
    status, _, body = _api(f"/reconcile?from={FROM}")
    assert status == 503 and body["error"]["code"] == "reconcile_source_unavailable"


# ---------------------------------------------------------------- the readers

def _wallet(pages: dict[str | None, TransactionsPage], seen: list[str],
            status: int = 200) -> httpx.Client:
    def handle(request: httpx.Request) -> httpx.Response:
        query = request.url.query.decode()
        seen.append(query)
        problem = verify(query.encode(), request.headers.get(KEY_ID_HEADER),
                         request.headers.get(SIGNATURE_HEADER), {"k2": b"s3cret"})
        if problem:
            return httpx.Response(401, json={"status": "error", "error_code": "bad_signature"})
        after = request.url.params.get("after")
        return httpx.Response(status, content=pages[after].model_dump_json())
    return httpx.Client(transport=httpx.MockTransport(handle))


def test_the_report_is_read_page_by_page_signed_over_its_query_string() -> None:
    first, second = op("debit", "debit:B1", 100), op("credit", "credit:S1", 0)
    seen: list[str] = []
    pages = {None: TransactionsPage(transactions=[first], next_after=7),
             "7": TransactionsPage(transactions=[second])}
    read = list(operator_transactions("http://w/", "k2", b"s3cret", page_size=1,
                                      client=_wallet(pages, seen)))
    assert read == [first, second] and seen == ["limit=1", "after=7&limit=1"]


def test_a_bad_key_a_bad_page_or_a_stuck_cursor_is_an_error_naming_it() -> None:
    pages = {None: TransactionsPage(transactions=[], next_after=3),
             "3": TransactionsPage(transactions=[], next_after=3)}
    with pytest.raises(ReconcileSourceError, match="HTTP 401"):
        list(operator_transactions("http://w", "k2", b"wrong", client=_wallet(pages, [])))
    with pytest.raises(ReconcileSourceError, match="does not advance"):
        list(operator_transactions("http://w", "k2", b"s3cret", client=_wallet(pages, [])))
    bad = httpx.Client(transport=httpx.MockTransport(
        lambda request: httpx.Response(200, content=b'{"rows": []}')))
    with pytest.raises(ReconcileSourceError, match="not a TransactionsPage"):
        list(operator_transactions("http://w", "k2", b"s3cret", client=bad))

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)
    with pytest.raises(ReconcileSourceError, match="http://w is unreachable"):
        list(operator_transactions("http://w", "k2", b"s3cret",
                                   client=httpx.Client(transport=httpx.MockTransport(refuse))))


def test_croupiers_topic_is_read_and_an_unreadable_record_is_named(
        monkeypatch: pytest.MonkeyPatch) -> None:
    good = call("credit", "credit:S1", 5)
    ms = int(NOW.timestamp() * 1000)
    records = [SimpleNamespace(partition=0, offset=0, value=good.model_dump_json().encode(),
                               timestamp=ms),
               SimpleNamespace(partition=1, offset=4, value=b"{not json", timestamp=ms),
               SimpleNamespace(partition=1, offset=5, value=None, timestamp=None)]
    monkeypatch.setattr(reconcile_sources, "read_archive_then_log",
                        lambda bootstrap, topic, archive, principal: iter(records))
    read = list(read_operator_calls("kafka:9092"))
    assert read[0] == good
    assert [r.where for r in read[1:] if isinstance(r, Unreadable)] == [
        "wallet.operator_calls[1]@4", "wallet.operator_calls[1]@5"]
    assert read[1].at is not None and abs(read[1].at - NOW) < timedelta(seconds=1)
