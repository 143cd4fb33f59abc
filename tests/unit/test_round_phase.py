"""The one fold of a round's phase (shared.round_phase; docs/decisions/round-phase.md)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, get_args

import pytest

from shared.cards import parse_card
from shared.events.table import (
    TABLE_EVENT_TYPES,
    BettingClosed,
    CardBurned,
    CardDealt,
    CorrectionReason,
    CutCardReached,
    MisdealCorrected,
    RoundAnnulled,
    RoundCompleted,
    RoundCorrected,
    RoundOpened,
    RoundRedealt,
    RoundStalled,
    RoundVoided,
    ShoeEnded,
    ShoeStartBurned,
    ShoeStarted,
    SurplusCardRecorded,
    TableClosed,
    TableEventBase,
    TableReopened,
    TwoCardsDrawn,
    VoidReason,
    seal,
)
from shared.round_phase import (
    PHASE_EVENT_TYPES,
    ROUND_PHASES,
    RoundPhase,
    accepts_bets,
    betting_status,
    has_result,
    in_progress,
    is_final,
    phase_after,
    phase_after_type,
    phase_of_betting_status,
    phases_of,
)

AT = datetime(2026, 1, 1, 12, tzinfo=UTC)
WHO = {"reason_text": "why", "supervisor": "sup"}
FIELDS: dict[type[TableEventBase], dict[str, Any]] = {
    ShoeStarted: {"shoe_id": "S1", "profile": "sbo-baccarat", "decks": 8},
    ShoeStartBurned: {"shoe_id": "S1", "first_card": parse_card("5H"), "burn_count": 5},
    CardBurned: {"shoe_id": "S1", "round_id": "R1", "shoe_position": 3},
    CutCardReached: {"shoe_id": "S1", "round_id": "R1"},
    ShoeEnded: {"shoe_id": "S1", "reason": "done"},
    RoundOpened: {"shoe_id": "S1", "round_id": "R1", "round_number": 1, "dealer": "Ana",
                  "profile": "sbo-baccarat", "betting_closes_at": AT + timedelta(seconds=30)},
    BettingClosed: {"round_id": "R1", "reason": "timer"},
    CardDealt: {"round_id": "R1", "card": parse_card("9S"), "shoe_position": 4,
                "round_position": 0},
    SurplusCardRecorded: {"round_id": "R1", "card": parse_card("9S"), "shoe_position": 9},
    RoundCompleted: {"round_id": "R1", "cards": tuple(map(parse_card, ("9S", "2H", "KD", "5C")))},
    RoundVoided: {"round_id": "R1", "reason_code": VoidReason.CARD_DROPPED, **WHO},
    RoundAnnulled: {"round_id": "R1", "reason_code": VoidReason.MANAGEMENT_DECISION, **WHO},
    RoundRedealt: {"round_id": "R1", "set_aside": (), **WHO},
    MisdealCorrected: {"round_id": "R1", **WHO},
    RoundCorrected: {"round_id": "R1", "shoe_id": "S1", "profile": "sbo-baccarat",
                     "dealer": "Ana", "cards": tuple(map(parse_card, ("9S", "2H", "KD", "6C"))),
                     "replaced_cards": tuple(map(parse_card, ("9S", "2H", "KD", "5C"))),
                     "correction": 1, "reason_code": CorrectionReason.MIS_SCAN, **WHO},
    TableClosed: {"reason_code": VoidReason.SYSTEM_FAILURE, **WHO},
    TableReopened: WHO,
    RoundStalled: {"round_id": "R1", "last_input_at": AT, "quiet_seconds": 60},
    TwoCardsDrawn: {"round_id": "R1", **WHO},
}


def event(kind: type[TableEventBase]) -> TableEventBase:
    return seal(kind, table_id="T1", seq=1, prev_hash="0" * 64, occurred_at=AT, **FIELDS[kind])


def fold(*kinds: type[TableEventBase]) -> RoundPhase | None:
    phase: RoundPhase | None = None
    for kind in kinds:
        phase = phase_after(phase, event(kind))
    return phase


def test_every_table_event_kind_is_covered_here():
    assert set(FIELDS) == set(TABLE_EVENT_TYPES)


def test_the_order_betting_dealing_completed():
    assert fold(RoundOpened) == "betting"
    assert fold(RoundOpened, BettingClosed) == "dealing"
    assert fold(RoundOpened, BettingClosed, CardDealt, CardDealt, RoundCompleted) == "completed"


def test_a_round_is_voided_from_betting_or_dealing():
    assert fold(RoundOpened, RoundVoided) == "voided"
    assert fold(RoundOpened, BettingClosed, CardDealt, RoundVoided) == "voided"


def test_a_completed_round_is_annulled_and_stays_so():
    assert fold(RoundOpened, BettingClosed, RoundCompleted, RoundAnnulled) == "annulled"
    assert fold(RoundOpened, BettingClosed, RoundCompleted, RoundAnnulled, RoundVoided,
                RoundCorrected) == "annulled"


def test_a_correction_leaves_a_completed_round_completed():
    assert fold(RoundOpened, BettingClosed, RoundCompleted, RoundCorrected) == "completed"


@pytest.mark.parametrize(("before", "kind"), [
    ("completed", RoundVoided),  # a completed round is annulled, not voided
    ("voided", RoundCompleted), ("voided", RoundAnnulled), ("voided", BettingClosed),
    ("betting", RoundAnnulled), ("dealing", RoundAnnulled),  # only a completed round
    ("dealing", BettingClosed), ("completed", RoundOpened), ("annulled", RoundCompleted),
])
def test_an_event_that_does_not_apply_leaves_the_phase(before: RoundPhase, kind):
    assert phase_after(before, event(kind)) == before


@pytest.mark.parametrize("kind", sorted(set(TABLE_EVENT_TYPES) - {
    RoundOpened, BettingClosed, RoundCompleted, RoundVoided, RoundAnnulled}, key=str))
def test_every_other_event_leaves_every_phase(kind):
    for phase in (None, *ROUND_PHASES):
        assert phase_after(phase, event(kind)) == phase


def test_a_fold_that_begins_mid_story_takes_the_events_word():
    assert [phase_after_type(None, t) for t in ("betting_closed", "round_completed",
                                                "round_voided", "round_annulled")] == [
        "dealing", "completed", "voided", "annulled"]
    assert PHASE_EVENT_TYPES == {"round_opened", "betting_closed", "round_completed",
                                 "round_voided", "round_annulled"}


def test_the_helpers():
    assert [p for p in ROUND_PHASES if in_progress(p)] == ["betting", "dealing"]
    assert [p for p in ROUND_PHASES if accepts_bets(p)] == ["betting"]
    assert [p for p in ROUND_PHASES if has_result(p)] == ["completed", "annulled"]
    assert [p for p in ROUND_PHASES if is_final(p)] == ["voided", "annulled"]
    assert not any(f(None) for f in (in_progress, accepts_bets, has_result, is_final))


def test_the_wallets_public_words_and_back():
    assert [betting_status(p) for p in ROUND_PHASES] == [
        "open", "closed", "completed", "voided", "annulled"]
    assert [phase_of_betting_status(betting_status(p)) for p in ROUND_PHASES] == list(
        ROUND_PHASES)
    assert phase_of_betting_status(None) is None and phase_of_betting_status("x") is None


def test_each_services_own_persisted_status_maps_to_phases():
    from shared.events.evaluation_log import RoundView
    from shared.events.settlement_log import Status

    for status in get_args(RoundView.model_fields["status"].annotation):
        assert phases_of(status, "evaluation") <= set(ROUND_PHASES)
    assert phases_of("open", "evaluation") == {"betting", "dealing"}
    for status in get_args(Status):
        assert phases_of(status, "settlement") <= set(ROUND_PHASES)
    assert phases_of("pending", "settlement") == frozenset()
    assert phases_of("settled", "settlement") == {"completed"}
