"""Issue 20, deliverable 3: reconciliation's pure core, over constructed records. Every kind
of difference is named with its ids; a clean run is zero differences; the window's edges
make no false differences."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta

import pytest

from services.operator.reconcile import (
    Difference,
    ReconcileReport,
    Unreadable,
    reconcile,
)
from shared.events.operator_wallet import (
    CallKind,
    OperatorAnswer,
    OperatorCallRecord,
    OperatorTransaction,
    Outcome,
    WalletRequest,
)

T0 = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)


def call(kind: CallKind, tx: str, amount: int, *, player: str = "P1", outcome: Outcome = "ok",
         at: datetime = T0, round_id: str = "R1", bet: str = "B1", ref: str | None = None,
         currency: str = "EUR", error_code: str | None = None) -> OperatorCallRecord:
    request = WalletRequest(transaction_id=tx, kind=kind, player_id=player, amount=amount,
                            currency=currency, table_id="T1", round_id=round_id, bet_id=bet,
                            reference_transaction_id=ref, requested_at=at)
    answer = OperatorAnswer(outcome=outcome, error_code=error_code,
                            http_status={"ok": 200, "refused": 404}.get(outcome),
                            answered_at=at + timedelta(milliseconds=20))
    return OperatorCallRecord(request=request, answer=answer)


_seq = iter(range(1, 1_000_000))


def op(kind: CallKind, tx: str, amount: int, *, player: str = "P1", status: str = "applied",
       at: datetime = T0, round_id: str = "R1", bet: str = "B1", ref: str | None = None,
       currency: str = "EUR") -> OperatorTransaction:
    n = next(_seq)
    return OperatorTransaction(
        transaction_id=tx, kind=kind, player_id=player, amount=amount, currency=currency,
        table_id="T1", round_id=round_id, bet_id=bet, reference_transaction_id=ref,
        status=status,  # type: ignore[arg-type]
        balance_after=1000, operator_transaction_id=f"OP-{n}",
        recorded_at=at + timedelta(milliseconds=10))


def names(report: ReconcileReport) -> list[str]:
    return sorted(d.name for d in report.differences)


def only(report: ReconcileReport, name: str) -> Difference:
    (found,) = [d for d in report.differences if d.name == name]
    return found


def a_clean_round() -> tuple[list[OperatorCallRecord], list[OperatorTransaction]]:
    """Two players: a won bet, a lost bet (a zero credit), a bet bet-settlement rejected."""
    calls = [call("debit", "debit:B1", 100, bet="B1"),
             call("debit", "debit:B2", 50, player="P2", bet="B2"),
             call("debit", "debit:B3", 30, bet="B3"),
             call("rollback", "rollback:debit:B3", 30, bet="B3", ref="debit:B3"),
             call("credit", "credit:S1", 195, bet="B1", ref="debit:B1"),
             call("credit", "credit:S2", 0, player="P2", bet="B2", ref="debit:B2")]
    operator = [op("debit", "debit:B1", 100, bet="B1"),
                op("debit", "debit:B2", 50, player="P2", bet="B2"),
                op("debit", "debit:B3", 30, bet="B3", status="rolled_back"),
                op("rollback", "rollback:debit:B3", 30, bet="B3", ref="debit:B3"),
                op("credit", "credit:S1", 195, bet="B1", ref="debit:B1"),
                op("credit", "credit:S2", 0, player="P2", bet="B2", ref="debit:B2")]
    return calls, operator


# ---------------------------------------------------------------- zero differences

def test_a_clean_run_reconciles_to_zero_differences_and_both_sides_nets() -> None:
    calls, operator = a_clean_round()
    report = reconcile(calls, operator)
    assert report.differences == [] and report.clean
    assert report.transactions == 6 and report.rounds == 1 and report.players == 2
    (day,) = report.days
    assert (day.day, day.currency, day.croupier, day.operator) == (date(2026, 12, 3), "EUR",
                                                                   95 - 50, 95 - 50)
    assert report.model_dump(mode="json")["clean"] is True


def test_nothing_on_either_side_is_clean() -> None:
    report = reconcile([], [], since=T0, until=T0 + timedelta(days=1))
    assert report.clean and report.days == [] and report.transactions == 0


def test_a_window_that_is_empty_is_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        reconcile([], [], since=T0, until=T0)


# ---------------------------------------------------------------- per transaction

def test_an_ok_credit_the_operator_never_recorded_is_missing_at_the_operator() -> None:
    calls, operator = a_clean_round()
    operator = [t for t in operator if t.transaction_id != "credit:S1"]
    report = reconcile(calls, operator)
    assert names(report) == ["day_net_mismatch", "missing_at_operator", "player_net_mismatch",
                             "round_net_mismatch"]
    missing = only(report, "missing_at_operator")
    assert (missing.player_id, missing.transaction_id, missing.round_id) == ("P1", "credit:S1",
                                                                              "R1")
    round_net = only(report, "round_net_mismatch")
    assert (round_net.croupier, round_net.operator) == (45, -150)
    assert round_net.transaction_ids == ["credit:S1"]  # the ids to check
    assert only(report, "player_net_mismatch").player_id == "P1"
    assert only(report, "day_net_mismatch").day == date(2026, 12, 3)


def test_an_operator_transaction_croupier_never_recorded_is_unknown_to_croupier() -> None:
    calls, operator = a_clean_round()
    operator.append(op("credit", "credit:S9", 500, bet="B9"))
    report = reconcile(calls, operator)
    unknown = only(report, "unknown_to_croupier")
    assert (unknown.transaction_id, unknown.operator) == ("credit:S9", "applied")
    assert "OP-" in unknown.detail  # the operator's own reference, to look it up there
    assert only(report, "player_net_mismatch").transaction_ids == ["credit:S9"]


@pytest.mark.parametrize("field,value,name", [
    ("amount", 196, "amount_mismatch"),
    ("currency", "USD", "currency_mismatch"),
    ("kind", "debit", "kind_mismatch"),
    ("round_id", "R2", "detail_mismatch"),
    ("bet", "B7", "detail_mismatch"),
    ("ref", "debit:B2", "detail_mismatch"),
])
def test_each_field_that_differs_is_named(field: str, value: object, name: str) -> None:
    calls, operator = a_clean_round()
    base = {"amount": 195, "bet": "B1", "ref": "debit:B1", "kind": "credit"}
    base[field] = value
    kind = base.pop("kind")
    amount = base.pop("amount")
    operator = [t for t in operator if t.transaction_id != "credit:S1"]
    operator.append(op(kind, "credit:S1", amount, **base))  # type: ignore[arg-type]
    report = reconcile(calls, operator)
    diff = only(report, name)
    assert diff.transaction_id == "credit:S1" and diff.operator == value
    if name != "detail_mismatch":  # the money moved differently: the nets say so too
        assert "player_net_mismatch" in names(report)


def test_an_operator_that_keeps_no_reference_for_credits_is_no_difference() -> None:
    calls, operator = a_clean_round()
    operator = [t.model_copy(update={"reference_transaction_id": None})
                if t.kind == "credit" else t for t in operator]
    assert reconcile(calls, operator).clean
    # a rollback's reference is what it undoes: always compared
    operator = [t.model_copy(update={"reference_transaction_id": None})
                if t.kind == "rollback" else t for t in operator]
    assert only(reconcile(calls, operator), "detail_mismatch").transaction_id == \
        "rollback:debit:B3"


def test_a_transaction_under_another_player_at_the_operator_is_a_player_mismatch() -> None:
    calls, operator = a_clean_round()
    operator = [t for t in operator if t.transaction_id != "credit:S2"]
    operator.append(op("credit", "credit:S2", 0, player="P3", bet="B2", ref="debit:B2"))
    report = reconcile(calls, operator)
    mismatch = only(report, "player_mismatch")
    assert (mismatch.transaction_id, mismatch.croupier, mismatch.operator) == ("credit:S2", "P2",
                                                                               "P3")
    assert "missing_at_operator" not in names(report)
    assert "unknown_to_croupier" not in names(report)


def test_a_debit_croupier_rolled_back_but_the_operator_holds_is_standing_there() -> None:
    calls, operator = a_clean_round()
    operator = [t for t in operator if t.transaction_id != "debit:B3"]
    operator.append(op("debit", "debit:B3", 30, bet="B3", status="applied"))
    report = reconcile(calls, operator)
    standing = only(report, "standing_at_operator")
    assert (standing.transaction_id, standing.croupier, standing.operator) == (
        "debit:B3", "rolled_back", "applied")
    assert only(report, "round_net_mismatch").transaction_ids == ["debit:B3"]


def test_a_debit_the_operator_rolled_back_without_croupier_is_rolled_back_there() -> None:
    calls, operator = a_clean_round()
    operator = [t for t in operator if t.transaction_id != "debit:B1"]
    operator.append(op("debit", "debit:B1", 100, bet="B1", status="rolled_back"))
    report = reconcile(calls, operator)
    assert only(report, "rolled_back_at_operator").transaction_id == "debit:B1"


@pytest.mark.parametrize("at_operator", [None, "applied"])
def test_a_debit_with_no_answer_and_no_rollback_yet_is_owed(at_operator: str | None) -> None:
    calls = [call("debit", "debit:B1", 100, outcome="no_answer")]
    operator = [op("debit", "debit:B1", 100)] if at_operator else []
    report = reconcile(calls, operator)
    owed = only(report, "owed")
    assert (owed.transaction_id, owed.croupier, owed.operator) == (
        "debit:B1", "no_answer", at_operator or "absent")
    assert "rollback:debit:B1" in owed.detail
    # croupier counts no money for it; an operator that applied it took 100
    assert ("player_net_mismatch" in names(report)) is (at_operator is not None)


def test_a_credit_with_no_answer_in_a_final_record_is_owed() -> None:
    report = reconcile([call("credit", "credit:S1", 10, outcome="no_answer")], [])
    assert only(report, "owed").transaction_id == "credit:S1"


def test_a_refused_debit_the_operator_applied_anyway() -> None:
    calls = [call("debit", "debit:B1", 100, outcome="refused",
                  error_code="insufficient_funds")]
    report = reconcile(calls, [op("debit", "debit:B1", 100)])
    refused = only(report, "refused_but_applied")
    assert refused.transaction_id == "debit:B1"
    assert refused.croupier == "refused insufficient_funds"
    assert "player_net_mismatch" in names(report)


def test_a_refused_debit_nobody_applied_is_no_difference() -> None:
    calls = [call("debit", "debit:B1", 100, outcome="refused", error_code="player_blocked")]
    assert reconcile(calls, []).clean


def test_a_refused_credit_is_named() -> None:
    calls = [call("credit", "credit:S1", 40, outcome="refused", error_code="bad_signature")]
    refused = only(reconcile(calls, []), "refused")
    assert refused.transaction_id == "credit:S1" and "bad_signature" in str(refused.croupier)


def test_duplicates_conflicts_and_unreadable_records_are_named() -> None:
    calls: list[OperatorCallRecord | Unreadable] = [
        call("credit", "credit:S1", 10), call("credit", "credit:S1", 11),
        Unreadable(where="wallet.operator_calls[3]@17", error="not JSON")]
    operator = [op("credit", "credit:S1", 10), op("credit", "credit:S1", 10)]
    report = reconcile(calls, operator)
    assert only(report, "conflicting_records").transaction_id == "credit:S1"
    assert only(report, "duplicate_at_operator").transaction_id == "credit:S1"
    assert "wallet.operator_calls[3]@17" in only(report, "unreadable_record").detail
    # the duplicate credited 10 again at the operator
    assert only(report, "player_net_mismatch").operator == 20


def test_an_unreadable_record_is_named_in_the_windows_near_it_only() -> None:
    bad = [Unreadable(where="wallet.operator_calls[0]@1", error="not JSON",
                      at=T0 - timedelta(days=400))]
    assert reconcile(bad, [], since=T0, until=T0 + timedelta(days=1)).clean
    assert not reconcile(bad, [], since=T0 - timedelta(days=400), until=T0).clean


def test_every_difference_reads_as_one_line_with_its_ids() -> None:
    calls, operator = a_clean_round()
    operator = [t for t in operator if t.transaction_id != "credit:S1"]
    lines = [d.line() for d in reconcile(calls, operator).differences]
    assert any(line.startswith("missing_at_operator: player P1, transaction credit:S1")
               for line in lines)
    assert any(line.startswith("round_net_mismatch: table T1, round R1") and "credit:S1" in line
               for line in lines)


# ---------------------------------------------------------------- timeouts and rollbacks

def test_a_debit_that_timed_out_and_was_rolled_back_at_an_operator_that_had_it() -> None:
    calls = [call("debit", "debit:B1", 100, outcome="no_answer"),
             call("rollback", "rollback:debit:B1", 100, ref="debit:B1")]
    operator = [op("debit", "debit:B1", 100, status="rolled_back"),
                op("rollback", "rollback:debit:B1", 100, ref="debit:B1")]
    report = reconcile(calls, operator)
    assert report.clean, [d.line() for d in report.differences]
    assert report.days[0].croupier == report.days[0].operator == 0


def test_an_unknown_rollback_answered_success_is_a_zero_amount_rollback() -> None:
    """rollback_unknown = success: the operator never had the debit; it answers 200 and
    reports a 0-amount rollback naming it, whatever amount croupier asked."""
    calls = [call("debit", "debit:B1", 100, outcome="no_answer"),
             call("rollback", "rollback:debit:B1", 100, ref="debit:B1")]
    operator = [op("rollback", "rollback:debit:B1", 0, ref="debit:B1")]
    assert reconcile(calls, operator).clean


def test_an_unknown_rollback_answered_not_found_is_not_reported() -> None:
    """rollback_unknown = not_found: a 404 transaction_not_found (taken as done), and
    nothing in the operator's report."""
    calls = [call("debit", "debit:B1", 100, outcome="no_answer"),
             call("rollback", "rollback:debit:B1", 100, ref="debit:B1", outcome="refused",
                  error_code="transaction_not_found")]
    assert reconcile(calls, []).clean


def test_under_not_found_a_debit_the_operator_did_apply_is_still_named() -> None:
    calls = [call("debit", "debit:B1", 100, outcome="no_answer"),
             call("rollback", "rollback:debit:B1", 100, ref="debit:B1", outcome="refused",
                  error_code="transaction_not_found")]
    report = reconcile(calls, [op("debit", "debit:B1", 100)])
    assert only(report, "standing_at_operator").transaction_id == "debit:B1"


def test_a_rollback_answered_not_found_for_a_debit_the_operator_confirmed_is_named() -> None:
    """The operator said yes to the debit, then "not found" to its rollback (a bet
    bet-settlement rejected: croupier's ledger refunded the stake) and still holds the
    debit: the player never got the stake back, whatever the 404 said."""
    calls = [call("debit", "debit:B1", 100),
             call("rollback", "rollback:debit:B1", 100, ref="debit:B1", outcome="refused",
                  error_code="transaction_not_found")]
    report = reconcile(calls, [op("debit", "debit:B1", 100)])
    assert only(report, "standing_at_operator").transaction_id == "debit:B1"


def test_a_zero_amount_rollback_of_a_debit_the_operator_holds_is_an_amount_mismatch() -> None:
    calls = [call("debit", "debit:B1", 100),
             call("rollback", "rollback:debit:B1", 100, ref="debit:B1")]
    operator = [op("debit", "debit:B1", 100, status="rolled_back"),
                op("rollback", "rollback:debit:B1", 0, ref="debit:B1")]
    assert only(reconcile(calls, operator), "amount_mismatch").transaction_id == \
        "rollback:debit:B1"


def test_a_corrected_round_credit_reversed_and_paid_again_under_a_new_id() -> None:
    """A corrected result: credit:S1 (195) is rolled back and credit:S1b (95) pays the new
    result; both sides net -100 + 95."""
    later = T0 + timedelta(minutes=20)
    calls = [call("debit", "debit:B1", 100),
             call("credit", "credit:S1", 195, ref="debit:B1"),
             call("rollback", "rollback:credit:S1", 195, ref="credit:S1", at=later),
             call("credit", "credit:S1b", 95, ref="debit:B1", at=later)]
    operator = [op("debit", "debit:B1", 100),
                op("credit", "credit:S1", 195, ref="debit:B1", status="rolled_back"),
                op("rollback", "rollback:credit:S1", 195, ref="credit:S1", at=later),
                op("credit", "credit:S1b", 95, ref="debit:B1", at=later)]
    report = reconcile(calls, operator)
    assert report.clean, [d.line() for d in report.differences]
    assert (report.days[0].croupier, report.days[0].operator) == (-5, -5)
    # the operator not having reversed it: the old credit stands there
    operator[1] = op("credit", "credit:S1", 195, ref="debit:B1")
    assert only(reconcile(calls, operator), "standing_at_operator").transaction_id == "credit:S1"


# ---------------------------------------------------------------- the window

SINCE, UNTIL = T0, T0 + timedelta(hours=1)


def test_a_transaction_asked_before_the_edge_and_recorded_after_it_is_compared() -> None:
    asked = UNTIL - timedelta(milliseconds=5)  # the operator records it 10 ms later
    calls = [call("debit", "debit:B1", 100, at=asked)]
    report = reconcile(calls, [op("debit", "debit:B1", 100, at=asked)], since=SINCE, until=UNTIL)
    assert report.clean and report.transactions == 1
    # and in the next window it is out of scope, not unknown to croupier
    after = reconcile(calls, [op("debit", "debit:B1", 100, at=asked)], since=UNTIL,
                      until=UNTIL + timedelta(hours=1))
    assert after.clean and after.transactions == 0 and after.out_of_scope == 1


def test_a_transaction_outside_the_window_makes_no_difference_in_it() -> None:
    before = SINCE - timedelta(minutes=1)
    calls = [call("credit", "credit:S0", 10, at=before), call("debit", "debit:B1", 100)]
    report = reconcile(calls, [op("debit", "debit:B1", 100)], since=SINCE, until=UNTIL)
    assert report.clean and report.out_of_scope == 1
    # the same missing credit in its own window is named
    assert "missing_at_operator" in names(reconcile(
        calls, [op("debit", "debit:B1", 100)], since=before, until=UNTIL))


def test_an_operator_transaction_in_the_window_croupier_asked_before_it_is_out_of_scope() -> None:
    asked = SINCE - timedelta(seconds=30)
    calls = [call("credit", "credit:S1", 10, at=asked)]
    operator = [op("credit", "credit:S1", 10, at=asked + timedelta(seconds=40))]
    report = reconcile(calls, operator, since=SINCE, until=UNTIL)
    assert report.clean and report.transactions == 0


def test_a_rollback_long_after_the_window_still_cancels_its_debit() -> None:
    """croupier's rollback was retried for hours (the operator was down): its debit in the
    window is cancelled all the same, as the operator's report says."""
    calls = [call("debit", "debit:B1", 100),
             call("rollback", "rollback:debit:B1", 100, ref="debit:B1",
                  at=UNTIL + timedelta(hours=5))]
    operator = [op("debit", "debit:B1", 100, status="rolled_back")]
    report = reconcile(calls, operator, since=SINCE, until=UNTIL)
    assert report.clean, [d.line() for d in report.differences]
    assert report.transactions == 1


def test_the_operators_report_is_read_no_further_than_the_far_margin() -> None:
    def report_pages() -> Iterator[OperatorTransaction]:
        yield op("debit", "debit:B1", 100)
        yield op("debit", "debit:B9", 1, at=UNTIL + timedelta(hours=2))
        raise AssertionError("read past the window's margin")

    report = reconcile([call("debit", "debit:B1", 100)], report_pages(), since=SINCE,
                       until=UNTIL)
    assert report.clean and report.operator_read == 2


def test_days_are_utc_days_and_a_transaction_keeps_croupiers_date() -> None:
    """Asked at 23:59:59.995 on the 3rd, recorded at the operator on the 4th: one day, the
    3rd, for both sides."""
    asked = datetime(2026, 12, 3, 23, 59, 59, 995000, tzinfo=UTC)
    report = reconcile([call("debit", "debit:B1", 100, at=asked)],
                       [op("debit", "debit:B1", 100, at=asked)])
    assert report.clean
    assert [(d.day, d.croupier, d.operator) for d in report.days] == [
        (date(2026, 12, 3), -100, -100)]


def test_days_and_currencies_are_netted_apart() -> None:
    next_day = T0 + timedelta(days=1)
    calls = [call("debit", "debit:B1", 100), call("debit", "debit:B2", 5000, currency="JPY"),
             call("debit", "debit:B3", 7, at=next_day)]
    operator = [op("debit", "debit:B1", 100), op("debit", "debit:B2", 5000, currency="JPY")]
    report = reconcile(calls, operator)
    assert [(d.day, d.currency) for d in report.days] == [
        (date(2026, 12, 3), "EUR"), (date(2026, 12, 3), "JPY"), (date(2026, 12, 4), "EUR")]
    day = only(report, "day_net_mismatch")
    assert (day.day, day.currency, day.croupier, day.operator) == (date(2026, 12, 4), "EUR",
                                                                   -7, 0)


def test_one_player_only() -> None:
    calls, operator = a_clean_round()
    operator = [t for t in operator if t.transaction_id != "credit:S1"]  # P1's
    assert reconcile(calls, operator, player="P2").clean
    assert not reconcile(calls, operator, player="P1").clean


def test_a_net_difference_names_at_most_twenty_ids_and_counts_the_rest() -> None:
    calls = [call("debit", f"debit:B{i}", 1, bet=f"B{i}") for i in range(25)]
    report = reconcile(calls, [])
    round_net = only(report, "round_net_mismatch")
    assert len(round_net.transaction_ids) == 20 and "5 more" in round_net.detail
