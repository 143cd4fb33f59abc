"""Opposite betting through the running services (issue 31, item 3): players bet through the
wallet's HTTP door on a scripted table (wallet and bet-settlement as processes, a real
broker); the first rounds archived, the last only in the log's tail. `croupier risk
opposite`, `GET /risk/opposite` on the operator API and the console's page name the pair
that bet Player against Banker, and not the player on the same side nor the one whose
stakes were too far apart."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from shared.topics import BETS_PLACED_TOPIC
from tests.integration.archive_support import archive_once
from tests.integration.money_support import (
    OPERATOR,
    RUN,
    ScriptedTable,
    money_platform_fixture,
    read_topic,
    wait_for,
)
from tests.integration.replay_support import croupier, operator_api_process

pytestmark = pytest.mark.kafka

platform = money_platform_fixture("risk-home")


@pytest.fixture(scope="module")
def played(platform, tmp_path_factory):
    """Three rounds: alice on Banker, bob on Player 5 % below her, carol on Banker beside
    alice (bob's stake is 27 % below hers); two rounds archived, the third in the tail."""
    url = (tmp_path_factory.mktemp("risk-archive") / "archive").as_uri()
    started = datetime.now(UTC) - timedelta(minutes=1)
    table = ScriptedTable(platform.producer, f"OPP-{RUN}", "sbo-baccarat", seed=31)
    alice, bob, carol = (platform.player(name, 1_000_000)
                         for name in ("opp-alice", "opp-bob", "opp-carol"))
    bet_ids = set()
    for i in range(3):
        round_id = f"opp{i}"
        table.open(round_id, pin=True)
        platform.wait_round_open(table, round_id)
        for player, bet, stake in ((alice, "banker", 10_000), (bob, "player", 9_500),
                                   (carol, "banker", 13_000)):
            bet_id = f"{player}-{i}"
            placed = platform.bet(player, table, round_id, bet, stake, bet_id=bet_id)
            assert placed.status_code == 201, placed.text
            bet_ids.add(bet_id)
        table.close(round_id)
        table.complete(round_id)
        if i == 1:
            wait_for(lambda: bet_ids <= {b.get("bet_id") for b in
                                         read_topic(platform.bootstrap, BETS_PLACED_TOPIC)},
                     "the first rounds' bets on bets.placed")
            archive_once(platform.bootstrap, url)
    wait_for(lambda: bet_ids <= {b.get("bet_id") for b in
                                 read_topic(platform.bootstrap, BETS_PLACED_TOPIC)},
             "every bet on bets.placed")
    return table, (alice, bob, carol), started, {"CROUPIER_ARCHIVE_URL": url}


def ours(pairs: list[dict]) -> list[dict]:
    """The pairs of this run's players (the broker may hold other modules' bets)."""
    return [p for p in pairs if any(RUN in player for player in p["players"])]


def test_the_command_line_names_the_pair_across_the_archive_and_the_tail(platform, played):
    table, (alice, bob, carol), started, env = played
    got = croupier(platform.bootstrap, "risk", "opposite", "--from", started.isoformat(),
                   "--json", env=env)
    assert got.returncode == 0, got.stderr
    assert ours(json.loads(got.stdout)["pairs"]) == [
        {"players": [alice, bob], "currency": "IDR", "tables": [table.table_id], "rounds": 3,
         "opposed_stake": 3 * 9_500}]
    # the archive alone holds two of the three rounds: below --min-rounds 3
    archived = croupier(platform.bootstrap, "risk", "opposite", "--from", started.isoformat(),
                        "--json", "--no-live-tail", env=env)
    assert archived.returncode == 0, archived.stderr
    assert ours(json.loads(archived.stdout)["pairs"]) == []
    text = croupier(platform.bootstrap, "risk", "opposite", "--from", started.isoformat(),
                    "--min-rounds", "2", "--no-live-tail", env=env)
    assert text.returncode == 0, text.stderr
    assert f"{alice} <> {bob}  2 rounds  opposed 19000 IDR" in text.stdout
    assert carol not in text.stdout
    bad = croupier(platform.bootstrap, "risk", "opposite", "--min-rounds", "0", env=env)
    assert bad.returncode == 2 and "--min-rounds must be at least 1" in bad.stderr


def test_the_operator_api_and_the_console_name_the_pair(platform, played):
    table, (alice, bob, carol), started, env = played
    with operator_api_process(platform.bootstrap, env) as url:
        assert httpx.get(f"{url}/risk/opposite").status_code == 401
        answer = httpx.get(f"{url}/risk/opposite", headers=OPERATOR, timeout=60,
                           params={"from": started.isoformat()})
        assert answer.status_code == 200, answer.text
        assert [(p["players"], p["rounds"], p["opposed_stake"])
                for p in ours(answer.json()["pairs"])] == [([alice, bob], 3, 28_500)]
        bad = httpx.get(f"{url}/risk/opposite", headers=OPERATOR,
                        params={"min_rounds": "three"})
        assert bad.status_code == 422 and "min_rounds" in bad.json()["error"]["message"]
        with httpx.Client(base_url=url, timeout=60, follow_redirects=True) as console:
            assert console.get("/console/risk").url.path == "/console/login"
            form = console.get("/console/login").text
            csrf = re.search(r'name="csrf_token" value="([^"]+)"', form).group(1)
            console.post("/console/login", data={
                "token": OPERATOR["Authorization"].removeprefix("Bearer "), "csrf_token": csrf})
            page = console.get("/console/risk", params={"hours": "1"})
            assert page.status_code == 200, page.text
            assert f'data-players="{alice} {bob}"' in page.text
            assert "IDR 285.00" in page.text and carol not in page.text
            assert 'href="/console/risk"' in page.text  # in the navigation
