"""Issue 31 item 4 against a real broker: a complaint is filed (`POST /complaints`, `croupier
complaint file`) with the platform's clock, recorded on `operator.actions`, and its report
opens by its id; a caller's time is refused, and a complaint outside seed 002's 24-hour
window is refused unless the operator setting allows an override, which is recorded.

The module has its own broker (`platform_kafka`): its late round is stamped 25 hours ago, so
it goes on the log first, before the round played now (a window read by time stops at the
first record stamped past it)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from services.infra.log_reader import read_to_end
from services.infra.settings import Settings
from shared.topics import OPERATOR_ACTIONS_TOPIC
from tests.integration.replay_support import (
    apply_topics,
    croupier,
    operator_api_process,
    produce_rounds,
    record_round_among_others,
)
from tests.round_builder import RecordedRound

pytestmark = pytest.mark.kafka

OVERRIDE_ON = {"CROUPIER_LATE_COMPLAINT_OVERRIDE": "true"}


@pytest.fixture(scope="module")
def rounds(platform_kafka):
    """(a round played 25 hours ago, a round played now)."""
    apply_topics(platform_kafka)
    run = uuid.uuid4().hex[:6]
    late = RecordedRound(table_id=f"L{run}", round_id=f"R-{run}",
                         t0=datetime.now(UTC) - timedelta(hours=25),
                         bets=((f"l1-{run}", f"carol-{run}", "banker", 1_000),))
    produce_rounds(platform_kafka, [late])
    return late, record_round_among_others(platform_kafka)


def complaint_args(rec: RecordedRound, player: str, *extra: str) -> list[str]:
    return ["complaint", "file", "--player", player, "--played-at", rec.t0.isoformat(),
            "--dealer", "Ana", "--table", rec.table_id, "--round", rec.round_id, *extra]


def body_of(rec: RecordedRound, player: str, **extra: str) -> dict[str, str]:
    return {"player_id": player, "played_at": rec.t0.isoformat(), "dealer": "Ana",
            "table_id": rec.table_id, "round_id": rec.round_id, **extra}


def filed_records(bootstrap: str) -> dict[str, dict]:
    """Every `complaint_filed` record on operator.actions, by complaint id."""
    values = (json.loads(r.value) for r in read_to_end(bootstrap, OPERATOR_ACTIONS_TOPIC))
    return {v["complaint_id"]: v for v in values if v["type"] == "complaint_filed"}


def test_a_complaint_filed_from_the_command_line_is_stamped_by_the_platform_and_replays_by_id(
        platform_kafka, rounds):
    _, now_round = rounds
    player = f"bob-{now_round.table_id[1:]}"
    before = datetime.now(UTC)
    done = croupier(platform_kafka, *complaint_args(now_round, player, "--json"))
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert before <= datetime.fromisoformat(answer["filed_at"]) <= datetime.now(UTC)
    assert answer["within_window"] is True
    record = filed_records(platform_kafka)[answer["complaint_id"]]
    assert datetime.fromisoformat(record["filed_at"]) == datetime.fromisoformat(answer["filed_at"])
    assert (record["table_id"], record["round_id"], record["player_id"]) == (
        now_round.table_id, now_round.round_id, player)
    replayed = croupier(platform_kafka, "replay", "--complaint", answer["complaint_id"])
    assert replayed.returncode == 0, replayed.stderr
    assert "VERDICT: MATCH" in replayed.stdout
    assert f"complaint {answer['complaint_id']} by player {player} filed" in replayed.stdout
    assert "within the 24-hour window" in replayed.stdout
    # no complaint time is taken by the replay any more, and a complaint names its own round
    old = croupier(platform_kafka, "replay", "--table", now_round.table_id, "--round",
                   now_round.round_id, "--at", now_round.t0.isoformat(), "--complaint-at",
                   datetime.now(UTC).isoformat())
    assert old.returncode == 2 and "--complaint-at" in old.stderr
    mixed = croupier(platform_kafka, "replay", "--complaint", answer["complaint_id"],
                     "--table", now_round.table_id)
    assert mixed.returncode == 2 and "drop --table" in mixed.stderr


def test_seed002_keluhan_a_late_complaint_is_refused_and_its_override_recorded_where_allowed(
        platform_kafka, rounds):
    """Seed 002: "Keluhan apapun yang diajukan setelah periode waktu tersebut akan ditolak".
    Filed now about a round 25 hours old, a complaint is refused (nothing recorded); the
    override is refused unless CROUPIER_LATE_COMPLAINT_OVERRIDE is set; each use is on
    operator.actions beside the complaint and in the significant-event log, as is each complaint."""
    late, _ = rounds
    player = f"carol-{late.table_id[1:]}"
    already = set(filed_records(platform_kafka))
    refused = croupier(platform_kafka, *complaint_args(late, player))
    assert refused.returncode == 2 and "24-hour" in refused.stderr
    assert "akan ditolak" in refused.stderr  # seed 002's rule, named
    overriding = complaint_args(late, player, "--override", "regulator asked")
    off = croupier(platform_kafka, *overriding, env={"CROUPIER_LATE_COMPLAINT_OVERRIDE": "false"})
    assert off.returncode == 2 and "CROUPIER_LATE_COMPLAINT_OVERRIDE" in off.stderr, off.stderr
    assert set(filed_records(platform_kafka)) == already  # nothing refused was recorded
    ids = []
    for _ in range(2):  # every use is recorded, not the first only
        on = croupier(platform_kafka, *overriding, env=OVERRIDE_ON)
        assert on.returncode == 0, on.stderr
        assert "outside the 24-hour window, overridden: regulator asked" in on.stdout
        assert "its override at operator.actions[" in on.stdout
        ids.append(on.stdout.split()[1])
    assert {i: filed_records(platform_kafka)[i]["within_window"] for i in ids} == dict.fromkeys(
        ids, False)
    listed = croupier(platform_kafka, "events", "--table", late.table_id, "--format", "json")
    assert listed.returncode == 0, listed.stderr
    uses = [e for e in json.loads(listed.stdout) if e["kind"] == "complaint_window_overridden"]
    assert len(uses) == 2 and {e["round_id"] for e in uses} == {late.round_id}
    assert all(e["who"] and e["why"].startswith("regulator asked (complaint of carol-")
               and e["topic"] == OPERATOR_ACTIONS_TOPIC for e in uses)
    # and every complaint itself, each under its id, late ones saying so
    filed = {e["why"].split()[1]: e for e in json.loads(listed.stdout)
             if e["kind"] == "complaint_filed"}
    assert set(ids) <= set(filed), filed
    assert all(filed[i]["round_id"] == late.round_id and filed[i]["who"]
               and filed[i]["topic"] == OPERATOR_ACTIONS_TOPIC
               and f"of {player}" in filed[i]["why"]
               and "late, overridden: regulator asked" in filed[i]["why"] for i in ids)
    # its report opens by its id with the setting off again: judged once, when it was filed
    replayed = croupier(platform_kafka, "replay", "--complaint", ids[0],
                        env={"CROUPIER_LATE_COMPLAINT_OVERRIDE": "false"})
    assert replayed.returncode == 0, replayed.stderr
    assert "overridden by operator: regulator asked" in replayed.stdout
    assert "VERDICT: MATCH" in replayed.stdout


@pytest.fixture(scope="module")
def operator_api(platform_kafka):
    with operator_api_process(platform_kafka) as url:
        yield url


def test_post_complaints_files_on_the_platforms_clock_and_its_report_url_opens_the_report(
        platform_kafka, rounds, operator_api):
    late, now_round = rounds
    operator = {"Authorization": f"Bearer {Settings().operator_token}"}
    player = f"alice-{now_round.table_id[1:]}"
    body = body_of(now_round, player)

    def post(payload: dict, headers: dict = operator) -> httpx.Response:
        return httpx.post(f"{operator_api}/complaints", json=payload, headers=headers, timeout=60)

    assert post(body, {}).status_code == 401
    back_dated = post({**body, "filed_at": now_round.t0.isoformat()})
    assert back_dated.status_code == 422
    assert back_dated.json()["error"]["code"] == "caller_time"
    assert "filed_at" in back_dated.json()["error"]["message"]
    before = datetime.now(UTC)
    filed = post(body)
    assert filed.status_code == 201, filed.text
    answer = filed.json()
    assert before <= datetime.fromisoformat(answer["filed_at"]) <= datetime.now(UTC)
    assert answer["within_window"] is True
    assert answer["report_url"] == f"/complaints/{answer['complaint_id']}/report"
    assert filed_records(platform_kafka)[answer["complaint_id"]]["player_id"] == player
    report = httpx.get(f"{operator_api}{answer['report_url']}", params={"format": "json"},
                       headers=operator, timeout=60)
    assert report.status_code == 200, report.text[:300]
    assert report.json()["verdict"] == "MATCH"
    assert report.headers["X-Croupier-Verdict"] == "MATCH"
    assert {b["player_id"] for b in report.json()["bets"]} == {player}
    text = httpx.get(f"{operator_api}{answer['report_url']}", headers=operator, timeout=60)
    assert "(the platform's clock)" in text.text and "within the 24-hour window" in text.text
    # a late complaint without the override: refused, nothing recorded
    already = set(filed_records(platform_kafka))
    too_late = post(body_of(late, f"carol-{late.table_id[1:]}"))
    assert too_late.status_code == 422 and too_late.json()["error"]["code"] == "out_of_window"
    assert set(filed_records(platform_kafka)) == already
    unknown = post({**body, "round_id": "no-such-round"})
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "unknown_round"
    nobody = httpx.get(f"{operator_api}/complaints/{'0' * 32}/report", headers=operator,
                       timeout=60)
    assert nobody.status_code == 404 and nobody.json()["error"]["code"] == "unknown_complaint"
