"""The reference operator wallet's database without its server: a call applied once and
answered the same way again, a conflict on another body, tombstones, the report's pages,
everything still there when the database is opened again, and racing deliveries."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest

from services.simulators.operator_wallet.store import UnknownPlayer, WalletStore
from shared.events.operator_wallet import WalletRequest

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


@pytest.fixture
def store(tmp_path):
    store = WalletStore(tmp_path / "wallet.sqlite")
    store.put_player("alice", "EUR", 1_000)
    store.issue_session("alice", 3600, "tok")
    return store


def req(kind: str, tx: str, amount: int, ref: str | None = None, **kw) -> WalletRequest:
    return WalletRequest.model_validate({
        "transaction_id": tx, "kind": kind, "player_id": "alice", "amount": amount,
        "currency": "EUR", "table_id": "t1", "round_id": "r1", "bet_id": "b1",
        "requested_at": NOW, "reference_transaction_id": ref,
        "session_token": "tok" if kind == "debit" else None, **kw})


def test_a_call_is_applied_once_and_answered_the_same_again(store):
    first = store.call(req("debit", "debit:b1", 300), "not_found")
    assert first[0] == 200 and first[1].balance == 700
    assert store.call(req("debit", "debit:b1", 300), "not_found") == first
    assert store.player("alice").balance == 700
    status, conflict = store.call(req("debit", "debit:b1", 301), "not_found")
    assert status == 409 and conflict.error_code == "transaction_conflict"


def test_a_refusal_is_stored_too(store):
    status, refused = store.call(req("debit", "debit:b1", 5_000), "not_found")
    assert status == 402 and refused.error_code == "insufficient_funds"
    store.put_player("alice", balance=10_000)
    assert store.call(req("debit", "debit:b1", 5_000), "not_found") == (status, refused)


def test_a_rollback_first_refuses_the_late_debit(store):
    status, answer = store.call(req("rollback", "rollback:debit:b1", 300, "debit:b1"), "success")
    assert status == 200 and answer.balance == 1_000
    status, late = store.call(req("debit", "debit:b1", 300), "success")
    assert status == 409 and late.error_code == "transaction_rolled_back"
    assert store.player("alice").balance == 1_000
    [tomb] = store.transactions().transactions
    assert (tomb.kind, tomb.amount, tomb.reference_transaction_id) == ("rollback", 0, "debit:b1")


def test_a_not_found_rollback_still_leaves_its_tombstone(store):
    status, answer = store.call(req("rollback", "rollback:debit:b1", 300, "debit:b1"), "not_found")
    assert status == 404 and answer.error_code == "transaction_not_found"
    assert store.call(req("debit", "debit:b1", 300), "not_found")[1].error_code == \
        "transaction_rolled_back"
    assert store.transactions().transactions == []


def test_debit_credit_rollback_and_the_report(store):
    store.call(req("debit", "debit:b1", 300), "not_found")
    store.call(req("credit", "credit:s1", 600, "debit:b1"), "not_found")
    status, undone = store.call(req("rollback", "rollback:credit:s1", 600, "credit:s1"), "not_found")
    assert status == 200 and undone.balance == 700
    txs = store.transactions().transactions
    assert [(t.kind, t.status, t.balance_after) for t in txs] == [
        ("debit", "applied", 700), ("credit", "rolled_back", 1_300), ("rollback", "applied", 700)]
    assert len({t.operator_transaction_id for t in txs}) == 3


def test_the_report_pages(store):
    store.put_player("bob", "EUR", 0)
    for i in range(7):
        store.call(req("credit", f"credit:{i}", i), "not_found")
        store.call(req("credit", f"credit:{i}", i, player_id="bob"), "not_found")
    seen, after = [], 0
    while after is not None:
        page = store.transactions(after, 3)
        assert len(page.transactions) <= 3
        seen += page.transactions
        after = page.next_after
    assert len(seen) == 14
    assert [t.transaction_id for t in store.transactions(0, 100, "bob").transactions] == \
        [f"credit:{i}" for i in range(7)]


def test_everything_is_there_when_opened_again(store, tmp_path):
    store.call(req("debit", "debit:b1", 300), "not_found")
    again = WalletStore(tmp_path / "wallet.sqlite")
    assert again.player("alice").balance == 700
    assert again.call(req("debit", "debit:b1", 300), "not_found")[1].balance == 700
    assert len(again.transactions().transactions) == 1


def test_racing_deliveries_move_money_once(store):
    calls = [req("debit", f"debit:b{i % 10}", 10) for i in range(80)]
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda r: store.call(r, "not_found"), calls))
    assert all(status == 200 for status, _ in answers)
    assert store.player("alice").balance == 900
    assert len(store.transactions().transactions) == 10


def test_admin(store):
    with pytest.raises(ValueError, match="currency"):
        store.put_player("carol")
    with pytest.raises(UnknownPlayer):
        store.issue_session("carol", 60, "t2")
    assert store.put_player("alice", blocked=True).blocked
    assert store.expire_session("tok") and not store.expire_session("nope")


def test_a_group_commit_applies_each_call_once_in_order(store):
    calls = [req("debit", "debit:b1", 300), req("debit", "debit:b1", 300),
             req("debit", "debit:b1", 301), req("credit", "credit:s1", 600, "debit:b1")]
    answers = store.call_many(calls, "not_found")
    assert [a[0] for a in answers] == [200, 200, 409, 200]
    assert answers[0] == answers[1] and answers[3][1].balance == 1_300
    assert len(store.transactions().transactions) == 2


class _FailsOn(WalletStore):
    """A store failing one transaction id after its balance and transaction are written,
    before its answer is (an unexpected error halfway)."""

    def _apply(self, db, request, decision, now):
        answer = super()._apply(db, request, decision, now)
        if request.transaction_id == "debit:boom":
            raise RuntimeError("boom")
        return answer


def test_a_call_that_fails_is_undone_alone(tmp_path):
    store = _FailsOn(tmp_path / "wallet.sqlite")
    store.put_player("alice", "EUR", 1_000)
    store.issue_session("alice", 3600, "tok")
    before, boom, after = store.call_many(
        [req("debit", "debit:b1", 100), req("debit", "debit:boom", 100),
         req("debit", "debit:b2", 100)], "not_found")
    assert isinstance(boom, RuntimeError)
    assert (before[1].balance, after[1].balance) == (900, 800)
    assert [t.transaction_id for t in store.transactions().transactions] == ["debit:b1", "debit:b2"]
    with pytest.raises(RuntimeError):
        store.call(req("debit", "debit:boom", 100), "not_found")
