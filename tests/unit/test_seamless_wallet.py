"""Seamless mode, the pure core (issue 20): every call croupier owes the operator's wallet
is decided and written in the ledger, pending, before it is delivered; its answer is
written over it; a debit's answer is the bet's. Each step goes through the real fold, so
what a test reads is what a recovery would rebuild from the log."""

from __future__ import annotations

from datetime import timedelta

import pytest

from services.wallet import seamless
from services.wallet.commands import (
    CreateAccount,
    Deposit,
    EndBet,
    Envelope,
    OperatorAnswered,
    ReverseSettlement,
)
from services.wallet.ledger_fold import WalletFold, pending_calls
from services.wallet.seamless import SeamlessRules
from shared.events.operator_wallet import OperatorAnswer, OperatorCallRecord
from shared.topics import BETS_PLACED_TOPIC, WALLET_OPERATOR_CALLS_TOPIC
from tests.unit.wallet_support import NOW, Ledger, bet, fold_all

RULES = SeamlessRules()


class Seamless(Ledger):
    """The wallet's partition in seamless mode: commands through `seamless.handle`."""

    def send(self, cmd, reply_id: str | None = None, rules: SeamlessRules = RULES, now=NOW):
        return self.write(seamless.handle(Envelope(reply_id=reply_id, command=cmd), now,
                                          self.look, rules), now)

    def answer(self, transaction_id: str, outcome="ok", balance: int | None = 9_000,
               error_code: str | None = None, now=NOW):
        return self.send(OperatorAnswered(
            player_id=self.player_id, transaction_id=transaction_id,
            answer=OperatorAnswer(outcome=outcome, balance=balance, error_code=error_code,
                                  message=error_code, answered_at=now)), now=now)

    def owed(self) -> dict[str, str]:
        return {c.request.transaction_id: c.request.kind for c in pending_calls(self.kv)}

    def published(self, topic: str) -> list[bytes]:
        return [value for _, entry in self.entries
                for t, _, value in self.fold.outputs(entry) if t == topic]


@pytest.fixture
def ledger() -> Seamless:
    led = Seamless()
    led.send(CreateAccount(player_id="p1", currency="IDR"))
    return led


def placed(ledger: Seamless, stake=3000, bet_id="b1"):
    waiting = ledger.send(bet(stake=stake, bet_id=bet_id, operator_session="sess-1"),
                          reply_id=f"r-{bet_id}")
    assert waiting.answer is None, "a bet is answered only once the operator answers"
    return ledger.answer(f"debit:{bet_id}")


def test_a_bet_is_a_pending_debit_answered_201_only_on_the_operators_yes(ledger):
    waiting = ledger.send(bet(operator_session="sess-1"), reply_id="r1")
    assert waiting.answer is None and ledger.owed() == {"debit:b1": "debit"}
    call = ledger.look.call("p1", "debit:b1")
    assert call.reply_id == "r1" and call.request.session_token == "sess-1"
    assert (call.request.amount, call.request.currency, call.request.round_id,
            call.request.bet_id) == (3000, "IDR", "R1", "b1")
    assert ledger.bet_of("b1").status == "debiting" and not ledger.published(BETS_PLACED_TOPIC)
    done = ledger.answer("debit:b1", balance=7_000)
    assert (done.answer.status, done.reply_to) == (201, "r1")
    assert done.answer.body["balance_after"] == 7_000
    assert ledger.bet_of("b1").status == "placed" and ledger.owed() == {}
    assert len(ledger.published(BETS_PLACED_TOPIC)) == 1
    records = [OperatorCallRecord.model_validate_json(v)
               for v in ledger.published(WALLET_OPERATOR_CALLS_TOPIC)]
    assert [(r.request.transaction_id, r.answer.outcome) for r in records] == [("debit:b1", "ok")]
    # croupier's account keeps its net at the tables; the balance is the operator's
    assert (ledger.account.balance, ledger.account.operator_balance) == (-3000, 7_000)


@pytest.mark.parametrize(("code", "status"), [
    ("insufficient_funds", 402), ("player_blocked", 403), ("wrong_currency", 409),
    ("session_expired", 401), ("invalid_session", 401)])
def test_a_refused_debit_answers_its_named_error_and_frees_the_spot(ledger, code, status):
    ledger.send(bet(operator_session="sess-1"), reply_id="r1")
    refused = ledger.answer("debit:b1", outcome="refused", error_code=code, balance=None)
    assert (refused.answer.status, refused.answer.body["error"]["code"]) == (status, code)
    assert refused.reply_to == "r1" and ledger.owed() == {}, "a refused debit owes nothing"
    assert ledger.bet_of("b1").status == "debit_failed" and set(ledger.spots.values()) == {0}
    retry = ledger.send(bet(operator_session="sess-1"), reply_id="r2")
    assert (retry.answer.status, retry.answer.body["error"]["code"]) == (status, code)
    assert retry.change is None and not ledger.published(BETS_PLACED_TOPIC)


def test_a_debit_never_answered_is_refused_504_and_rolled_back(ledger):
    ledger.send(bet(operator_session="sess-1"), reply_id="r1")
    silent = ledger.answer("debit:b1", outcome="no_answer", balance=None)
    assert (silent.answer.status, silent.answer.body["error"]["code"]) == (
        504, "operator_wallet_timeout")
    assert ledger.owed() == {"rollback:debit:b1": "rollback"}
    rollback = ledger.look.call("p1", "rollback:debit:b1").request
    assert (rollback.reference_transaction_id, rollback.amount, rollback.session_token) == (
        "debit:b1", 3000, None), "no session on a rollback"
    ledger.answer("rollback:debit:b1", outcome="refused", error_code="transaction_not_found",
                  balance=None)
    assert ledger.owed() == {} and ledger.account.balance == 0


def test_not_found_for_the_rollback_of_an_unanswered_debit_raises_no_money_alarm(
        ledger, caplog):
    """Under `rollback_unknown = not_found` the rollback of a debit that never reached the
    operator is answered 404: expected, no MONEY error. The same 404 for the rollback of a
    debit the operator confirmed is one."""
    ledger.send(bet(operator_session="sess-1"), reply_id="r1")
    ledger.answer("debit:b1", outcome="no_answer", balance=None)
    with caplog.at_level("ERROR"):
        ledger.answer("rollback:debit:b1", outcome="refused",
                      error_code="transaction_not_found", balance=None)
    assert not [r for r in caplog.records if "MONEY" in r.getMessage()]
    placed(ledger, bet_id="b2")
    ledger.send(EndBet(player_id="p1", bet_id="b2", ending="rejected", returned=3000,
                       table_id="T1", round_id="R1"))
    with caplog.at_level("ERROR"):
        ledger.answer("rollback:debit:b2", outcome="refused",
                      error_code="transaction_not_found", balance=None)
    [alarm] = [r.getMessage() for r in caplog.records if "MONEY" in r.getMessage()]
    assert "rollback:debit:b2" in alarm


def test_a_late_or_repeated_answer_changes_nothing(ledger):
    placed(ledger)
    again = ledger.answer("debit:b1", outcome="no_answer")
    assert again.change is None and again.answer is None
    assert ledger.bet_of("b1").status == "placed" and ledger.owed() == {}


def test_a_bet_without_an_operator_session_is_refused_before_any_call(ledger):
    refused = ledger.send(bet(), reply_id="r1")
    assert refused.answer.status == 401 and refused.change is None and ledger.owed() == {}


def test_a_retry_while_the_debit_is_pending_is_told_to_retry(ledger):
    ledger.send(bet(operator_session="sess-1"), reply_id="r1")
    retry = ledger.send(bet(operator_session="sess-1"), reply_id="r2")
    assert retry.answer.status == 503 and retry.change is None
    assert ledger.owed() == {"debit:b1": "debit"}, "one debit, however often it is sent"


def test_deposits_and_withdrawals_are_made_at_the_operator(ledger):
    refused = ledger.send(Deposit(player_id="p1", request_id="d1", amount=100))
    assert refused.answer.body["error"]["code"] == "seamless_wallet" and refused.change is None


def settled(returned: int, settlement_id: str = "settle:b1") -> EndBet:
    return EndBet(player_id="p1", bet_id="b1", ending="settled", returned=returned,
                  settlement_id=settlement_id, table_id="T1", round_id="R1")


def test_a_settlement_owes_one_credit_and_a_lost_bet_a_zero_credit(ledger):
    placed(ledger)
    ledger.send(settled(6000))
    credit = ledger.look.call("p1", "credit:settle:b1").request
    assert (credit.amount, credit.reference_transaction_id, credit.round_closed,
            credit.session_token) == (6000, "debit:b1", True, None)
    assert ledger.send(settled(6000)).change is None, "a redelivered ending owes nothing more"
    ledger.answer("credit:settle:b1", balance=13_000)
    assert ledger.owed() == {} and ledger.account.operator_balance == 13_000

    lost = Seamless()
    lost.send(CreateAccount(player_id="p1", currency="IDR"))
    placed(lost)
    lost.send(settled(0))
    assert lost.owed() == {"credit:settle:b1": "credit"}
    quiet = Seamless()
    quiet.send(CreateAccount(player_id="p1", currency="IDR"))
    placed(quiet)
    quiet.send(settled(0), rules=SeamlessRules(zero_credits=False))
    assert quiet.owed() == {} and quiet.bet_of("b1").status == "settled"


@pytest.mark.parametrize("ending", ["rejected", "voided"])
def test_a_rejected_or_voided_bet_owes_the_rollback_of_its_debit(ledger, ending):
    placed(ledger)
    ledger.send(EndBet(player_id="p1", bet_id="b1", ending=ending, returned=3000,
                       table_id="T1", round_id="R1"))
    assert ledger.owed() == {"rollback:debit:b1": "rollback"}
    assert ledger.account.balance == 0, "croupier's net: the stake came back"


def test_a_corrected_round_reverses_by_rolling_the_credit_back_and_credits_again(ledger):
    placed(ledger)
    ledger.send(settled(6000))
    ledger.answer("credit:settle:b1")
    ledger.send(ReverseSettlement(player_id="p1", bet_id="b1", reversal_id="rev:b1:c1",
                                  settlement_id="settle:b1", amount=6000, table_id="T1",
                                  round_id="R1"))
    rollback = ledger.look.call("p1", "rollback:credit:settle:b1").request
    assert (rollback.reference_transaction_id, rollback.amount) == ("credit:settle:b1", 6000)
    ledger.send(settled(0, settlement_id="settle:b1:c1"))
    assert ledger.owed() == {"rollback:credit:settle:b1": "rollback",
                             "credit:settle:b1:c1": "credit"}, "each a call of its own"


def test_what_is_owed_is_the_fold_of_the_log_and_outlives_the_window():
    """A recovery from the entries alone owes exactly what the live state owed; a pending
    call never expires, an answered one goes with its bet."""
    fold = WalletFold(timedelta(hours=24))
    led = Seamless(fold=fold)
    led.send(CreateAccount(player_id="p1", currency="IDR"))
    placed(led)
    led.send(settled(6000))  # the credit stays owed: the operator never answers it
    led.send(bet(bet_id="b2", operator_session="s"), reply_id="r2")
    led.answer("debit:b2")
    later = NOW + timedelta(days=3)
    led.send(bet(bet_id="b3", operator_session="s"), reply_id="r3", now=later)
    led.answer("debit:b3", now=later)
    assert led.owed() == {"credit:settle:b1": "credit"}
    assert "c/p1/debit:b2" not in led.kv, "an answered call expired with its bet"
    assert pending_calls(fold_all(led.entries, fold).kv) == pending_calls(led.kv)
