"""Wallet commands: bets debit once per id, end once, and duplicates re-publish."""

from datetime import UTC, datetime

import pytest

from services.wallet import handlers
from services.wallet.commands import ENVELOPE, CreateAccount, Deposit, EndBet, PlaceBet
from shared.ledger import Account

NOW = datetime(2026, 1, 1, tzinfo=UTC)


class Ledger:
    """Applies outcomes the way the agent does, keeping txs by seq."""

    def __init__(self) -> None:
        self.account: Account | None = None
        self.txs: dict[int, object] = {}

    def tx_at(self, player_id, seq):
        return self.txs[seq]

    def run(self, fn, cmd) -> handlers.Outcome:
        args = (self.account, cmd) if fn is handlers.create_account else (
            self.account, cmd, NOW, self.tx_at)
        outcome = fn(*args)
        for tx in outcome.txs:
            self.txs[outcome.account.applied[tx.tx_id]] = tx
        if outcome.account is not None:
            self.account = outcome.account
        return outcome


@pytest.fixture
def ledger() -> Ledger:
    led = Ledger()
    led.run(handlers.create_account, CreateAccount(player_id="p1", currency="IDR"))
    led.run(handlers.operator_movement, Deposit(player_id="p1", request_id="d1", amount=10_000))
    return led


def bet(stake=3000, bet_id="b1") -> PlaceBet:
    return PlaceBet(player_id="p1", bet_id=bet_id, table_id="T1", round_id="R1", bet="player",
                    stake=stake)


def test_bet_debits_once_and_a_retry_gets_the_same_answer(ledger):
    first = ledger.run(handlers.place_bet, bet())
    retry = ledger.run(handlers.place_bet, bet())
    assert (first.answer.status, retry.answer.status) == (201, 200)
    assert first.answer.body == retry.answer.body and ledger.account.balance == 7000
    assert [t for t, _, _ in retry.publish] == ["wallet.transactions", "bets.placed"]
    assert ledger.run(handlers.place_bet, bet(stake=4000)).answer.status == 409


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
    assert ledger.account.bets["b1"].status == ending
    assert [tx.kind for tx in first.txs] == ([kind] if kind else []) and again.txs == []
    other = "rejected" if ending != "rejected" else "settled"
    clash = ledger.run(handlers.end_bet, end.model_copy(update={"ending": other}))
    assert clash.answer.status == 409 and ledger.account.balance == balance


def test_an_ending_for_a_bet_never_debited_moves_nothing(ledger):
    out = ledger.run(handlers.end_bet, EndBet(player_id="p1", bet_id="ghost", ending="settled",
                                              returned=5000, table_id="T1", round_id="R1"))
    assert out.answer.status == 409 and ledger.account.balance == 10_000


def test_envelopes_round_trip_and_refuse_junk():
    env = ENVELOPE.validate_json(b'{"command": {"type": "deposit", "player_id": "p",'
                                 b' "request_id": "r", "amount": 5}}')
    assert env.command.amount == 5
    with pytest.raises(ValueError):
        ENVELOPE.validate_json(b'{"command": {"type": "deposit", "player_id": "p",'
                               b' "request_id": "r", "amount": 5.5}}')
