"""Recall, statements and the event log from the command line and the operator API, against
the real broker: older rounds only in the archive (directory or s3proxy), the newest only in
the log's tail past the archive's end; one answer covers both."""

from __future__ import annotations

import csv
import io
import json
import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from services.infra.auth import Authenticator
from services.infra.settings import Settings
from shared.topics import TABLE_EVENTS_TOPIC
from tests.archive_builder import round_records
from tests.integration.archive_support import producer
from tests.integration.replay_support import apply_topics, croupier, operator_api_process
from tests.round_builder import RecordedRound

pytestmark = pytest.mark.kafka


def produce(bootstrap: str, rounds: list[RecordedRound]) -> None:
    prod = producer(bootstrap)
    for rec in rounds:
        for topic, key, value, ms in round_records(rec):
            prod.send(topic, key=key.encode(), value=value, timestamp_ms=ms)
    prod.flush()
    prod.close()


@pytest.fixture(scope="module")
def topics(platform_kafka):
    apply_topics(platform_kafka)
    return platform_kafka


@pytest.fixture
def played(topics, archive_url):
    """12 rounds of one player: 8 archived, then 4 more only in the log; the last annulled."""
    run = uuid.uuid4().hex[:6]
    player = f"alice-{run}"
    start = datetime.now(UTC) - timedelta(hours=2)
    rounds = [RecordedRound(table_id=f"Q{run}-{i % 2}", round_id=f"R{run}-{i:02d}",
                            t0=start + timedelta(minutes=5 * i),
                            bets=((f"{run}-{i}-1", player, "banker", 1_000 + i),
                                  (f"{run}-{i}-2", player, "player_pair", 100)))
              for i in range(12)]
    rounds[-1].annul(supervisor="Sari")
    produce(topics, rounds[:8])
    archived = croupier(topics, "archive", "run", "--url", archive_url, "--once")
    assert archived.returncode == 0, archived.stderr[-2000:]
    produce(topics, rounds[8:])
    return player, rounds, {"CROUPIER_ARCHIVE_URL": archive_url}


def test_recall_statement_and_events_from_the_command_line(topics, played):
    player, rounds, env = played
    got = croupier(topics, "recall", "--player", player, "--format", "json", env=env)
    assert got.returncode == 0, got.stderr
    recall = json.loads(got.stdout)["rounds"]
    assert [r["round_id"] for r in recall] == [r.round_id for r in reversed(rounds[2:])]
    assert recall[0]["status"] == "annulled" and recall[1]["status"] == "settled"
    assert recall[-1]["cards"] == list(rounds[2].result.model_dump(mode="json")["cards"])
    assert recall[1]["balance_after"] == [t for t in rounds[10].wallet][-1].balance_after
    text = croupier(topics, "recall", "--player", player, "--limit", "2", env=env)
    assert text.returncode == 0 and "bet banker stake 1011" in text.stdout

    since, until = rounds[6].t0.isoformat(), rounds[10].t0.isoformat()  # rounds 6..9
    csv_out = croupier(topics, "statement", "--player", player, "--from", since, "--to", until,
                       env=env)
    assert csv_out.returncode == 0, csv_out.stderr
    lines = list(csv.DictReader(io.StringIO(csv_out.stdout)))
    expected = [tx.tx_id for r in rounds[6:10] for tx in r.wallet]
    assert [row["tx_id"] for row in lines] == expected  # archived and tail rounds alike
    assert lines[0]["kind"] == "stake_debit" and lines[0]["amount"] == "-1006"
    bad = croupier(topics, "statement", "--player", player, "--from", until, "--to", since,
                   env=env)
    assert bad.returncode == 2 and "is not after its start" in bad.stderr

    events = croupier(topics, "events", "--format", "csv", "--table", rounds[-1].table_id,
                      env=env)
    assert events.returncode == 0, events.stderr
    rows = list(csv.DictReader(io.StringIO(events.stdout)))
    annulled = [r for r in rows if r["kind"] == "round_annulled"]
    assert len(annulled) == 1 and annulled[0]["who"] == "Sari"
    assert annulled[0]["topic"] == TABLE_EVENTS_TOPIC and annulled[0]["offset"].isdigit()
    assert {r["kind"] for r in rows} >= {"round_annulled", "settlement_reversed"}


def test_the_operator_api_serves_recall_statements_and_events(topics, played):
    player, rounds, env = played
    operator = {"Authorization": f"Bearer {Settings().operator_token}"}
    with operator_api_process(topics, env) as url:
        assert httpx.get(f"{url}/players/{player}/rounds").status_code == 401
        players = Authenticator.from_settings(Settings())
        own = {"Authorization": f"Bearer {players.player_token(player)}"}
        mine = httpx.get(f"{url}/players/{player}/rounds", headers=own, timeout=60)
        assert mine.status_code == 200 and len(mine.json()["rounds"]) == 10  # game recall
        other = {"Authorization": f"Bearer {players.player_token('someone-else')}"}
        assert httpx.get(f"{url}/players/{player}/rounds", headers=other).status_code == 403
        assert httpx.get(f"{url}/players/{player}/statement", headers=own).status_code == 403
        recall = httpx.get(f"{url}/players/{player}/rounds", params={"limit": 3},
                           headers=operator, timeout=60)
        assert recall.status_code == 200, recall.text
        assert [r["round_id"] for r in recall.json()["rounds"]] == \
            [r.round_id for r in reversed(rounds[-3:])]
        statement = httpx.get(f"{url}/players/{player}/statement", headers=operator, timeout=60,
                              params={"from": rounds[0].t0.isoformat(),
                                      "to": (rounds[-1].t0 + timedelta(hours=1)).isoformat(),
                                      "format": "csv"})
        assert statement.status_code == 200 and statement.text.startswith("at,tx_id,kind")
        assert len(statement.text.splitlines()) == 1 + sum(len(r.wallet) for r in rounds)
        missing_range = httpx.get(f"{url}/players/{player}/statement", headers=operator)
        assert missing_range.status_code == 422 and "from=TIME" in missing_range.text
        events = httpx.get(f"{url}/events", params={"table": rounds[-1].table_id},
                           headers=operator, timeout=60)
        assert events.status_code == 200
        assert any(e["kind"] == "round_annulled" for e in events.json()["rows"])
        rtp = httpx.get(f"{url}/rtp", params={"format": "csv"}, headers=operator, timeout=60)
        assert rtp.status_code == 200 and rtp.text.startswith("day,table_id,profile")
        assert rounds[0].table_id in rtp.text
