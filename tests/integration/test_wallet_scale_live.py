"""The wallet at casino-floor scale, over a real broker (functional, not timed):
one player with 5,000 lifetime bets keeps every record small, and two wallet workers
answer for every player, forwarding to the owner, and survive losing one of them."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime

import httpx
import pytest
from kafka import KafkaProducer

from services.infra import topic_admin
from services.infra.kafka_clients import ensure_acls
from services.infra.kafka_security import ADMIN, kafka_python_options
from services.infra.log_reader import read_to_end
from services.infra.packs import unpack
from services.infra.processes import ServiceProcess
from services.infra.routing import FORWARDED_HEADER
from services.infra.settings import Settings
from shared.events.bet_events import BetRejected
from shared.topics import (
    BETS_DECISIONS_TOPIC,
    BETS_PLACED_TOPIC,
    WALLET_ENDINGS_TOPIC,
    WALLET_LEDGER_TOPIC,
    WALLET_TRANSACTIONS_TOPIC,
    topic_catalogue,
)
from tests.conftest import free_port, instance_for
from tests.integration.money_support import ScriptedTable, wait_for

pytestmark = pytest.mark.kafka
RUN = uuid.uuid4().hex[:6]
OPERATOR = {"Authorization": f"Bearer {Settings().operator_token}"}
LIFETIME_BETS = 5_000
STAKE = 1000


def wallet_env(bootstrap: str, home, port: int) -> dict[str, str]:
    return {"KAFKA_BOOTSTRAP_SERVERS": bootstrap, "CROUPIER_HOME": str(home),
            "CROUPIER_INSTANCE": instance_for(home), "CROUPIER_WALLET_PORT": str(port)}


def worker(bootstrap: str, home, i: int, port: int) -> ServiceProcess:
    ensure_acls(bootstrap, instance_for(home))  # this platform instance's groups and topics
    return ServiceProcess("wallet", port, home / f"wallet-{i}.log",
                          wallet_env(bootstrap, home, port), worker=i)


def retrying(call, timeout_s: float = 60.0) -> httpx.Response:
    """The answer to `call()`, retried while the wallet says it is rebalancing (503)."""
    deadline = time.monotonic() + timeout_s
    while True:
        r = call()
        if r.status_code != 503 or time.monotonic() > deadline:
            return r
        time.sleep(0.5)


def make_player(http: httpx.Client, player_id: str, deposit: int) -> str:
    r = retrying(lambda: http.post("/accounts", headers=OPERATOR,
                                   json={"player_id": player_id, "currency": "IDR"}))
    assert r.status_code == 201, r.text
    r = retrying(lambda: http.post(f"/accounts/{player_id}/deposits", headers=OPERATOR,
                                   json={"request_id": f"dep-{player_id}", "amount": deposit}))
    assert r.status_code == 201, r.text
    r = retrying(lambda: http.post(f"/players/{player_id}/token", headers=OPERATOR))
    assert r.status_code == 200, r.text
    return r.json()["token"]


def bet_body(table: ScriptedTable, round_id: str, bet_id: str) -> dict:
    return {"bet_id": bet_id, "table_id": table.table_id, "round_id": round_id,
            "bet": "player", "stake": STAKE}


def record_sizes(bootstrap: str, topic: str, player_id: str) -> list[int]:
    """Key + value bytes of the player's records on `topic`, in log order; a pack's
    records (an own log's entries, `services.infra.packs`) each on its own."""
    marker = player_id.encode()
    sizes = []
    for r in read_to_end(bootstrap, topic):
        key, packed = r.key or b"", unpack(r.value or b"")
        if packed is None:
            sizes += [len(key) + len(r.value or b"")] if marker in key + (r.value or b"") else []
        else:  # a pack is keyed by its first record's key: each record by its own bytes
            sizes += [len(key) + len(value) for value in packed if marker in value]
    return sizes


@pytest.fixture(scope="module")
def catalogue(platform_kafka):
    admin = topic_admin.admin_client(platform_kafka)
    topic_admin.apply(admin, topic_catalogue())
    admin.close()
    producer = KafkaProducer(bootstrap_servers=platform_kafka, **kafka_python_options(ADMIN))
    yield producer
    producer.close()


def test_one_player_with_5000_lifetime_bets_keeps_records_small(platform_kafka, catalogue,
                                                                tmp_path):
    home = tmp_path / "home"
    wallet = worker(platform_kafka, home, 0, free_port()).start()
    table = ScriptedTable(catalogue, f"BIG-{RUN}", "sbo-baccarat", seed=3)
    try:
        wallet.wait_ready(90)
        http = httpx.Client(base_url=wallet.base_url, timeout=30)
        player = f"regular-{RUN}"
        token = make_player(http, player, LIFETIME_BETS * STAKE)
        table.open("r1", window_s=3600)
        wait_for(lambda: http.get(f"/tables/{table.table_id}/current-round").status_code
                 == 200, "round open in the wallet's view")
        ids = [f"b{i:05d}-{RUN}" for i in range(LIFETIME_BETS)]

        async def place_all() -> list[int]:
            async with httpx.AsyncClient(base_url=wallet.base_url, timeout=30,
                                         headers={"Authorization": f"Bearer {token}"}) as c:
                statuses = []
                for start in range(0, len(ids), 200):  # 200 in flight: one player
                    chunk = ids[start:start + 200]
                    answers = await asyncio.gather(*[
                        c.post(f"/players/{player}/bets", json=bet_body(table, "r1", b))
                        for b in chunk])
                    statuses += [a.status_code for a in answers]
                return statuses

        statuses = asyncio.run(place_all())
        assert statuses.count(201) == LIFETIME_BETS, {s: statuses.count(s) for s in statuses}
        balance = lambda: http.get(f"/accounts/{player}", headers=OPERATOR).json()  # noqa: E731
        assert balance()["balance"] == 0
        # bet-settlement's side, scripted: every bet rejected, so every stake is refunded
        now = datetime.now(UTC)
        for b in ids:
            rejected = BetRejected(bet_id=b, player_id=player, table_id=table.table_id,
                                   round_id="r1", bet="player", stake=STAKE, currency="IDR",
                                   reason_code="round_closed", message="scripted",
                                   decided_at=now)
            value = rejected.model_dump_json().encode()  # as bet-settlement's outbox
            catalogue.send(BETS_DECISIONS_TOPIC, key=table.table_id.encode(), value=value)
            catalogue.send(WALLET_ENDINGS_TOPIC, key=player.encode(), value=value)
        catalogue.flush()
        wait_for(lambda: balance()["balance"] == LIFETIME_BETS * STAKE, "every stake refunded",
                 120)
        assert balance()["tx_count"] == 1 + 2 * LIFETIME_BETS
        # a retry of the first bet still gets its original answer; nothing moves
        r = http.post(f"/players/{player}/bets", json=bet_body(table, "r1", ids[0]),
                      headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 200 and r.json()["bet"]["bet_id"] == ids[0]
        page = http.get(f"/players/{player}/transactions?after={2 * LIFETIME_BETS - 9}",
                        headers=OPERATOR).json()
        assert [t["kind"] for t in page["items"]] == ["bet_refund"] * 10
        assert balance()["balance"] == LIFETIME_BETS * STAKE
        http.close()
    finally:
        wallet.stop()
    # the ledger is the wallet's whole state: kept, never deleted by time
    admin = topic_admin.admin_client(platform_kafka)
    ledger = topic_admin.describe(admin, [WALLET_LEDGER_TOPIC])[WALLET_LEDGER_TOPIC].configs
    admin.close()
    assert ledger["cleanup.policy"] == "delete" and ledger["retention.ms"] == "-1", ledger
    for topic in [WALLET_LEDGER_TOPIC, WALLET_TRANSACTIONS_TOPIC, BETS_PLACED_TOPIC]:
        sizes = record_sizes(platform_kafka, topic, player)
        assert len(sizes) >= LIFETIME_BETS, (topic, len(sizes))
        first, last = max(sizes[100:200]), max(sizes[-100:])
        print(f"{topic}: {len(sizes)} records, largest of bets 100-200 {first} B, "
              f"of the last 100 {last} B")
        # only ids, offsets and counters may gain digits; nothing grows with the history
        assert last <= first + 32 and last < 2048, (topic, first, last)


def test_two_workers_answer_for_every_player_and_survive_losing_one(platform_kafka,
                                                                    catalogue, tmp_path):
    home = tmp_path / "home"
    ports = [free_port(), free_port()]
    workers = [worker(platform_kafka, home, i, ports[i]) for i in range(2)]
    table = ScriptedTable(catalogue, f"TWO-{RUN}", "sbo-baccarat", seed=4)
    try:
        workers[0].start().wait_ready(90)
        workers[1].start().wait_ready(90)
        http = [httpx.Client(base_url=w.base_url, timeout=30) for w in workers]
        players = {f"p{i}-{RUN}": 50_000 for i in range(12)}
        tokens = {p: make_player(http[i % 2], p, amount)
                  for i, (p, amount) in enumerate(players.items())}
        table.open("r1", window_s=3600)
        for client in http:  # every worker has the table's view, whatever it owns
            wait_for(lambda c=client: c.get(f"/tables/{table.table_id}/current-round")
                     .status_code == 200, "round open in each worker's view")
        for i, player in enumerate(players):
            for j in range(3):  # through both workers: forwarded to the owner when needed
                client = http[(i + j) % 2]
                r = retrying(lambda c=client, p=player, j=j: c.post(
                    f"/players/{p}/bets", json=bet_body(table, "r1", f"{p}-b{j}"),
                    headers={"Authorization": f"Bearer {tokens[p]}"}))
                assert r.status_code == 201, r.text
                players[player] -= STAKE
        for client in http:
            for player, expected in players.items():
                r = retrying(lambda c=client, p=player: c.get(f"/accounts/{p}",
                                                              headers=OPERATOR))
                assert r.json()["balance"] == expected, (player, r.text)
        # exactly one worker owns each player: asked directly (as if forwarded) the other
        # one refuses with 503 instead of answering from tables it does not hold
        owners = []
        for player in players:
            codes = sorted(c.get(f"/accounts/{player}", headers={
                **OPERATOR, FORWARDED_HEADER: "test"}).status_code for c in http)
            assert codes == [200, 503], (player, codes)
            owners.append(http[0].get(f"/accounts/{player}", headers={
                **OPERATOR, FORWARDED_HEADER: "test"}).status_code == 200)
        assert any(owners) and not all(owners), "both workers own some of the players"
        assert all(p.status_code == 200 for p in [
            retrying(lambda p=p: http[1].get(f"/players/{p}/transactions",
                                             headers=OPERATOR)) for p in players])
        # one worker crashes: the other takes its partitions and answers for everyone
        workers[1].kill()
        started = time.monotonic()
        for player, expected in players.items():
            r = retrying(lambda p=player: http[0].get(f"/accounts/{p}", headers=OPERATOR),
                         timeout_s=60)
            assert r.status_code == 200 and r.json()["balance"] == expected, (player, r.text)
            r = retrying(lambda p=player: http[0].post(
                f"/players/{p}/bets", json=bet_body(table, "r1", f"{p}-after"),
                headers={"Authorization": f"Bearer {tokens[p]}"}), timeout_s=60)
            assert r.status_code == 201, r.text
            assert r.json()["balance_after"] == expected - STAKE
        assert time.monotonic() - started < 60
        for client in http:
            client.close()
    finally:
        for w in workers:
            w.stop()
