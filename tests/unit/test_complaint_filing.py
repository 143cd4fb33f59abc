"""Issue 31 item 4: the complaint clock is the platform's. A complaint is filed with the
time the platform takes it (a caller's time is refused by name), its 24-hour window judged
then (seed 002), and recorded on `operator.actions`; a late one is refused and nothing is
recorded, unless an allowed override is recorded beside it. The operator API's routes are
walked without a broker: the round's opening and the log's writes are stood in for."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from aiohttp.test_utils import TestClient, TestServer

from services.infra.settings import Settings
from services.operator import complaint_filing
from services.operator.complaints import (
    Complaint,
    ComplaintError,
    complaint_notes,
    complaint_of,
    filed_records,
)
from services.operator.http_api import make_app
from services.operator.replay_service import parse_time
from shared.events.operator_actions import ComplaintFiled, ComplaintWindowOverridden
from shared.events.registry import topic_adapter
from shared.topics import OPERATOR_ACTIONS_TOPIC

T0 = datetime(2026, 11, 30, 8, 30, tzinfo=UTC)
BODY = {"player_id": "alice", "played_at": "2026-11-30T08:31:00Z", "dealer": "Ana",
        "table_id": "T1", "round_id": "R1"}
TOKEN = "op-token-for-tests"
OPERATOR = {"Authorization": f"Bearer {TOKEN}"}


def _complaint(late: timedelta, override: str | None = None) -> Complaint:
    body = {**BODY, **({"override": override} if override else {})}
    return complaint_of(body, T0 + late, parse_time)


@pytest.mark.parametrize("field", ["filed_at", "complaint_at"])
def test_a_time_of_filing_from_the_caller_is_refused_naming_the_field(field):
    with pytest.raises(ComplaintError, match=f"{field} is not taken from the caller") as refused:
        complaint_of({**BODY, field: "2026-11-30T09:00:00Z"}, T0, parse_time)
    assert refused.value.code == "caller_time"


def test_a_complaint_is_filed_at_the_time_it_is_given_and_names_what_is_wrong():
    complaint = _complaint(timedelta(hours=1))
    assert complaint.filed_at == T0 + timedelta(hours=1)
    assert complaint.played_at == datetime(2026, 11, 30, 8, 31, tzinfo=UTC)
    for body, code, words in (
            ({"player_id": "alice"}, "incomplete", "played at, dealer, table id, round id"),
            ({**BODY, "overide": "x"}, "unknown_field", "overide"),
            ({**BODY, "round_id": 7}, "bad_field", "round_id must be a string"),
            ({**BODY, "dealer": "x" * 201}, "bad_field", "dealer has at most 200"),
            ({**BODY, "played_at": "yesterday"}, "bad_time", "played at: bad time"),
            ({**BODY, "table_id": "a/b"}, "bad_id", "not a table id")):
        with pytest.raises(ComplaintError, match=words) as refused:
            complaint_of(body, T0, parse_time)
        assert refused.value.code == code


def test_a_complaint_in_time_is_recorded_within_the_window_and_an_override_reason_unused():
    filed, overridden = filed_records(_complaint(timedelta(hours=23), "not needed"), "c1", T0,
                                      override_allowed=True, operator="operator")
    assert overridden is None
    assert (filed.type, filed.complaint_id, filed.within_window, filed.override) == (
        "complaint_filed", "c1", True, None)
    assert filed.filed_at == T0 + timedelta(hours=23) and filed.round_opened_at == T0
    assert topic_adapter(OPERATOR_ACTIONS_TOPIC).validate_json(filed.model_dump_json()) == filed


def test_seed002_keluhan_a_late_complaint_is_refused_unless_an_allowed_override_is_recorded():
    late = timedelta(hours=25)
    with pytest.raises(ComplaintError, match="akan ditolak") as refused:
        filed_records(_complaint(late), "c2", T0, override_allowed=True, operator="operator")
    assert refused.value.code == "out_of_window"
    with pytest.raises(ComplaintError) as off:
        filed_records(_complaint(late, "regulator asked"), "c2", T0, override_allowed=False,
                      operator="operator")
    assert off.value.code == "override_disabled"
    filed, overridden = filed_records(_complaint(late, "regulator asked"), "c2", T0,
                                      override_allowed=True, operator="operator")
    assert not filed.within_window and filed.override == "regulator asked"
    assert isinstance(overridden, ComplaintWindowOverridden)
    assert overridden.action_id == "c2" and overridden.late_seconds == 25 * 3600
    assert overridden.filed_at == filed.filed_at
    notes = complaint_notes(filed, "Budi")
    assert "25.0 h after the round opened, outside the 24-hour window" in notes[0]
    assert "overridden by operator: regulator asked" in notes[0]
    assert notes[1] == "the complaint names dealer 'Ana'; the log records 'Budi'"


class Log:
    """Stands in for the round's opening in the log and for `operator.actions`."""

    def __init__(self, monkeypatch, opened_ago: timedelta) -> None:
        self.records: list[ComplaintFiled | ComplaintWindowOverridden] = []
        monkeypatch.setattr(complaint_filing, "round_opened_at",
                            lambda *_: datetime.now(UTC) - opened_ago)
        monkeypatch.setattr(complaint_filing, "operator_name", lambda _settings: "operator")
        monkeypatch.setattr(complaint_filing, "record_action", self.record)

    def record(self, _bootstrap, action, _settings) -> tuple[int, int]:
        self.records.append(action)
        return 0, len(self.records) - 1


def _settings(override: bool = False) -> Settings:
    return Settings(env="development", operator_token=TOKEN, wallet_url="http://127.0.0.1:9",
                    late_complaint_override=override)


async def _post(settings: Settings, body, headers=OPERATOR):
    async with TestClient(TestServer(make_app(settings))) as client:
        answer = await client.post("/complaints", json=body, headers=headers)
        return answer.status, await answer.json(), answer.headers.get("Location")


def test_post_complaints_answers_201_with_the_platforms_time_of_filing(monkeypatch):
    log = Log(monkeypatch, timedelta(hours=1))
    before = datetime.now(UTC)
    status, answer, location = asyncio.run(_post(_settings(), BODY))
    after = datetime.now(UTC)
    assert status == 201, answer
    assert set(answer) == {"complaint_id", "filed_at", "within_window", "report_url"}
    assert before <= datetime.fromisoformat(answer["filed_at"]) <= after
    assert answer["within_window"] is True
    assert answer["report_url"] == location == f"/complaints/{answer['complaint_id']}/report"
    [record] = log.records
    assert isinstance(record, ComplaintFiled) and record.complaint_id == answer["complaint_id"]
    assert record.filed_at.isoformat() == answer["filed_at"] and record.player_id == "alice"


def test_post_complaints_refuses_a_callers_time_a_late_complaint_and_strangers(monkeypatch):
    log = Log(monkeypatch, timedelta(hours=25))
    settings = _settings()
    for body, code in (({**BODY, "filed_at": datetime.now(UTC).isoformat()}, "caller_time"),
                       (BODY, "out_of_window"),
                       ({**BODY, "override": "regulator asked"}, "override_disabled"),
                       (["not", "an", "object"], "bad_json")):
        status, answer, _ = asyncio.run(_post(settings, body))
        assert (status, answer["error"]["code"]) == (422, code), answer
    status, answer, _ = asyncio.run(_post(settings, BODY, headers={}))
    assert status == 401
    assert log.records == []  # nothing refused is on the log


def test_post_complaints_files_a_late_one_with_an_allowed_override_recorded_first(monkeypatch):
    log = Log(monkeypatch, timedelta(hours=25))
    status, answer, _ = asyncio.run(_post(_settings(override=True),
                                          {**BODY, "override": "regulator asked"}))
    assert status == 201 and answer["within_window"] is False
    overridden, filed = log.records
    assert isinstance(overridden, ComplaintWindowOverridden)
    assert isinstance(filed, ComplaintFiled) and filed.override == "regulator asked"
    assert overridden.action_id == filed.complaint_id == answer["complaint_id"]


def test_a_rounds_report_no_longer_takes_a_complaint_and_a_complaint_id_is_checked():
    async def walk():
        async with TestClient(TestServer(make_app(_settings()))) as client:
            moved = await client.get("/rounds/T1/R1/report", headers=OPERATOR, params={
                "at": "2026-11-30T08:31:00Z", "complaint_at": "2026-11-30T09:00:00Z"})
            bad = await client.get("/complaints/not-a-complaint/report", headers=OPERATOR)
            return (moved.status, await moved.json()), (bad.status, await bad.json())
    (moved, moved_body), (bad, bad_body) = asyncio.run(walk())
    assert moved == 422 and moved_body["error"]["code"] == "complaint_not_taken_here"
    assert "POST /complaints" in moved_body["error"]["message"]
    assert (bad, bad_body["error"]["code"]) == (422, "bad_id")  # refused before any read
