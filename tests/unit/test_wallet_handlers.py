"""Wallet commands: bets debit once per id, end once, and duplicates re-publish; the
account and every stored value stay the same size whatever the player's history."""

import pytest

from croupier.services.wallet import handlers
from croupier.services.wallet.commands import ENVELOPE, CreateAccount, Deposit, EndBet
from tests.unit.wallet_support import Ledger, bet


@pytest.fixture
def ledger() -> Ledger:
    led = Ledger()
    led.run(handlers.create_account, CreateAccount(player_id="p1", currency="IDR"))
    led.run(handlers.operator_movement, Deposit(player_id="p1", request_id="d1", amount=10_000))
    return led


def test_bet_debits_once_and_a_retry_gets_the_same_answer(ledger):
    first = ledger.run(handlers.place_bet, bet())
    retry = ledger.run(handlers.place_bet, bet())
    assert (first.answer.status, retry.answer.status) == (201, 200)
    assert first.answer.body == retry.answer.body and ledger.account.balance == 7000
    assert [t for t, _, _ in retry.publish] == ["wallet.transactions", "bets.placed"]
    assert ledger.run(handlers.place_bet, bet(stake=4000)).answer.status == 409


def test_a_bet_id_reused_in_another_round_is_refused_and_moves_nothing(ledger):
    ledger.run(handlers.place_bet, bet())
    reused = ledger.run(handlers.place_bet, bet().model_copy(update={"round_id": "R2"}))
    assert (reused.answer.status, reused.answer.body["error"]["code"]) == (409, "bet_id_conflict")
    assert ledger.account.balance == 7000 and reused.publish == [] and reused.txs == []
    assert ledger.bets["b1"].round_id == "R1"


def test_insufficient_funds_is_402_and_moves_nothing(ledger):
    out = ledger.run(handlers.place_bet, bet(stake=20_000))
    assert out.answer.status == 402 and out.answer.body["error"]["code"] == "insufficient_funds"
    assert ledger.account.balance == 10_000 and not out.publish


@pytest.mark.parametrize("ending,returned,kind,balance", [
    ("rejected", 3000, "bet_refund", 10_000),
    ("voided", 3000, "bet_refund", 10_000),
    ("settled", 6000, "payout", 13_000),
    ("settled", 0, None, 7000),
])
def test_a_bet_ends_once(ledger, ending, returned, kind, balance):
    ledger.run(handlers.place_bet, bet())
    end = EndBet(player_id="p1", bet_id="b1", ending=ending, returned=returned,
                 settlement_id="settle:b1", table_id="T1", round_id="R1")
    first = ledger.run(handlers.end_bet, end)
    again = ledger.run(handlers.end_bet, end)
    assert ledger.account.balance == balance
    assert ledger.bets["b1"].status == ending
    assert [tx.kind for tx in first.txs] == ([kind] if kind else []) and again.txs == []
    other = "rejected" if ending != "rejected" else "settled"
    clash = ledger.run(handlers.end_bet, end.model_copy(update={"ending": other}))
    assert clash.answer.status == 409 and ledger.account.balance == balance


def test_an_ending_for_a_bet_never_debited_moves_nothing(ledger):
    out = ledger.run(handlers.end_bet, EndBet(player_id="p1", bet_id="ghost", ending="settled",
                                              returned=5000, table_id="T1", round_id="R1"))
    assert out.answer.status == 409 and ledger.account.balance == 10_000


def test_a_bet_whose_account_write_was_lost_in_a_crash_is_debited_once_on_redelivery(ledger):
    """The per-item keys reached the log, the account did not: the index entry and bet
    record point past the account's tx_count, so the redelivered bet is applied (once)."""
    before = ledger.account
    first = ledger.run(handlers.place_bet, bet())
    ledger.account = before  # the crash: the account's changelog record was lost
    again = ledger.run(handlers.place_bet, bet())
    assert again.answer.status == 201 and [tx.tx_id for tx in again.txs] == [
        first.txs[0].tx_id]
    assert ledger.account.balance == 7000 and ledger.account.tx_count == 2
    assert ledger.run(handlers.place_bet, bet()).answer.status == 200  # and once only


def test_a_bet_whose_other_writes_were_lost_in_a_crash_is_not_debited_twice(ledger):
    """The account reached the log, the index entry, history record and bet record did
    not: the account remembers the movement, so the redelivered bet moves nothing, the
    history record is restored, the bet record re-created, the records re-published."""
    first = ledger.run(handlers.place_bet, bet())
    debit = first.txs[0]
    del ledger.seqs[debit.tx_id], ledger.txs[2], ledger.bets["b1"]
    again = ledger.run(handlers.place_bet, bet())
    assert again.answer.status == 200 and again.txs == [] and ledger.account.balance == 7000
    assert [(seq, tx.tx_id, tx.balance_after) for seq, tx in again.restored] == [
        (2, debit.tx_id, 7000)]
    assert ledger.txs[2].amount == 3000 and ledger.bets["b1"].debit_seq == 2
    assert [t for t, _, _ in again.publish] == ["wallet.transactions", "bets.placed"]


def test_envelopes_round_trip_and_refuse_junk():
    env = ENVELOPE.validate_json(b'{"command": {"type": "deposit", "player_id": "p",'
                                 b' "request_id": "r", "amount": 5}}')
    assert env.command.amount == 5
    with pytest.raises(ValueError):
        ENVELOPE.validate_json(b'{"command": {"type": "deposit", "player_id": "p",'
                               b' "request_id": "r", "amount": 5.5}}')


def _bet_and_settle(ledger: Ledger, i: int) -> int:
    """One bet and its settlement; the largest value either wrote."""
    ledger.run(handlers.place_bet, bet(stake=1000, bet_id=f"b{i}"))
    size = ledger.largest_value
    ledger.run(handlers.end_bet, EndBet(player_id="p1", bet_id=f"b{i}", ending="settled",
                                        returned=1000, settlement_id=f"settle:b{i}",
                                        table_id="T1", round_id="R1"))
    return max(size, ledger.largest_value)


def test_state_does_not_grow_with_lifetime_bets(ledger):
    sizes = [_bet_and_settle(ledger, i) for i in range(2000)]
    # once the account's window of recent movements is full (bet 8), only the digits of ids
    # and counters may grow (b99 -> b1999)
    assert max(sizes[-100:]) <= max(sizes[100:200]) + 64 < 2048
    assert len(ledger.account.model_dump_json()) < 2048
    assert ledger.account.tx_count == 1 + 2 * 2000 and ledger.account.balance == 10_000
    retry = ledger.run(handlers.place_bet, bet(stake=1000, bet_id="b0"))  # an old bet id
    assert retry.answer.status == 200 and not retry.txs


