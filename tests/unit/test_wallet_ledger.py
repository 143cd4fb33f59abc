"""The pure ledger: once per tx id, never negative, balance = sum of signed amounts."""

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from shared.ledger import Account, Applied, Movement, Refusal, apply, signed_sum

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def fresh() -> Account:
    return Account(player_id="p1", currency="IDR")


def test_deposit_then_debit_moves_money_and_names_the_tx_by_cause():
    a = apply(fresh(), Movement("deposit", "req-1", 5000), NOW)
    assert isinstance(a, Applied) and a.tx.tx_id == "deposit:req-1" and a.seq == 1
    b = apply(a.account, Movement("stake_debit", "bet-1", 2000, "T1", "R1"), NOW)
    assert b.account.balance == 3000 and b.tx.balance_after == 3000 and b.tx.round_id == "R1"


def test_the_same_cause_twice_moves_nothing_and_returns_the_original_seq():
    a = apply(fresh(), Movement("deposit", "req-1", 5000), NOW)
    again = apply(a.account, Movement("deposit", "req-1", 5000), NOW)
    assert again.duplicate and again.seq == 1 and again.account == a.account


def test_a_debit_beyond_the_balance_is_refused_by_name():
    refused = apply(fresh(), Movement("withdrawal", "w1", 1), NOW)
    assert isinstance(refused, Refusal) and refused.code == "insufficient_funds"
    assert apply(fresh(), Movement("deposit", "d0", 0), NOW).code == "bad_amount"


movement = st.builds(
    Movement,
    kind=st.sampled_from(["deposit", "withdrawal", "stake_debit", "bet_refund", "payout"]),
    cause_id=st.sampled_from([f"c{i}" for i in range(12)]),
    amount=st.integers(min_value=-5, max_value=10_000),
)


@given(st.lists(movement, max_size=60))
def test_balance_never_negative_and_equals_the_sum_of_distinct_transactions(moves):
    account, txs = fresh(), []
    for m in moves:
        result = apply(account, m, NOW)
        if isinstance(result, Applied):
            account = result.account
            if result.tx is not None:
                txs.append(result.tx)
        assert account.balance >= 0
    assert account.balance == signed_sum(txs)
    assert len({t.tx_id for t in txs}) == len(txs) == account.tx_count
