"""The books folded from the log, and each money invariant catching what it must."""

from __future__ import annotations

import pytest

from services.operator.audit import audit
from shared.events.bet_events import (
    BetSettled,
    SettlementReversed,
    annul_refund_id,
    reversal_id,
)
from tests.unit.audit_support import NOW, PROFILE, Ledger


@pytest.fixture
def ledger() -> Ledger:
    book = Ledger()
    book.move("alice", "deposit", 100_000, "dep-1")
    book.move("bob", "deposit", 50_000, "dep-2")
    book.settle(book.bet("alice", "b1", "banker", 1_000))
    book.settle(book.bet("alice", "b2", "fortune_six", 100))
    book.settle(book.bet("bob", "b3", "player", 2_000))
    book.reject(book.bet("bob", "b4", "tie", 1_000))
    return book


def test_a_correct_log_passes_every_invariant(ledger):
    report = audit(ledger.books, allow_pending=False)
    assert report.invariants_ok, [c for c in report.invariants if not c.ok]
    assert (report.bets, report.settled, report.rejected, report.rounds) == (4, 3, 1, 1)
    assert report.stake == 4_100 and report.refunds == 1_000
    assert report.payout == 1_950 + 1_300
    assert report.house_result == 4_100 - 3_250 - 1_000 == (3_100 - 3_250)
    assert report.balances == {"alice": 100_000 - 1_100 + 3_250, "bob": 50_000 - 2_000}


def test_redelivered_records_count_once(ledger):
    for record in list(ledger.books.txs.values()) + list(ledger.books.settled.values()):
        ledger.books.add(record)
    assert audit(ledger.books).invariants_ok


def test_a_wrong_settlement_amount_is_caught(ledger):
    wrong = ledger.books.settled[("alice", "b1")].model_copy(update={"returned": 2_000})
    ledger.books.settled[("alice", "b1")] = wrong
    failed = {c.name for c in audit(ledger.books).invariants if not c.ok}
    assert "every settlement equals the rule engine's" in failed


def test_money_moved_twice_is_caught(ledger):
    ledger.move("alice", "payout", 1_950, "settle:b1-again")
    key = ("alice", "payout:settle:b1-again")
    ledger.books.txs[key] = ledger.books.txs.pop(key).model_copy(update={"cause_id": "settle:b1"})
    failed = {c.name for c in audit(ledger.books).invariants if not c.ok}
    assert "the wallet moved each bet's money exactly once" in failed


def test_a_balance_that_does_not_add_up_is_caught(ledger):
    last = ledger.books.ledger["bob"][-1]
    ledger.books.ledger["bob"][-1] = last.model_copy(update={"balance_after": last.balance_after + 1})
    failed = {c.name for c in audit(ledger.books).invariants if not c.ok}
    assert any(name.startswith("per player") for name in failed)


def test_a_bet_without_an_end_is_pending_or_a_breach(ledger):
    ledger.bet("bob", "b5", "player", 500)
    assert audit(ledger.books, allow_pending=True).invariants_ok
    assert audit(ledger.books, allow_pending=True).pending == 1
    assert not audit(ledger.books, allow_pending=False).invariants_ok


def test_a_conflicting_redelivery_is_reported(ledger):
    ledger.books.add(ledger.books.settled[("bob", "b3")].model_copy(update={"returned": 1}))
    assert not audit(ledger.books).invariants_ok


def test_realised_rtp_is_reported_per_profile_and_bet(ledger):
    rows = {(r.profile, r.bet): r for r in audit(ledger.books).returns}
    banker = rows[(PROFILE, "banker")]
    assert banker.stake == 1_000 and banker.returned == 1_950
    assert banker.realised_rtp == 1.95 and 0.98 < banker.exact_rtp < 0.99
    assert banker.z_score is not None and banker.z_score > 0


# --- issue 12 item 8: a management void after completion (RoundAnnulled) -------------------

def _annul(book: Ledger, bet_id: str, refund_cause: str = "settlement", reverse: bool = True,
           refund: bool = True) -> None:
    """What bet-settlement and the wallet write when a settled round is annulled: the
    settlement reversed (the wallet takes its return back), then the stake refunded."""
    original = next(s for (_, bet), s in book.books.settled.items() if bet == bet_id)
    facts = original.model_dump(include={"bet_id", "player_id", "table_id", "round_id", "bet",
                                         "position", "stake", "currency"})
    if reverse:
        reversal = SettlementReversed(
            **facts, reversal_id=reversal_id(original.settlement_id),
            settlement_id=original.settlement_id, original_outcome=original.outcome,
            amount=original.returned, reason_code="card_exposed", reason_text="exposed card",
            supervisor="Sari", cause="annul:T1:R1", reversed_at=NOW)
        book.books.add(reversal)
        if reversal.amount:
            book.move(original.player_id, "payout_reversal", reversal.amount, reversal.reversal_id)
    if refund:
        record = BetSettled(**facts, settlement_id=annul_refund_id(bet_id), outcome="void_refund",
                            returned=original.stake, cause="annul:T1:R1", settled_at=NOW)
        book.books.add(record)
        book.move(original.player_id, "bet_refund", record.returned,
                  record.settlement_id if refund_cause == "settlement" else bet_id)


@pytest.mark.parametrize("refund_cause", ["settlement", "bet"])
def test_issue12_item8_an_annulled_round_reverses_then_refunds_and_the_books_hold(ledger,
                                                                                refund_cause):
    for bet_id in ("b1", "b2", "b3"):  # all of round R1: b1 won 1,950, b2 won 1,300, b3 lost
        _annul(ledger, bet_id, refund_cause)
    report = audit(ledger.books, allow_pending=False)
    assert report.invariants_ok, [c for c in report.invariants if not c.ok]
    assert (report.settled, report.annulled, report.rejected, report.pending) == (0, 3, 1, 0)
    assert report.reversals == 1_950 + 1_300
    # the annulled round's bets cost nobody anything: stakes refunded, payouts taken back
    assert report.house_result == 0
    assert report.balances == {"alice": 100_000, "bob": 50_000}
    assert report.returns == []  # an annulled round's bets do not count in the realised RTP


def test_issue12_item8_a_refund_without_a_reversal_is_money_paid_twice(ledger):
    _annul(ledger, "b1", reverse=False)
    failed = {c.name for c in audit(ledger.books).invariants if not c.ok}
    assert "every bet ends in exactly one of rejected, settled, voided" in failed


def test_issue12_item8_a_reversal_without_its_refund_is_pending(ledger):
    _annul(ledger, "b1", refund=False)
    assert audit(ledger.books, allow_pending=True).invariants_ok
    assert audit(ledger.books, allow_pending=True).pending == 1
    assert not audit(ledger.books, allow_pending=False).invariants_ok


def test_issue12_item8_a_reversal_of_the_wrong_amount_or_taken_twice_is_caught(ledger):
    _annul(ledger, "b1")
    wrong = ledger.books.reversals[("alice", "b1")].model_copy(update={"amount": 1_000})
    ledger.books.reversals[("alice", "b1")] = wrong
    failed = {c.name for c in audit(ledger.books).invariants if not c.ok}
    assert "every settlement equals the rule engine's" in failed
    assert "the wallet moved each bet's money exactly once" in failed

    again = Ledger()
    again.move("alice", "deposit", 100_000, "dep-1")
    again.settle(again.bet("alice", "b1", "banker", 1_000))
    _annul(again, "b1")
    again.move("alice", "payout_reversal", 1_950, "reverse:settle:b1-again")
    tx = again.books.txs.pop(("alice", "payout_reversal:reverse:settle:b1-again"))
    again.books.txs[("alice", tx.tx_id)] = tx.model_copy(update={"cause_id": "reverse:settle:b1"})
    failed = {c.name for c in audit(again.books).invariants if not c.ok}
    assert "the wallet moved each bet's money exactly once" in failed


def test_issue12_item8_a_reversal_may_leave_a_balance_negative_a_stake_may_not():
    book = Ledger()
    book.move("alice", "deposit", 1_000, "dep-1")
    book.settle(book.bet("alice", "b1", "banker", 1_000))  # wins: balance 1,950
    book.move("alice", "withdrawal", 1_950, "wd-1")        # withdraws it all
    _annul(book, "b1")                                     # -1,950, then +1,000
    assert book.balance["alice"] == -950
    assert audit(book.books, allow_pending=False).invariants_ok
    book.move("alice", "stake_debit", 100, "b9")           # a stake from a negative balance
    failed = {c.name for c in audit(book.books).invariants if not c.ok}
    assert "a balance never goes negative" in failed
