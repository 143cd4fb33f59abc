"""The pure ledger: once per tx id, never negative, balance = sum of signed amounts."""

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from services.wallet.ledger import (
    Account,
    Applied,
    LedgerRefusal,
    Movement,
    apply,
    signed_sum,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def fresh() -> Account:
    return Account(player_id="p1", currency="IDR")


def test_deposit_then_debit_moves_money_and_names_the_tx_by_cause():
    a = apply(fresh(), Movement("deposit", "req-1", 5000), NOW)
    assert isinstance(a, Applied) and a.tx.tx_id == "deposit:req-1" and a.seq == 1
    b = apply(a.account, Movement("stake_debit", "bet-1", 2000, "T1", "R1"), NOW, applied=None)
    assert b.account.balance == 3000 and b.tx.balance_after == 3000 and b.tx.round_id == "R1"


def test_the_same_cause_twice_moves_nothing_and_returns_the_original_seq():
    a = apply(fresh(), Movement("deposit", "req-1", 5000), NOW)
    again = apply(a.account, Movement("deposit", "req-1", 5000), NOW, applied=a.seq)
    assert again.duplicate and again.seq == 1 and again.account == a.account


def test_the_account_holds_no_history():
    """Which tx ids were applied, and every bet, are facts under their own keys of the
    fold: the account is the same four fields after 500 movements as after one."""
    account = fresh()
    for i in range(500):
        account = apply(account, Movement("deposit", f"r{i}", 5000), NOW).account
    assert set(account.model_dump()) == {"player_id", "currency", "balance", "tx_count"}
    assert account.tx_count == 500 and account.balance == 500 * 5000
    assert len(account.model_dump_json()) < 256


def test_a_cause_applied_before_moves_nothing_whatever_the_account_says_since():
    """The fold's tx-id index is the one word on what was applied (no window to fall out
    of): a movement looked up as applied, even long ago, is a duplicate."""
    a = apply(fresh(), Movement("deposit", "req-1", 5000), NOW)
    later = a.account
    for i in range(100):
        later = apply(later, Movement("deposit", f"r{i}", 1), NOW).account
    again = apply(later, Movement("deposit", "req-1", 5000), NOW, applied=a.seq)
    assert again.duplicate and again.seq == 1 and again.account == later


def test_a_debit_beyond_the_balance_is_refused_by_name():
    refused = apply(fresh(), Movement("withdrawal", "w1", 1), NOW)
    assert isinstance(refused, LedgerRefusal) and refused.code == "insufficient_funds"
    assert apply(fresh(), Movement("deposit", "d0", 0), NOW).code == "bad_amount"


movement = st.builds(
    Movement,
    kind=st.sampled_from(["deposit", "withdrawal", "stake_debit", "bet_refund", "payout"]),
    cause_id=st.sampled_from([f"c{i}" for i in range(12)]),
    amount=st.integers(min_value=-5, max_value=10_000),
)


@given(st.lists(movement, max_size=60))
def test_balance_never_negative_and_equals_the_sum_of_distinct_transactions(moves):
    account, txs, applied = fresh(), [], {}  # applied: tx_id -> seq, as the wallet keys it
    for m in moves:
        result = apply(account, m, NOW, applied.get(m.tx_id))
        if isinstance(result, Applied):
            account = result.account
            if result.tx is not None:
                txs.append(result.tx)
                applied[result.tx.tx_id] = result.seq
        assert account.balance >= 0
    assert account.balance == signed_sum(txs)
    assert len({t.tx_id for t in txs}) == len(txs) == account.tx_count
