"""The pure ledger: once per tx id, never negative, balance = sum of signed amounts."""

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from croupier.services.wallet.ledger import (
    RECENT_TXS,
    Account,
    Applied,
    BetRecord,
    LedgerRefusal,
    Movement,
    apply,
    known_bet,
    restore_tx,
    signed_sum,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def fresh() -> Account:
    return Account(player_id="p1", currency="IDR")


def test_deposit_then_debit_moves_money_and_names_the_tx_by_cause():
    a = apply(fresh(), Movement("deposit", "req-1", 5000), NOW)
    assert isinstance(a, Applied) and a.tx.tx_id == "deposit:req-1" and a.seq == 1
    b = apply(a.account, Movement("stake_debit", "bet-1", 2000, "T1", "R1"), NOW, indexed=None)
    assert b.account.balance == 3000 and b.tx.balance_after == 3000 and b.tx.round_id == "R1"


def test_the_same_cause_twice_moves_nothing_and_returns_the_original_seq():
    a = apply(fresh(), Movement("deposit", "req-1", 5000), NOW)
    again = apply(a.account, Movement("deposit", "req-1", 5000), NOW, indexed=a.seq)
    assert again.duplicate and again.seq == 1 and again.account == a.account


def test_the_account_holds_no_history():
    account = fresh()
    for i in range(500):
        account = apply(account, Movement("deposit", f"r{i}", 5000), NOW).account
    assert set(account.model_dump()) == {"player_id", "currency", "balance", "tx_count",
                                         "recent"}
    assert account.tx_count == 500 and len(account.recent) == RECENT_TXS
    assert list(account.recent) == [f"deposit:r{i}" for i in range(500 - RECENT_TXS, 500)]
    assert len(account.model_dump_json()) < 1024


def test_an_index_entry_past_the_account_was_never_applied():
    """A crash kept the tx-ids entry of a movement but lost its account write: the
    redelivered command applies it (once), under the same seq."""
    a = apply(fresh(), Movement("deposit", "req-1", 5000), NOW).account
    again = apply(a, Movement("deposit", "req-2", 700), NOW, indexed=2)
    assert not again.duplicate and again.seq == 2 and again.account.balance == 5700


def test_a_recent_movement_is_known_even_if_its_index_entry_was_lost():
    a = apply(fresh(), Movement("deposit", "req-1", 5000), NOW).account
    again = apply(a, Movement("deposit", "req-1", 5000), NOW, indexed=None)
    assert again.duplicate and again.seq == 1 and again.account.balance == 5000


def test_a_lost_history_record_of_a_recent_movement_is_restored_exactly():
    a = apply(fresh(), Movement("deposit", "req-1", 5000), NOW).account
    debit = apply(a, Movement("stake_debit", "b1", 1200, "T1", "R1"), NOW)
    later = NOW.replace(year=2031)
    restored = restore_tx(debit.account, Movement("stake_debit", "b1", 1200, "T1", "R1"), 2,
                          later)
    assert restored.model_dump(exclude={"occurred_at"}) == debit.tx.model_dump(
        exclude={"occurred_at"})
    assert restore_tx(debit.account, Movement("deposit", "req-9", 1), 2, later) is None


def test_a_bet_record_past_the_account_was_never_placed():
    a = apply(fresh(), Movement("deposit", "req-1", 5000), NOW).account
    record = BetRecord(fingerprint="f", table_id="T1", round_id="R1", stake=10, debit_seq=2,
                       placed_at=NOW)
    assert known_bet(a, record) is None
    assert known_bet(a, record.model_copy(update={"debit_seq": 1})) is not None


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
