"""The replay's view of seamless mode: for every bet, what croupier asked the operator's
wallet and what it answered (`wallet.operator_calls`), checked against what the round's
records call for (docs/decisions/seamless-replay.md).

Pure, like `replay`: hand it the round's `OperatorCallRecord`s and, per bet, the calls its
decision, settlements, corrections and annulment call for (`wanted_calls`); it names each
difference as the replay names its others (`wallet.operator_calls <transaction id>`).

- A placed bet (a decision on `bets.decisions`) was debited at the operator: `debit:<bet>`
  of its stake, answered ok. A bet whose debit was refused or went unanswered was never
  placed (no decision); an unanswered one has the rollback of its debit.
- Each settlement has its credit (`credit:<settlement id>`) of what it returned; a
  settlement that returned 0 may have none (the operator's `zero_credits=false`).
- A rejected or voided bet (and an annulled one, after its reversal) has the rollback of
  its debit (`rollback:debit:<bet>`) of its stake; each reversal the rollback of the credit
  it takes back (`rollback:credit:<settlement id>`), of that credit's amount.
- Every call's id is the one the wallet gives it (`seamless.debit_id`, `credit_id`,
  `rollback_id`): replay builds none of its own.
- A call the records call for with no record is *owed* while its cause (the round's end, a
  correction, an annulment, an unanswered debit) is less than `OWED_WINDOW` before the
  replay: the caller retries credits and rollbacks until answered. Past that, it is a
  difference.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel

from services.operator.replay_difference import Difference
from services.wallet.seamless import credit_id, debit_id, rollback_id
from shared.events.operator_wallet import CallKind, OperatorCallRecord
from shared.events.wallet_events import WalletTransaction, tx_id
from shared.topics import WALLET_OPERATOR_CALLS_TOPIC

# how long after its cause a call may still be unanswered before its absence is a
# difference: the caller retries with backoff capped at 30 s (operator_wallet_retry_max_
# seconds), so about 20 more deliveries; the reader reads `wallet.operator_calls` this much
# further past the round than the other money topics, for the answers that took that long
OWED_WINDOW = timedelta(minutes=10)
CallState = Literal["ok", "refused", "no_answer", "owed", "missing"]


class OperatorCallLine(BaseModel):
    """One call croupier made to the operator's wallet and its answer; or one the round's
    records call for that has no record (`owed` while recent, `missing` past that)."""

    transaction_id: str
    kind: CallKind
    amount: int
    currency: str | None
    reference_transaction_id: str | None = None
    requested_at: datetime | None = None
    outcome: CallState
    http_status: int | None = None
    error_code: str | None = None
    message: str | None = None
    balance: int | None = None  # the player's balance at the operator after it
    attempts: int | None = None
    answered_at: datetime | None = None


class UnplacedBet(BaseModel):
    """A bet croupier asked the operator to debit that was never placed (no decision): its
    debit refused or unanswered, and the calls made for it."""

    bet_id: str
    player_id: str
    stake: int
    currency: str
    outcome: str  # the debit's: refused (code) or no answer
    operator_calls: list[OperatorCallLine]


@dataclass(frozen=True)
class WantedCall:
    """A call the round's records call for: `due_at` is when it came due (None: it is
    recorded with its cause, never owed); `optional`: a credit of 0 the operator may not
    expect, or the rollback of one (wanted only if that credit was made)."""

    transaction_id: str
    kind: CallKind
    amount: int
    reference: str | None
    due_at: datetime | None
    optional: bool = False


@dataclass(frozen=True)
class BetCalls:
    """What one placed bet's records say happened, for `wanted_calls`: its stake; `steps` in
    order, each `("credit", settlement id, amount returned, when due)` for a settlement paid
    or `("reverse", settlement id, 0, when due)` for one taken back; `refund_at`: when its
    stake went back (rejected, voided, or annulled: the rollback of its debit), None if not."""

    bet_id: str
    stake: int
    steps: tuple[tuple[Literal["credit", "reverse"], str, int, datetime], ...] = ()
    refund_at: datetime | None = None


def wanted_calls(bet: BetCalls) -> list[WantedCall]:
    """The calls a placed bet's records call for, in the order they are made: its debit,
    a credit for each settlement, a rollback of the credit for each reversal (of that
    credit's amount), the rollback of its debit when its stake went back."""
    debit = debit_id(bet.bet_id)
    wanted = [WantedCall(debit, "debit", bet.stake, None, None)]
    credited: dict[str, int] = {}
    for step, settlement, amount, due in bet.steps:
        credit = credit_id(settlement)
        if step == "credit":
            credited[settlement] = amount
            wanted.append(WantedCall(credit, "credit", amount, debit, due,
                                     optional=amount == 0))
            continue
        taken = credited.get(settlement, 0)
        wanted.append(WantedCall(rollback_id(credit), "rollback", taken, credit, due,
                                 optional=taken == 0))
    if bet.refund_at is not None:
        wanted.append(WantedCall(rollback_id(debit), "rollback", bet.stake, debit,
                                 bet.refund_at))
    return wanted


class CallBook:
    """The round's calls by bet (player, bet id) and transaction id, each once (a record
    published again is the same call); each check takes its own, and what is left nothing
    called for."""

    def __init__(self, records: Iterable[OperatorCallRecord], player_id: str | None) -> None:
        self.bets: dict[tuple[str, str], dict[str, OperatorCallRecord]] = {}
        for r in records:
            req = r.request
            if player_id is None or req.player_id == player_id:
                self.bets.setdefault((req.player_id, req.bet_id), {}).setdefault(
                    req.transaction_id, r)
        self.seamless = bool(self.bets)

    def take(self, player_id: str, bet_id: str, transaction_id: str
             ) -> OperatorCallRecord | None:
        return self.bets.get((player_id, bet_id), {}).pop(transaction_id, None)

    def of_bet(self, player_id: str, bet_id: str) -> list[OperatorCallRecord]:
        """The calls left for a bet, taken (calls nothing called for)."""
        return list(self.bets.pop((player_id, bet_id), {}).values())


def line_of(record: OperatorCallRecord) -> OperatorCallLine:
    req, ans = record.request, record.answer
    return OperatorCallLine(
        transaction_id=req.transaction_id, kind=req.kind, amount=req.amount,
        currency=req.currency, reference_transaction_id=req.reference_transaction_id,
        requested_at=req.requested_at, outcome=ans.outcome, http_status=ans.http_status,
        error_code=ans.error_code, message=ans.message, balance=ans.balance,
        attempts=ans.attempts, answered_at=ans.answered_at)


def _answer_text(record: OperatorCallRecord) -> str:
    ans = record.answer
    if ans.outcome == "refused":
        return f"refused {ans.error_code or '-'}"
    return ans.outcome.replace("_", " ")


def _where(transaction_id: str) -> str:
    return f"{WALLET_OPERATOR_CALLS_TOPIC} {transaction_id}"


def check_bet(player_id: str, bet_id: str, currency: str, wanted: Sequence[WantedCall],
              book: CallBook, now: datetime, diffs: list[Difference]) -> list[OperatorCallLine]:
    """Each wanted call against its record (answered ok, of the amount, currency and
    reference called for), then the bet's calls nothing called for."""
    lines: list[OperatorCallLine] = []
    made: set[str] = set()
    for want in wanted:
        record = book.take(player_id, bet_id, want.transaction_id)
        if record is None:
            line = _absent(want, currency, made, now, diffs)
            if line is not None:
                lines.append(line)
            continue
        made.add(want.transaction_id)
        lines.append(line_of(record))
        _compare(want, currency, record, diffs)
    return lines + _unwanted(book, player_id, bet_id, "no such call for the bet", diffs)


def _unwanted(book: CallBook, player_id: str, bet_id: str, expected: str,
              diffs: list[Difference]) -> list[OperatorCallLine]:
    """The bet's calls left once its wanted calls were taken: each one a difference."""
    lines = []
    for record in book.of_bet(player_id, bet_id):
        lines.append(line_of(record))
        diffs.append(Difference(where=_where(record.request.transaction_id), expected=expected,
                                recorded=_asked_text(record)))
    return lines


def _asked_text(record: OperatorCallRecord) -> str:
    req = record.request
    return f"{req.kind} {req.amount} {req.currency}: {_answer_text(record)}"


def _absent(want: WantedCall, currency: str, made: set[str], now: datetime,
            diffs: list[Difference]) -> OperatorCallLine | None:
    """A wanted call with no record: nothing (an optional one whose credit was not made),
    owed (its cause is recent), or missing (a difference)."""
    if want.optional and (want.kind == "credit" or want.reference not in made):
        return None
    owed = want.due_at is not None and now - want.due_at < OWED_WINDOW
    if not owed:
        diffs.append(Difference(where=_where(want.transaction_id),
                                expected=f"{want.kind} {want.amount} {currency}, answered ok",
                                recorded="no call recorded" + (
                                    f" within {OWED_WINDOW} of its cause" if want.due_at
                                    else "")))
    return OperatorCallLine(transaction_id=want.transaction_id, kind=want.kind,
                            amount=want.amount, currency=currency,
                            reference_transaction_id=want.reference,
                            outcome="owed" if owed else "missing")


def _compare(want: WantedCall, currency: str, record: OperatorCallRecord,
             diffs: list[Difference], also_ok: str | None = None) -> None:
    """The call is the one wanted (kind, amount, currency, reference), answered ok (or
    refused with the code `also_ok`, a definitive answer as good as a yes)."""
    req, ans = record.request, record.answer
    where = _where(want.transaction_id)
    if (req.kind, req.amount, req.currency) != (want.kind, want.amount, currency):
        diffs.append(Difference(where=where, expected=f"{want.kind} {want.amount} {currency}",
                                recorded=f"{req.kind} {req.amount} {req.currency}"))
    if want.reference and req.reference_transaction_id != want.reference:
        diffs.append(Difference(where=f"{where}: reference", expected=want.reference,
                                recorded=str(req.reference_transaction_id)))
    if ans.outcome != "ok" and not (also_ok and ans.error_code == also_ok):
        why = ("the bet was placed (it has a decision on bets.decisions)"
               if want.kind == "debit" else "the operator's wallet took it")
        diffs.append(Difference(where=where, expected=f"ok: {why}",
                                recorded=_answer_text(record)))


def unplaced(book: CallBook, wallet: Sequence[WalletTransaction], now: datetime,
             diffs: list[Difference]) -> list[UnplacedBet]:
    """The bets debited at the operator that have no decision, once every placed bet took
    its calls: a refused debit's bet (nothing more called for), an unanswered one's (the
    rollback of its debit, owed for `OWED_WINDOW` after the timeout); a debit answered ok
    without its bet's decision, or a stake debited on `wallet.transactions` for a bet never
    placed, is a difference."""
    debited = {(tx.player_id, tx.cause_id) for tx in wallet if tx.kind == "stake_debit"}
    debits = [r for calls in book.bets.values() for r in calls.values()
              if r.request.kind == "debit"]
    bets: list[UnplacedBet] = []
    for debit in sorted(debits, key=lambda r: r.request.requested_at):
        req, ans = debit.request, debit.answer
        book.take(req.player_id, req.bet_id, req.transaction_id)
        lines = [line_of(debit)]
        if ans.outcome == "ok":
            diffs.append(Difference(where=_where(req.transaction_id),
                                    expected="a decision on bets.decisions for a bet the "
                                             "operator's wallet debited",
                                    recorded=f"{_asked_text(debit)}, no decision"))
        if (req.player_id, req.bet_id) in debited:
            diffs.append(Difference(where=f"wallet.transactions "
                                          f"{tx_id('stake_debit', req.bet_id)}",
                                    expected=f"no stake debit: the operator's wallet answered "
                                             f"the debit {_answer_text(debit)}",
                                    recorded="stake debited"))
        if ans.outcome == "no_answer":
            lines += _rollback_of_unanswered(debit, book, now, diffs)
        lines += _unwanted(book, req.player_id, req.bet_id,
                           "no such call for a bet never placed", diffs)
        bets.append(UnplacedBet(bet_id=req.bet_id, player_id=req.player_id, stake=req.amount,
                                currency=req.currency, outcome=_answer_text(debit),
                                operator_calls=lines))
    return bets


def _rollback_of_unanswered(debit: OperatorCallRecord, book: CallBook, now: datetime,
                            diffs: list[Difference]) -> list[OperatorCallLine]:
    """An unanswered debit's rollback: ok, or refused `transaction_not_found` (the operator
    never recorded the debit and answers so: `operator_wallet_rollback_unknown`)."""
    req = debit.request
    want = WantedCall(rollback_id(req.transaction_id), "rollback", req.amount,
                      req.transaction_id, debit.answer.answered_at)
    record = book.take(req.player_id, req.bet_id, want.transaction_id)
    if record is None:
        line = _absent(want, req.currency, set(), now, diffs)
        return [line] if line is not None else []
    _compare(want, req.currency, record, diffs, also_ok="transaction_not_found")
    return [line_of(record)]


def leftovers(book: CallBook, diffs: list[Difference]) -> None:
    """Calls of the round that no bet read called for (a bet with no decision and no debit)."""
    for record in [r for key in list(book.bets) for r in book.of_bet(*key)]:
        req = record.request
        diffs.append(Difference(where=_where(req.transaction_id),
                                expected="no such call: no bet of the round calls for it",
                                recorded=f"{_asked_text(record)} (bet {req.bet_id})"))


def call_text(line: OperatorCallLine) -> str:
    """`credit credit:settle:b1 1,950 IDR (requested 09:00:31.000) -> ok, balance 100,950,
    1 attempt, answered 09:00:31.040`."""
    asked = f"{line.kind} {line.transaction_id} {line.amount:,} {line.currency or ''}".rstrip()
    if line.requested_at is not None:
        asked += f" (requested {line.requested_at:%H:%M:%S.%f}"[:-3] + ")"
    if line.outcome == "owed":
        return f"{asked} -> owed (no answer recorded yet)"
    if line.outcome == "missing":
        return f"{asked} -> no call recorded"
    told = "ok" if line.outcome == "ok" else "no answer" if line.outcome == "no_answer" \
        else f"refused {line.error_code or '-'}" + (f" ({line.http_status})"
                                                   if line.http_status else "")
    if line.balance is not None:
        told += f", balance {line.balance:,}"
    if line.attempts is not None:
        told += f", {line.attempts} attempt{'s' if line.attempts != 1 else ''}"
    if line.answered_at is not None:
        given = "given up" if line.outcome == "no_answer" else "answered"
        told += f", {given} {line.answered_at:%H:%M:%S.%f}"[:-3]
    return f"{asked} -> {told}"

