"""bet-settlement's round logic: accept while open, manifest on close, settle or refund once."""

from datetime import timedelta

from croupier.services.bet_settlement import round_book
from croupier.shared.events.bet_events import IntakeMark, manifest_digest
from croupier.shared.events.table import BettingClosed, RoundVoided
from croupier.shared.profile import load_profile
from croupier.shared.settlement import Bet, settle
from tests.unit.round_book_support import (
    NOW,
    PROFILE,
    event,
    kinds,
    open_round,
    opened,
    placed,
    result,
)


def test_accepts_valid_bets_while_open_and_rejects_the_rest_by_name():
    state = open_round()
    out = []
    for bet in [placed("a"), placed("b", bet="big"), placed("c", stake=1),
                placed("d", position=1)]:
        state, more = round_book.on_bet(state, bet, NOW)
        out += more
    assert kinds(out) == ["BetAccepted", "BetRejected:bet_not_offered",
                          "BetRejected:below_minimum", "BetRejected:bad_position"]
    assert list(state.accepted) == ["a"]


def test_redelivered_bet_gets_the_same_decision_and_a_clashing_id_is_rejected():
    state, first = round_book.on_bet(open_round(), placed("a"), NOW)
    again_state, again = round_book.on_bet(state, placed("a"), NOW + timedelta(seconds=5))
    assert again == first and again_state == state
    _, clash = round_book.on_bet(state, placed("a", player="p2"), NOW)
    assert kinds(clash) == ["BetRejected:duplicate_bet_id"]


def mark(partitions=(0,), count=1, round_id="R1"):
    return IntakeMark(table_id="T1", round_id=round_id, partitions=partitions,
                      partition_count=count, worker="w0", through=NOW + timedelta(seconds=31))


def test_close_writes_the_manifest_once_and_late_bets_are_rejected():
    state, _ = round_book.on_bet(open_round(), placed("a"), NOW)
    state, _ = round_book.on_bet(state, placed("b", stake=3000), NOW)
    closing, out = round_book.on_table_event(state, event(BettingClosed, 2, reason="timer"), NOW)
    assert out == [] and closing.status == "closing"  # waits for the wallet's marks
    closing, out = round_book.on_mark(closing, mark((0,), 2), NOW)
    assert out == [] and closing.header.covered == (0,)
    closed_state, out = round_book.on_mark(closing, mark((1,), 2), NOW)
    manifest = out[0][2]
    assert (manifest.bet_count, manifest.total_stake) == (2, 5000)
    assert manifest.digest == manifest_digest(["b", "a"]) == closed_state.header.digest
    assert closed_state.manifest == manifest and closed_state.header.received == 2
    _, again = round_book.on_table_event(closed_state, event(BettingClosed, 2, reason="timer"), NOW)
    assert again == out
    _, again = round_book.on_mark(closed_state, mark((1,), 2), NOW)
    assert again == out
    _, late = round_book.on_bet(closed_state, placed("late"), NOW)
    assert kinds(late) == ["BetRejected:round_closed"]


def test_result_settles_every_accepted_bet_by_the_rule_engine_once():
    state = open_round()
    for bet_id, bet in [("a", "player"), ("b", "banker"), ("c", "tie")]:
        state, _ = round_book.on_bet(state, placed(bet_id, bet=bet), NOW)
    published = result()
    settled_state, out = round_book.on_result(state, published, NOW)
    assert kinds(out) == ["RoundManifest"] + ["BetSettled"] * 3  # the result closed it
    for _, _, s in out[1:]:
        expected = settle(Bet(bet=s.bet, stake=s.stake), published.result,
                          load_profile(PROFILE))
        assert (s.outcome, s.returned, s.settlement_id) == (
            expected.outcome, expected.returned, f"settle:{s.bet_id}")
    _, again = round_book.on_result(settled_state, published, NOW)
    assert again == out[1:]
    _, void_after = round_book.on_table_event(
        settled_state, event(RoundVoided, 5, reason_code="misdeal", reason_text="x",
                             supervisor="S"), NOW)
    assert void_after == out[1:]  # re-published, never refunded on top


def test_void_refunds_every_accepted_bet_in_full():
    state, _ = round_book.on_bet(open_round(), placed("a", stake=4000), NOW)
    voided, out = round_book.on_table_event(
        state, event(RoundVoided, 3, reason_code="misdeal", reason_text="x", supervisor="S"), NOW)
    assert [(r.outcome, r.returned) for _, _, r in out] == [("void_refund", 4000)]
    _, after = round_book.on_result(voided, result(), NOW)
    assert after == out


def test_a_bet_before_its_round_opened_waits_then_is_decided_or_expires():
    state, out = round_book.on_bet(None, placed("early"), NOW)
    assert out == [] and state.status == "pending"
    opened_state, out = round_book.on_table_event(state, opened(), NOW)
    assert kinds(out) == ["BetAccepted"] and opened_state.pending == []
    assert opened_state.entry("early").decision == out[0][2]  # kept under the bet's own key
    lost, _ = round_book.on_bet(None, placed("lost", round_id="R0"), NOW)
    expired, out = round_book.expire_pending(lost, NOW)
    assert kinds(out) == ["BetRejected:unknown_round"] and expired.status == "unknown"
