"""`croupier replay` against the real broker: a recorded round replays to MATCH in every
format, found by time among other tables' records (complaints: test_complaints_live.py)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from services.infra.auth import Authenticator
from services.infra.settings import Settings
from shared.topics import (
    BETS_DECISIONS_TOPIC,
    BETS_SETTLED_TOPIC,
    ROUND_RESULTS_TOPIC,
    TABLE_CORRECTIONS_TOPIC,
    TABLE_EVENTS_TOPIC,
    WALLET_OPERATOR_CALLS_TOPIC,
    WALLET_TRANSACTIONS_TOPIC,
)
from tests.browser_screenshot import PNG_MAGIC, chromium_binary, screenshot
from tests.integration.replay_support import (
    apply_topics,
    croupier,
    operator_api_process,
    record_round_among_others,
    replay_args,
)

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def recorded(platform_kafka):
    apply_topics(platform_kafka)
    return record_round_among_others(platform_kafka)


def test_text_report_matches(platform_kafka, recorded):
    done = croupier(platform_kafka, *replay_args(recorded))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "VERDICT: MATCH" in done.stdout and "intact" in done.stdout
    assert "A♠" in done.stdout and "dealer Ana" in done.stdout


def test_json_report_matches_and_lists_the_players_money(platform_kafka, recorded):
    player = f"alice-{recorded.table_id[1:]}"
    done = croupier(platform_kafka, *replay_args(recorded, "--player", player, "--format", "json"))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["verdict"] == "MATCH" and report["winner"] == "banker"
    assert [(b["bet"], b["returned"]) for b in report["bets"]] == [("banker", 1950), ("player", 0)]
    assert all(b["wallet"] for b in report["bets"])


def test_html_report_is_written_and_self_contained(platform_kafka, recorded, tmp_path):
    out = tmp_path / "round.html"
    done = croupier(platform_kafka, *replay_args(recorded, "--format", "html", "--out", str(out)))
    assert done.returncode == 0 and "MATCH" in done.stdout
    page = out.read_text()
    assert "<svg" in page and "MATCH" in page and "src=" not in page and "href=" not in page


def test_an_unknown_round_is_a_clear_error(platform_kafka, recorded):
    done = croupier(platform_kafka, "replay", "--table", recorded.table_id, "--round", "nope",
                    "--at", recorded.t0.isoformat())
    assert done.returncode == 2 and "was not opened" in done.stderr


@pytest.mark.skipif(chromium_binary() is None, reason="chromium not installed (make test does)")
def test_html_report_opens_in_chromium(platform_kafka, recorded, tmp_path):
    page = tmp_path / "round.html"
    done = croupier(platform_kafka, *replay_args(recorded, "--format", "html", "--out", str(page)))
    assert done.returncode == 0, done.stderr
    png = tmp_path / "round.png"
    screenshot(page.as_uri(), png, height=1200)
    assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 20_000


@pytest.fixture(scope="module")
def operator_api(platform_kafka):
    with operator_api_process(platform_kafka) as url:
        yield url


def test_operator_endpoint_serves_reports_to_operators_only(operator_api, recorded):
    settings = Settings()
    path = f"{operator_api}/rounds/{recorded.table_id}/{recorded.round_id}/report"
    params = {"at": recorded.t0.isoformat()}
    assert httpx.get(path, params=params).status_code == 401
    player = Authenticator.from_settings(settings)
    as_player = {"Authorization": f"Bearer {player.player_token('alice')}"}
    assert httpx.get(path, params=params, headers=as_player).status_code == 403
    assert httpx.get(path, params=params, headers={"Authorization": "Bearer forged"}
                     ).status_code == 401
    operator = {"Authorization": f"Bearer {settings.operator_token}"}
    for fmt, marker in (("text", "VERDICT: MATCH"), ("json", '"verdict": "MATCH"'),
                        ("html", "<svg")):
        answer = httpx.get(path, params={**params, "format": fmt}, headers=operator, timeout=60)
        assert answer.status_code == 200 and marker in answer.text, answer.text[:300]
        assert answer.headers["X-Croupier-Verdict"] == "MATCH"
    missing = httpx.get(f"{operator_api}/rounds/{recorded.table_id}/nope/report", params=params,
                        headers=operator, timeout=60)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "unknown_round"


@pytest.fixture(scope="module")
def popular(platform_kafka):
    """A round with 300 bets from 150 players (their wallet records spread over every
    partition), between two other rounds of the same table with the same players."""
    from tests.floor_builder import Floor

    apply_topics(platform_kafka)
    run = uuid.uuid4().hex[:6]
    floor = Floor(seed=5)
    players = [f"pop{run}-{i}" for i in range(150)]
    # stamped in append order, as a live log is (the rounds' windows overlap: each replay
    # must keep just its own round's records)
    start = datetime.now(UTC)
    before = floor.play_round(f"P{run}", 40, players[:40], start)
    target = floor.play_round(f"P{run}", 300, players, start + timedelta(seconds=40))
    after = floor.play_round(f"P{run}", 40, players[-40:], start + timedelta(seconds=80))
    wallet_of_round = sum(1 for topic, _, value, _ in floor.records
                          if topic == WALLET_TRANSACTIONS_TOPIC and target.round_id.encode() in value)
    floor.produce(platform_kafka)
    return target, wallet_of_round, (before, after)


def _read(bootstrap, played, player=None):
    from services.operator.replay import replay_round
    from services.operator.round_reader import RoundReader

    reader = RoundReader(bootstrap)
    try:
        rec = reader.read_round(played.table_id, played.round_id, played.t0, player)
    finally:
        reader.close()
    report = replay_round(played.table_id, played.round_id, rec.events, rec.anchor, rec.result,
                          rec.decisions, rec.settlements, rec.wallet, player_id=player)
    return report, rec, reader


def test_a_round_of_many_players_reads_the_wallet_once(platform_kafka, popular):
    played, wallet_of_round, _ = popular
    report, rec, reader = _read(platform_kafka, played)
    assert report.verdict == "MATCH", report.differences[:5]
    assert len(report.bets) == 300 and len({b.player_id for b in report.bets}) == 150
    assert len(rec.wallet) == wallet_of_round
    # each topic's window is read once, not once per player (table.events for the round,
    # table.corrections past its end for corrections after the fact; wallet.operator_calls
    # too, empty in transfer mode)
    assert dict(reader.window_reads) == {topic: 1 for topic in (
        TABLE_EVENTS_TOPIC, TABLE_CORRECTIONS_TOPIC, ROUND_RESULTS_TOPIC, BETS_DECISIONS_TOPIC,
        BETS_SETTLED_TOPIC, WALLET_TRANSACTIONS_TOPIC, WALLET_OPERATOR_CALLS_TOPIC)}
    # one pass over the window: read per player, the 150 players' partitions (4) would
    # have been read 150 times, about 37 times the round's wallet records
    assert reader.records_by_topic[WALLET_TRANSACTIONS_TOPIC] < 2 * wallet_of_round


def test_one_players_replay_reads_only_that_players_partition(platform_kafka, popular):
    played, _, _ = popular
    player = played.players[7]
    report, rec, reader = _read(platform_kafka, played, player)
    assert report.verdict == "MATCH", report.differences[:5]
    assert {b.player_id for b in report.bets} == {player} and len(report.bets) == 2
    assert {tx.player_id for tx in rec.wallet} == {player}
    assert reader.window_reads[WALLET_TRANSACTIONS_TOPIC] == 1


def test_the_neighbouring_rounds_replay_on_their_own(platform_kafka, popular):
    _, _, neighbours = popular
    for played in neighbours:
        report, rec, _ = _read(platform_kafka, played)
        assert report.verdict == "MATCH", report.differences[:5]
        assert len(report.bets) == 40
        assert {tx.round_id for tx in rec.wallet} == {played.round_id}


def test_a_popular_round_replays_from_the_command_line(platform_kafka, popular):
    played, _, _ = popular
    done = croupier(platform_kafka, "replay", "--table", played.table_id, "--round",
                    played.round_id, "--at", played.t0.isoformat(), "--format", "json")
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["verdict"] == "MATCH" and len(report["bets"]) == 300
