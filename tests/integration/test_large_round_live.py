"""A 2,000-bet round over the real broker: the wallet and bet-settlement as processes, 100
players betting concurrently through the wallet's HTTP API. The round settles to the rule
engine's amounts with every money invariant, and no record bet-settlement writes (outputs
or its own log's entries) grows with the round: every one stays under 64 KB. Functional,
not timed."""

from __future__ import annotations

import asyncio
import time
import uuid

import httpx
import pytest
from kafka import KafkaAdminClient

from services.infra.kafka_security import ADMIN, kafka_python_options
from services.infra.log_reader import read_to_end
from services.infra.packs import records_of
from services.operator.audit import audit
from services.operator.event_reader import read_books
from shared.events.bet_events import manifest_digest
from shared.profile import load_profile
from shared.settlement import Bet, settle
from shared.topics import BETS_DECISIONS_TOPIC, BETS_SETTLED_TOPIC, SETTLEMENT_LOG_TOPIC
from tests.integration.money_support import ScriptedTable, money_platform_fixture, read_topic

pytestmark = pytest.mark.kafka
PLAYERS, BETS_EACH = 100, 20
MAX_RECORD = 64 * 1024
ROUND_BETS = [("player", 2000), ("banker", 3000), ("tie", 1000), ("player_pair", 1000),
              ("banker_pair", 1000), ("player", 5000), ("banker", 1000),
              ("dragon_bonus_player", 1000), ("dragon_bonus_banker", 1000), ("fortune_six", 1000)]


def wait_until(check, what: str, timeout_s: float, every_s: float = 2.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(every_s)
    raise AssertionError(f"timed out waiting for {what}")


platform = money_platform_fixture("large-round-home")


async def place_all(base_url: str, players: dict[str, str], table_id: str, round_id: str
                    ) -> list[dict]:
    """Every player places BETS_EACH bets, one after another; the players all at once."""
    limits = httpx.Limits(max_connections=32)
    async with httpx.AsyncClient(base_url=base_url, timeout=120, limits=limits) as http:
        async def one_player(i: int, player_id: str, token: str) -> list[dict]:
            placed = []
            for j in range(BETS_EACH):
                bet, stake = ROUND_BETS[(i + j) % len(ROUND_BETS)]
                body = {"bet_id": f"big-{uuid.uuid4().hex}", "table_id": table_id,
                        "round_id": round_id, "bet": bet, "stake": stake}
                r = await http.post(f"/players/{player_id}/bets", json=body,
                                    headers={"Authorization": f"Bearer {token}"})
                assert r.status_code == 201, r.text
                placed.append({**r.json()["bet"], "player_id": player_id})
            return placed
        done = await asyncio.gather(*(one_player(i, p, t)
                                      for i, (p, t) in enumerate(players.items())))
    return [bet for player_bets in done for bet in player_bets]


def largest_record(bootstrap: str, topic: str) -> tuple[int, int]:
    """(records, size of the largest value) on `topic`, a pack's records each counted
    (`services.infra.packs`: an own log's entries)."""
    count = largest = 0
    for record in read_to_end(bootstrap, topic):
        count += len(records_of(record.value or b""))
        largest = max(largest, len(record.value or b""))
    return count, largest


def test_a_2000_bet_round_settles_by_the_rules_with_bounded_records(platform):
    table = ScriptedTable(platform.producer, f"BIG-{uuid.uuid4().hex[:6]}", "sbo-baccarat",
                          seed=21)
    players = {}
    for i in range(PLAYERS):
        player_id = platform.player(f"big{i}", 500_000)
        players[player_id] = platform.tokens[player_id]
    table.open("big1", window_s=600)
    platform.wait_round_open(table, "big1")

    placed = asyncio.run(place_all(platform.wallet.base_url, players, table.table_id, "big1"))
    assert len(placed) == PLAYERS * BETS_EACH
    ids = {b["bet_id"] for b in placed}

    def accepted() -> set[str]:
        return {d["bet_id"] for d in read_topic(platform.bootstrap, BETS_DECISIONS_TOPIC)
                if d["type"] == "bet_accepted" and d["table_id"] == table.table_id}
    wait_until(lambda: ids <= accepted(), "every bet accepted", 180)
    table.close("big1")
    published = table.complete("big1")

    def settled() -> list[dict]:
        return [s for s in read_topic(platform.bootstrap, BETS_SETTLED_TOPIC)
                if s["table_id"] == table.table_id and s["round_id"] == "big1"]
    wait_until(lambda: {s["bet_id"] for s in settled()} >= ids, "every bet settled", 180)

    # by the rule engine, once each, one of them last of the round
    records = settled()
    by_bet = {b["bet_id"]: b for b in placed}
    profile = load_profile("sbo-baccarat")
    assert sorted(s["bet_id"] for s in records) == sorted(ids)
    for s in records:
        bet = by_bet[s["bet_id"]]
        expected = settle(Bet(bet=bet["bet"], position=bet["position"], stake=bet["stake"]),
                          published.result, profile)
        assert (s["outcome"], s["returned"], s["stake"]) == (
            expected.outcome, expected.returned, bet["stake"]), s
    assert sum(s["last_of_round"] for s in records) == 1

    # the manifest: every bet, the total stake, the digest of the accepted ids; one
    # manifest, which bet-settlement announces again (the same record, which consumers
    # dedupe) to an intake mark or a close it reads after the round closed (round_book)
    manifests = [d for d in read_topic(platform.bootstrap, BETS_DECISIONS_TOPIC)
                 if d["type"] == "round_manifest" and d["table_id"] == table.table_id]
    assert manifests and all(m == manifests[0] for m in manifests), manifests
    assert (manifests[0]["bet_count"], manifests[0]["total_stake"], manifests[0]["digest"]) == (
        len(ids), sum(b["stake"] for b in placed), manifest_digest(ids))

    # every money invariant, from the log alone, once the wallet has paid every settlement
    def books_settled():
        books, unparsed = read_books(platform.bootstrap)
        assert unparsed == []
        mine = books.only({table.table_id}, set(players))
        paid = {tx.cause_id.removeprefix("settle:") for tx in mine.txs.values()
                if tx.kind in ("payout", "bet_refund")}
        lost = {s.bet_id for s in mine.settled.values() if s.returned == 0}
        return mine if ids <= paid | lost else None
    wait_until(lambda: books_settled() is not None, "every settlement credited", 180)
    report = audit(books_settled(), allow_pending=False)
    assert report.invariants_ok, [c for c in report.invariants if not c.ok]
    assert (report.bets, report.settled, report.rejected, report.voided) == (len(ids), len(ids),
                                                                             0, 0)
    for player_id in players:
        assert platform.balance(player_id) == report.balances[player_id]

    # no record above 64 KB: outputs and bet-settlement's own log (no changelog any more)
    admin = KafkaAdminClient(bootstrap_servers=platform.bootstrap, **kafka_python_options(ADMIN))
    changelogs = sorted(t for t in admin.list_topics()
                        if "bet-settlement" in t and t.endswith("-changelog"))
    admin.close()
    assert changelogs == [], changelogs
    sizes = {topic: largest_record(platform.bootstrap, topic)
             for topic in [BETS_DECISIONS_TOPIC, BETS_SETTLED_TOPIC, SETTLEMENT_LOG_TOPIC]}
    assert all(largest < MAX_RECORD for _, largest in sizes.values()), sizes
    # the result's entries: the round's 2,000 settled bet entries, cut into chunks
    assert sizes[SETTLEMENT_LOG_TOPIC][0] >= len(ids) + len(ids) // 200, sizes
    assert sizes[BETS_SETTLED_TOPIC][0] >= len(ids), sizes
