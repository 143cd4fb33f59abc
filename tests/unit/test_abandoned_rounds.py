"""Rounds left hanging (issue 31): a round with no input is stalled, then voided by the
platform itself (`round_abandoned`), once, whatever a worker's wall clock says; an input for
it afterwards is refused by that name."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from pydantic import ValidationError

from services.dealer_event.state import TableState, fold_into
from services.dealer_event.table_machine import BY_THE_RULES, watch
from services.infra.settings import Settings
from shared.cards import parse_card
from shared.events.inputs import (
    CloseTable,
    OpenRound,
    ScanCard,
    VoidRound,
)
from shared.events.table import VoidReason
from tests.unit.table_machine_support import Table, types

STALL, ABANDON = timedelta(seconds=300), timedelta(seconds=3600)
FOREVER = timedelta(days=365)  # a worker that has watched the table for ever


@pytest.fixture
def dealt() -> Table:
    """Round R1 with betting closed and two cards dealt, then the device went silent."""
    t = Table()
    t.config = replace(t.config, stall_after=STALL, abandon_after=ABANDON)
    t.shoe("sbo-baccarat")
    t.ok(OpenRound, round_id="R1", dealer="Ayu")
    t.close("R1")
    t.ok(ScanCard, round_id="R1", card=parse_card("9S"))
    t.ok(ScanCard, round_id="R1", card=parse_card("2H"))
    return t


def watched(t: Table, seconds: float, quiet: timedelta = FOREVER):
    t.clock.advance(seconds)
    outcome = watch(t.state, t.clock.now(), quiet, t.config)
    t.state = outcome.state
    t.events.extend(outcome.events)
    return outcome.events


def test_a_silent_round_is_stalled_once_then_voided_by_the_platform(dealt):
    assert watched(dealt, 299) == ()
    stalled = watched(dealt, 1)
    assert types(stalled) == ["round_stalled"]
    assert stalled[0].round_id == "R1" and stalled[0].quiet_seconds == 300
    assert watched(dealt, 1000) == (), "raised once per round"
    voided = watched(dealt, 3600 - 1301)
    assert voided == (), "an hour from the last input, not from the stall"
    voided = watched(dealt, 1)
    assert types(voided) == ["round_voided"]
    assert voided[0].reason_code == VoidReason.ROUND_ABANDONED
    assert voided[0].supervisor == BY_THE_RULES and voided[0].input_id is None
    assert watched(dealt, 3600) == (), "a voided round is not voided again"


def test_an_input_after_the_abandonment_is_refused_by_name_and_the_table_plays_on(dealt):
    watched(dealt, 3600)
    assert dealt.refused(ScanCard, round_id="R1", card=parse_card("KD")) == "round_abandoned"
    assert dealt.refused(VoidRound, round_id="R1", reason_code="misdeal",
                         reason_text="late") == "round_abandoned"
    assert types(dealt.ok(OpenRound, round_id="R2", dealer="Ayu")) == ["round_opened"]


def test_each_input_starts_the_wait_again(dealt):
    assert types(watched(dealt, 3000)) == ["round_stalled"]
    dealt.ok(ScanCard, round_id="R1", card=parse_card("KD"))  # the device is back
    assert watched(dealt, 3599) == (), "stalled once per round; an hour from the last input"
    assert types(watched(dealt, 1)) == ["round_voided"]


def test_a_worker_whose_wall_clock_jumps_ahead_abandons_nothing_it_has_not_watched(dealt):
    """The wall clock reset two hours ahead: by `now` the round waited two hours, but the
    worker watched it only 10 s (its monotonic clock): nothing is decided."""
    dealt.clock.reset_to(dealt.clock.now() + timedelta(hours=2))
    assert watched(dealt, 10, quiet=timedelta(seconds=10)) == ()
    assert types(watched(dealt, 0, quiet=ABANDON)) == ["round_voided"]


def test_the_fold_of_the_log_remembers_the_stall_and_the_abandonment(dealt):
    watched(dealt, 300)
    rebuilt = TableState("T1")
    for event in dealt.events:
        fold_into(rebuilt, event)
    assert rebuilt.round.stalled and rebuilt.round.last_input_at == dealt.state.round.last_input_at
    assert watched(dealt, 0) == () and watch(rebuilt, dealt.clock.now(), FOREVER,
                                             dealt.config).events == ()
    watched(dealt, 3300)
    rebuilt = TableState("T1")
    for event in dealt.events:
        fold_into(rebuilt, event)
    assert rebuilt.round.abandoned
    assert watch(rebuilt, dealt.clock.now() + ABANDON, FOREVER, dealt.config).events == ()


def test_no_input_may_name_the_platforms_reason():
    t = Table()
    for command, fields in ((VoidRound, {"round_id": "R1"}), (CloseTable, {})):
        with pytest.raises(ValidationError, match="platform's own"):
            t.make.make(command, reason_code="round_abandoned", reason_text="x", **fields)


def test_abandonment_must_come_after_the_stall():
    with pytest.raises(ValidationError, match="must be more than"):
        Settings(round_stall_seconds=600, round_abandon_seconds=300)
