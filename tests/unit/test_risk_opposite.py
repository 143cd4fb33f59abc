"""Opposite betting over an archive on a local directory (DuckDB over its Parquet files, no
broker): the `bets.placed` records of a few rounds, as the wallet writes them."""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC, datetime, timedelta

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from services.archive.queries import ArchiveQueries
from services.infra.archive_store import DirectoryStore
from services.operator.risk_views import opposite_handler
from shared.events.bet_events import BetPlaced
from shared.topics import BETS_PLACED_TOPIC
from tests.archive_builder import archive_records

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
_ids = itertools.count()


def placed(player: str, table: str, round_no: int, bet: str, stake: int, currency: str = "IDR",
           position: int | None = None) -> tuple[str, str, bytes, int]:
    """A funded bet on `bets.placed` at round `round_no`'s time (a round every 5 minutes)."""
    at = T0 + timedelta(minutes=5 * round_no)
    bet_id = f"bet-{next(_ids)}"
    record = BetPlaced(bet_id=bet_id, player_id=player, table_id=table,
                       round_id=f"{table}-R{round_no}", bet=bet, stake=stake, currency=currency,
                       position=position, debit_tx_id=f"stake_debit:{bet_id}", placed_at=at)
    return BETS_PLACED_TOPIC, table, record.model_dump_json().encode(), int(at.timestamp() * 1000)


def pairs_of(tmp_path, records, **kwargs) -> list[dict]:
    store = DirectoryStore(tmp_path / f"archive-{next(_ids)}")  # a fresh archive each call
    archive_records(store, records)
    queries = ArchiveQueries(store)
    try:
        return queries.opposite_pairs(**kwargs)["pairs"]
    finally:
        queries.close()


def test_a_planted_pair_is_named_with_its_tables_rounds_and_opposed_stake(tmp_path):
    records = []
    for r in range(4):
        table = "B1" if r < 2 else "B2"
        # alice and bob on opposite sides, 5 % apart, sides swapped in the last round;
        # bob's side in round 0 is two chips (one stake of 9,500)
        alice, bob = ("banker", "player") if r < 3 else ("player", "banker")
        records.append(placed("alice", table, r, alice, 10_000))
        if r == 0:
            records += [placed("bob", table, r, bob, 5_000), placed("bob", table, r, bob, 4_500)]
        else:
            records.append(placed("bob", table, r, bob, 9_500))
        records.append(placed("carol", table, r, "tie", 10_000))  # not an opposite side
    got = pairs_of(tmp_path, records)
    assert got == [{"players": ["alice", "bob"], "currency": "IDR", "tables": ["B1", "B2"],
                    "rounds": 4, "opposed_stake": 4 * 9_500}]


def test_same_side_stakes_apart_and_too_few_rounds_are_not_pairs(tmp_path):
    records = []
    for r in range(3):
        records += [placed("alice", "B1", r, "banker", 10_000),
                    placed("dave", "B1", r, "banker", 10_000),      # alice's own side
                    placed("erin", "B1", r, "player", 11_500),      # 15 % above alice's
                    placed("frank", "B2", r, "big", 20_000)]
        if r < 2:  # only two rounds against frank
            records.append(placed("gina", "B2", r, "small", 20_000))
    assert pairs_of(tmp_path, records) == []
    # ... and with two rounds enough, frank and gina are a pair
    got = pairs_of(tmp_path, records, min_rounds=2)
    assert [(p["players"], p["rounds"], p["opposed_stake"]) for p in got] == [
        (["frank", "gina"], 2, 40_000)]


def test_stakes_exactly_ten_percent_apart_are_within(tmp_path):
    records = [b for r in range(3) for b in (placed("ann", "B1", r, "player", 9_000),
                                             placed("ben", "B1", r, "banker", 10_000))]
    assert [p["players"] for p in pairs_of(tmp_path, records)] == [["ann", "ben"]]


def test_stakes_are_compared_within_one_currency_and_pairs_named_per_currency(tmp_path):
    records = []
    for r in range(3):
        records += [placed("hana", "B1", r, "banker", 10_000, "IDR"),
                    placed("ivan", "B1", r, "player", 10_000, "USD"),  # same number, not money
                    placed("jo", "B2", r, "banker", 500, "USD"),
                    placed("kai", "B2", r, "player", 480, "USD")]
    got = pairs_of(tmp_path, records)
    assert [(p["players"], p["currency"], p["opposed_stake"]) for p in got] == [
        (["jo", "kai"], "USD", 3 * 480)]


def test_triple_face_win_and_lose_oppose_on_the_same_position_only(tmp_path):
    records = []
    for r in range(3):
        records += [placed("lia", "TF", r, "win", 5_000, position=1),
                    placed("max", "TF", r, "lose", 5_000, position=1),
                    placed("ned", "TF", r, "lose", 5_000, position=2),  # another hand
                    placed("ola", "TF", r, "win", 5_000, position=3),
                    placed("pia", "TF", r, "tie", 5_000, position=3)]
    got = pairs_of(tmp_path, records)
    assert [(p["players"], p["rounds"]) for p in got] == [(["lia", "max"], 3)]


def test_the_range_bounds_the_bets_and_bad_requests_are_refused(tmp_path):
    records = [b for r in range(4) for b in (placed("ann", "B1", r, "player", 9_000),
                                             placed("ben", "B1", r, "banker", 10_000))]
    # rounds 1..3 only (round r is placed at T0 + 5r minutes)
    got = pairs_of(tmp_path, records, since=T0 + timedelta(minutes=1))
    assert [p["rounds"] for p in got] == [3]
    assert pairs_of(tmp_path, records, since=T0 + timedelta(minutes=6)) == []
    assert pairs_of(tmp_path, records, until=T0 + timedelta(minutes=15), min_rounds=3)[0][
        "rounds"] == 3
    with pytest.raises(ValueError, match="min_rounds must be at least 1"):
        pairs_of(tmp_path, records, min_rounds=0)
    with pytest.raises(ValueError, match="is not after its start"):
        pairs_of(tmp_path, records, since=T0, until=T0)


def test_the_operator_api_answers_the_pairs_as_json_and_refuses_a_bad_request(tmp_path):
    records = [b for r in range(3) for b in (placed("ann", "B1", r, "player", 9_000),
                                             placed("ben", "B1", r, "banker", 10_000))]
    store = DirectoryStore(tmp_path / "archive")
    archive_records(store, records)
    queries = ArchiveQueries(store)

    async def query(run):
        queries.refresh()
        return run(queries)

    async def walk() -> None:
        app = web.Application()
        app.router.add_get("/risk/opposite", opposite_handler(query))
        async with TestClient(TestServer(app)) as client:
            ok = await client.get("/risk/opposite", params={"from": T0.isoformat()})
            assert ok.status == 200
            assert await ok.json() == {"pairs": [{
                "players": ["ann", "ben"], "currency": "IDR", "tables": ["B1"], "rounds": 3,
                "opposed_stake": 27_000}]}
            fewer = await client.get("/risk/opposite", params={"min_rounds": "4"})
            assert (await fewer.json()) == {"pairs": []}
            for params, says in (({"min_rounds": "0"}, "at least 1"),
                                 ({"min_rounds": "x"}, "whole number"),
                                 ({"from": "yesterday"}, "yesterday"),
                                 ({"from": T0.isoformat(), "to": T0.isoformat()},
                                  "not after its start")):
                bad = await client.get("/risk/opposite", params=params)
                assert bad.status == 422, params
                assert says in (await bad.json())["error"]["message"], params

    try:
        asyncio.run(walk())
    finally:
        queries.close()
