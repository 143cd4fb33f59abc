"""Issue 11 finding 9, the operator's side: times that name no possible round and
complaints dated before their round are refused with a named problem, never a 500."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from services.operator.complaints import ComplaintError, check_window, complaint_from
from services.operator.replay_service import ReplayRequest, parse_time

T0 = datetime(2026, 11, 30, 8, 30, tzinfo=UTC)
FIELDS = {"player_id": "alice", "played_at": T0, "dealer": "Ana", "table_id": "T1",
          "round_id": "R1"}


@pytest.mark.parametrize("text", ["0001-01-01T00:00:00Z", "1999-12-31T23:59:59Z",
                                  "9999-12-31T23:59:59Z", "2126-01-01T00:00:00+14:00",
                                  "2027-06-01T00:00:00Z"])
def test_a_time_no_round_can_have_is_refused_by_name(text):
    with pytest.raises(ValueError, match="out of range"):
        parse_time(text)
    with pytest.raises(ValueError, match="out of range"):
        ReplayRequest.from_text("T1", "R1", text)


def test_an_ordinary_time_still_parses():
    assert parse_time("2026-11-30T08:30:00Z") == T0
    assert parse_time("2026-11-30T08:30:00") == T0


def test_a_complaint_filed_before_its_round_is_refused_even_with_an_override():
    for override in (None, "regulator"):
        complaint = complaint_from(FIELDS, T0 - timedelta(minutes=5), override=override)
        with pytest.raises(ComplaintError, match="before its round") as refused:
            check_window(complaint, T0)
        assert refused.value.code == "before_round"
    assert check_window(complaint_from(FIELDS, T0), T0) is None
