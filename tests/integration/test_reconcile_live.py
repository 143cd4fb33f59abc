"""Issue 20, deliverable 3, live: `croupier reconcile` as a process, reading
OperatorCallRecords from `wallet.operator_calls` on a real broker (as the operator
principal) and the report of a FAKE operator wallet: a tiny aiohttp server in this test
that checks the request's signature and pages a fixed list of transactions. It is not the
reference operator wallet; the end-to-end reconciliation against that one (and against
croupier's real wallet caller) is a test of its own."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from aiohttp import web
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from services.infra import kafka_security
from services.infra.kafka_security import ADMIN, kafka_python_options
from services.infra.settings import Settings
from shared.events.operator_wallet import (
    KEY_ID_HEADER,
    SIGNATURE_HEADER,
    OperatorCallRecord,
    OperatorTransaction,
    TransactionsPage,
    verify,
)
from shared.topics import WALLET_OPERATOR_CALLS_TOPIC
from tests.ports import free_port
from tests.unit.test_reconcile import call, op

pytestmark = pytest.mark.kafka
CROUPIER = [sys.executable, "-m", "services.cli"]
KEY_ID, KEY = "k1", b"fake-operator-secret"
AT = datetime.now(UTC) - timedelta(minutes=30)
FROM = (AT - timedelta(hours=1)).isoformat()


class FakeOperatorWallet:
    """A fake operator: GET /transactions over a fixed list, signed requests only."""

    def __init__(self, transactions: list[OperatorTransaction]) -> None:
        self.transactions = transactions
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.asked: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    async def _page(self, request: web.Request) -> web.Response:
        query = request.rel_url.raw_query_string
        self.asked.append(query)
        problem = verify(query.encode(), request.headers.get(KEY_ID_HEADER),
                         request.headers.get(SIGNATURE_HEADER), {KEY_ID: KEY})
        if problem:
            return web.json_response({"status": "error", "error_code": "bad_signature",
                                      "message": problem}, status=401)
        after, limit = int(request.query.get("after", "0")), int(request.query["limit"])
        chunk = self.transactions[after:after + limit]
        more = after + limit < len(self.transactions)
        page = TransactionsPage(transactions=chunk, next_after=after + limit if more else None)
        return web.Response(text=page.model_dump_json(), content_type="application/json")

    def __enter__(self) -> FakeOperatorWallet:
        app = web.Application()
        app.router.add_get("/transactions", self._page)
        self._runner = web.AppRunner(app)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)
        return self

    async def _start(self) -> None:
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)


def _records() -> tuple[list[OperatorCallRecord], list[OperatorTransaction]]:
    """Three players' bets as croupier recorded them and a consistent operator report: a
    won bet, a lost bet (zero credit), a debit that timed out and was rolled back (the
    operator answered "not found"), a corrected round (credit reversed, paid again)."""
    later = AT + timedelta(minutes=5)
    calls = [
        call("debit", "debit:B1", 100, player="P1", bet="B1", at=AT),
        call("credit", "credit:S1", 195, player="P1", bet="B1", ref="debit:B1", at=AT),
        call("debit", "debit:B2", 50, player="P2", bet="B2", at=AT),
        call("credit", "credit:S2", 0, player="P2", bet="B2", ref="debit:B2", at=AT),
        call("debit", "debit:B3", 70, player="P3", bet="B3", outcome="no_answer", at=AT),
        call("rollback", "rollback:debit:B3", 70, player="P3", bet="B3", ref="debit:B3",
             outcome="refused", error_code="transaction_not_found", at=AT),
        call("rollback", "rollback:credit:S1", 195, player="P1", bet="B1", ref="credit:S1",
             at=later),
        call("credit", "credit:S1b", 100, player="P1", bet="B1", ref="debit:B1", at=later),
    ]
    operator = [
        op("debit", "debit:B1", 100, player="P1", bet="B1", at=AT),
        op("credit", "credit:S1", 195, player="P1", bet="B1", ref="debit:B1", at=AT,
           status="rolled_back"),
        op("debit", "debit:B2", 50, player="P2", bet="B2", at=AT),
        op("credit", "credit:S2", 0, player="P2", bet="B2", ref="debit:B2", at=AT),
        op("rollback", "rollback:credit:S1", 195, player="P1", bet="B1", ref="credit:S1",
           at=later),
        op("credit", "credit:S1b", 100, player="P1", bet="B1", ref="debit:B1", at=later),
    ]
    return calls, operator


@pytest.fixture(scope="module")
def written(platform_kafka: str) -> list[OperatorCallRecord]:
    """wallet.operator_calls on the module's broker, with the catalogue's ACLs (the
    operator principal reads it), holding the records croupier's wallet would have
    written (keyed by player)."""
    admin = KafkaAdminClient(bootstrap_servers=platform_kafka, **kafka_python_options(ADMIN))
    try:
        admin.create_topics([NewTopic(WALLET_OPERATOR_CALLS_TOPIC, 3, 1)])
        if kafka_security.secured(Settings()):  # the catalogue's ACLs: operator reads it
            kafka_security.apply_acls(admin, None)
    finally:
        admin.close()
    calls, _ = _records()
    producer = KafkaProducer(bootstrap_servers=platform_kafka, acks="all",
                             **kafka_python_options(ADMIN))
    for record in calls:
        producer.send(WALLET_OPERATOR_CALLS_TOPIC, key=record.request.player_id.encode(),
                      value=record.model_dump_json().encode())
    producer.flush()
    producer.close()
    return calls


def croupier_reconcile(bootstrap: str, url: str, home: Path, *args: str
                       ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CROUPIER_")}
    env.update(KAFKA_BOOTSTRAP_SERVERS=bootstrap, CROUPIER_HOME=str(home),
               CROUPIER_ENV="development", CROUPIER_OPERATOR_WALLET_URL=url,
               CROUPIER_OPERATOR_WALLET_KEY_ID=KEY_ID,
               CROUPIER_OPERATOR_WALLET_SECRET=KEY.decode(), COLUMNS="200")
    return subprocess.run([*CROUPIER, "reconcile", "--from", FROM, *args], env=env,
                          capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])


@pytest.fixture
def fake_operator() -> Iterator[FakeOperatorWallet]:
    _, operator = _records()
    with FakeOperatorWallet(operator) as wallet:
        yield wallet


def test_a_consistent_log_and_report_reconcile_to_zero_differences(
        platform_kafka: str, written: list[OperatorCallRecord],
        fake_operator: FakeOperatorWallet, tmp_path: Path) -> None:
    done = croupier_reconcile(platform_kafka, fake_operator.url, tmp_path, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["clean"] and report["calls_read"] == len(written)
    assert report["transactions"] == 8 and report["players"] == 3
    assert [(d["croupier"], d["operator"]) for d in report["days"]] == [(-50, -50)]
    # every page was asked signed (the probe, then the report)
    assert fake_operator.asked[0] == "limit=1"


def test_each_difference_is_named_and_exits_1(
        platform_kafka: str, written: list[OperatorCallRecord],
        fake_operator: FakeOperatorWallet, tmp_path: Path) -> None:
    ops = fake_operator.transactions
    fake_operator.transactions = [t for t in ops if t.transaction_id != "credit:S1b"] + [
        op("credit", "credit:S9", 500, player="P2", bet="B9", at=AT)]
    done = croupier_reconcile(platform_kafka, fake_operator.url, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "missing_at_operator: player P1, transaction credit:S1b" in done.stdout
    assert "unknown_to_croupier: player P2, transaction credit:S9" in done.stdout
    assert "player_net_mismatch: player P1" in done.stdout
    one = croupier_reconcile(platform_kafka, fake_operator.url, tmp_path, "--player", "P3")
    assert one.returncode == 0, one.stdout + one.stderr


def test_an_unreachable_operator_wallet_exits_2_naming_it(
        platform_kafka: str, written: list[OperatorCallRecord], tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    done = croupier_reconcile(platform_kafka, url, tmp_path)
    assert done.returncode == 2
    assert f"the operator wallet at {url} is unreachable" in done.stderr
