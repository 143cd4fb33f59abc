"""What one command does to one account in seamless mode (`CROUPIER_WALLET_MODE=seamless`):
the operator's wallet holds the balance; croupier's ledger keeps the proof.

Pure, like `handlers` (whose checks and movements it reuses): every call croupier owes the
operator's wallet is decided here and written in the command's ledger entry, pending
(`OperatorCall`); its caller (`services.wallet.operator_calls`) delivers it and
puts the answer back on the commands topic (`OperatorAnswered`), which is decided here too
and written over the pending call. So what is owed is always in the log, and a replay shows
for every bet what croupier asked and what the operator said (docs/decisions/seamless.md).

- A bet: the door's and the round's checks as in transfer mode, then a pending debit (the
  bet's record `debiting`, its spot reserved); no answer yet. The operator's answer
  answers the bet: a yes debits croupier's account (its net at the tables: no funds check
  here, the operator made it), publishes the funded bet and answers 201; a no answers its
  named 4xx and frees the spot; no answer in time answers 504 and owes a rollback.
- An ending: the movement as in transfer mode, and its call: a credit for a settlement (0
  for a lost bet when the operator expects one), a rollback of the debit for a rejected
  or voided bet. A reversal (a corrected or annulled round): a rollback of the credit it
  takes back. Each call has an id of its own, deterministic (`transaction_id_of`).
- Deposits and withdrawals are refused: they are made at the operator.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import services.wallet.handlers as handlers
from services.wallet.commands import (
    CreateAccount,
    Deposit,
    EndBet,
    Envelope,
    OperatorAnswered,
    PlaceBet,
    ReverseSettlement,
    Withdraw,
)
from services.wallet.handlers import Answer, CommandResult, no_account, spot_key
from services.wallet.ledger import Account, Applied, BetRecord, Movement, apply
from services.wallet.ledger_fold import Change, Lookups
from shared.events.bet_events import BetPlaced
from shared.events.operator_wallet import (
    ERROR_CODES,
    CallKind,
    OperatorAnswer,
    OperatorCall,
    WalletRequest,
    transaction_id_of,
)
from shared.events.wallet_events import tx_id
from shared.events.wallet_ledger import BetFailure, SpotTotal

log = logging.getLogger(__name__)

# refusals that are croupier's or the integration's fault, not the player's: answered 502
_OUR_FAULT = frozenset({"bad_signature", "bad_request", "transaction_conflict",
                        "transaction_rolled_back", "transaction_not_found"})


@dataclass(frozen=True)
class SeamlessRules:
    """What differs between operators' wallets (settings `operator_wallet_*`)."""

    zero_credits: bool = True  # a lost bet closes its round with a credit of 0


def debit_id(bet_id: str) -> str:
    return transaction_id_of("debit", bet_id)


def credit_id(settlement_id: str) -> str:
    return transaction_id_of("credit", settlement_id)


def rollback_id(undone: str) -> str:
    return transaction_id_of("rollback", undone)


def _request(kind: CallKind, transaction_id: str, account: Account, amount: int,
             table_id: str, round_id: str, bet_id: str, now: datetime, **extra: Any
             ) -> WalletRequest:
    return WalletRequest(transaction_id=transaction_id, kind=kind, player_id=account.player_id,
                         amount=amount, currency=account.currency, table_id=table_id,
                         round_id=round_id, bet_id=bet_id, requested_at=now, **extra)


def _rollback(account: Account, undone: WalletRequest, now: datetime) -> OperatorCall:
    return OperatorCall(request=_request(
        "rollback", rollback_id(undone.transaction_id), account, undone.amount,
        undone.table_id, undone.round_id, undone.bet_id, now,
        reference_transaction_id=undone.transaction_id))


def place_bet(account: Account | None, cmd: PlaceBet, reply_id: str | None, now: datetime,
              look: Lookups) -> CommandResult:
    """A pending debit at the operator; the bet is answered when the operator answers."""
    if account is None:
        return CommandResult(no_account(cmd.player_id))
    checked = handlers.bet_checks(account, cmd, look)
    if isinstance(checked, CommandResult):
        return checked
    key, before = checked
    if not cmd.operator_session:
        return CommandResult(Answer.error(
            401, "operator_session_required", "this wallet settles against the operator's "
            "wallet: a bet must carry the player's operator session (operator_session)"))
    placing = BetPlaced(bet_id=cmd.bet_id, player_id=cmd.player_id, table_id=cmd.table_id,
                        round_id=cmd.round_id, bet=cmd.bet, position=cmd.position,
                        stake=cmd.stake, currency=account.currency,
                        debit_tx_id=tx_id(*handlers.stake_movement(cmd.bet_id)), placed_at=now,
                        opened_seq=cmd.opened_seq)
    record = BetRecord(fingerprint=cmd.fingerprint(), table_id=cmd.table_id,
                       round_id=cmd.round_id, stake=cmd.stake, status="debiting", debit_seq=0,
                       placed_at=now, placing=placing)
    debit = OperatorCall(reply_id=reply_id, request=_request(
        "debit", debit_id(cmd.bet_id), account, cmd.stake, cmd.table_id, cmd.round_id,
        cmd.bet_id, now, session_token=cmd.operator_session))
    return CommandResult(None, Change("place_bet", account, bet_id=cmd.bet_id, bet=record,
                                      spot=SpotTotal(key=key, total=before + cmd.stake),
                                      calls=(debit,)))


def placed_body(placed: BetPlaced, balance_after: int) -> dict[str, Any]:
    """A placed bet's answer (the same shape as transfer mode's)."""
    return {"bet": {"bet_id": placed.bet_id, "table_id": placed.table_id,
                    "round_id": placed.round_id, "bet": placed.bet,
                    "position": placed.position, "stake": placed.stake,
                    "placed_at": placed.placed_at.isoformat()},
            "debit_tx_id": placed.debit_tx_id, "balance_after": balance_after,
            "currency": placed.currency}


def _refusal_of(answer: OperatorAnswer) -> BetFailure:
    """What the player is told of a debit the operator refused, or never answered."""
    if answer.outcome == "no_answer":
        return BetFailure(status=504, code="operator_wallet_timeout", message=(
            "the operator's wallet did not answer the bet's debit in time; the bet is not "
            "placed and the debit is rolled back" + (f" ({answer.message})"
                                                     if answer.message else "")))
    code = answer.error_code or "operator_wallet_refused"
    status = 502 if code in _OUR_FAULT else ERROR_CODES.get(code, 422)
    return BetFailure(status=status, code=code, message=(
        f"the operator's wallet refused the debit: {answer.message or code}"))


def operator_answered(account: Account | None, cmd: OperatorAnswered, now: datetime,
                      look: Lookups) -> CommandResult:
    """Write the answer over its pending call; a debit's answer is the bet's."""
    call = look.call(cmd.player_id, cmd.transaction_id) if account else None
    if account is None or call is None or not call.pending:
        return CommandResult(None)  # answered before (a redelivery, a slower worker's)
    if cmd.answer.outcome == "no_answer" and call.request.kind != "debit":
        return CommandResult(None)  # a credit or rollback stays owed until answered
    answered = call.model_copy(update={"answer": cmd.answer})
    if cmd.answer.balance is not None:
        account = account.model_copy(update={"operator_balance": cmd.answer.balance})
    if call.request.kind != "debit":
        if cmd.answer.outcome == "refused" and not _unknown_rollback(call, cmd, look):
            log.error("MONEY: the operator's wallet refused %s of %r (%s: %s); reconcile",
                      call.request.transaction_id, cmd.player_id, cmd.answer.error_code,
                      cmd.answer.message)
        return CommandResult(None, Change("operator_answered", account, calls=(answered,)))
    return _debit_answered(account, call, answered, now, look)


def _unknown_rollback(call: OperatorCall, cmd: OperatorAnswered, look: Lookups) -> bool:
    """A rollback answered "not found" of a call the operator never confirmed (a debit with
    no answer): what an operator answers under `rollback_unknown = not_found`, no alarm."""
    reference = call.request.reference_transaction_id
    if call.request.kind != "rollback" or cmd.answer.error_code != "transaction_not_found" \
            or reference is None:
        return False
    undone = look.call(cmd.player_id, reference)
    return undone is None or undone.answer is None or undone.answer.outcome != "ok"


def _debit_answered(account: Account, call: OperatorCall, answered: OperatorCall,
                    now: datetime, look: Lookups) -> CommandResult:
    request = call.request
    record = look.bet_of(account.player_id, request.bet_id)
    if record is None or record.status != "debiting" or record.placing is None:
        raise LookupError(f"the debit {request.transaction_id} of {account.player_id!r} has "
                          "no bet waiting for it")  # the fold writes both at once
    placing = record.placing
    answer = answered.answer
    assert answer is not None
    if answer.outcome == "ok":
        stake = handlers.stake_movement(request.bet_id)
        result = apply(account, Movement(*stake, request.amount, request.table_id,
                                         request.round_id), now,
                       look.seq_of(account.player_id, tx_id(*stake)), covered_elsewhere=True)
        if not isinstance(result, Applied) or result.tx is None:
            raise LookupError(f"bet {request.bet_id!r} was debited before its debit's answer")
        balance = answer.balance if answer.balance is not None else result.tx.balance_after
        placed = placing.model_copy(update={"placed_at": now})
        bet = record.model_copy(update={"status": "placed", "debit_seq": result.seq,
                                        "debit_balance_after": balance, "placing": None})
        return CommandResult(
            Answer(201, placed_body(placed, balance)),
            Change("operator_answered", result.account, tx=result.tx, bet_id=request.bet_id,
                   bet=bet, placed=placed, calls=(answered,)), reply_to=call.reply_id)
    failure = _refusal_of(answer)
    key = spot_key(account.player_id, placing.table_id, placing.round_id, placing.bet,
                   placing.position)
    spot = SpotTotal(key=key, total=max(0, look.spot_total(key) - request.amount))
    bet = record.model_copy(update={"status": "debit_failed", "failure": failure,
                                    "placing": None})
    calls = (answered,) if answer.outcome == "refused" else (
        answered, _rollback(account, request, now))
    return CommandResult(Answer.error(failure.status, failure.code, failure.message),
                         Change("operator_answered", account, bet_id=request.bet_id, bet=bet,
                                spot=spot, calls=calls), reply_to=call.reply_id)


def _with_call(result: CommandResult, call: OperatorCall | None) -> CommandResult:
    if result.change is None or call is None:
        return result
    change = result.change
    return CommandResult(result.answer, Change(
        change.command, change.account, tx=change.tx, bet_id=change.bet_id, bet=change.bet,
        spot=change.spot, placed=change.placed, calls=change.calls + (call,)),
        ended_now=result.ended_now, breach=result.breach, dead_letter=result.dead_letter)


def end_bet(account: Account | None, cmd: EndBet, now: datetime, look: Lookups,
            rules: SeamlessRules) -> CommandResult:
    """The ending's movement (transfer mode's rules), and what it owes the operator."""
    record = look.bet_of(cmd.player_id, cmd.bet_id) if account else None
    if account is not None and record is not None and record.status in ("debiting",
                                                                         "debit_failed"):
        log.error("MONEY: %s ending for bet %r of %r, which was never placed (%s)",
                  cmd.ending, cmd.bet_id, cmd.player_id, record.status)
        return CommandResult(Answer.error(409, "unknown_bet", "bet was never placed"),
                             breach="ending_for_unknown_bet")
    result = handlers.end_bet(account, cmd, now, look)
    if account is None or record is None or not result.ended_now or result.change is None:
        return result
    debit = debit_id(cmd.bet_id)
    where = (cmd.table_id, cmd.round_id, cmd.bet_id, now)
    if cmd.ending == "settled":
        if cmd.returned == 0 and not rules.zero_credits:
            return result
        call = OperatorCall(request=_request(
            "credit", credit_id(cmd.settlement_id or cmd.bet_id), account, cmd.returned,
            *where, reference_transaction_id=debit, round_closed=True))
    else:  # rejected or voided: the stake goes back
        call = OperatorCall(request=_request(
            "rollback", rollback_id(debit), account, cmd.returned, *where,
            reference_transaction_id=debit))
    return _with_call(result, call)


def reverse_settlement(account: Account | None, cmd: ReverseSettlement, now: datetime,
                       look: Lookups) -> CommandResult:
    """The reversal's movement, and the rollback of the credit it takes back (if that
    settlement made one: a lost bet's credit of 0 is rolled back too, so the operator's
    round is reopened as croupier's is)."""
    result = handlers.reverse_settlement(account, cmd, now, look)
    if account is None or result.change is None:
        return result
    credit = look.call(cmd.player_id, credit_id(cmd.settlement_id))
    if credit is None or look.call(cmd.player_id, rollback_id(
            credit.request.transaction_id)) is not None:
        return result
    return _with_call(result, _rollback(account, credit.request, now))


def handle(env: Envelope, now: datetime, look: Lookups, rules: SeamlessRules
           ) -> CommandResult:
    """The seamless handler of the envelope's command."""
    cmd = env.command
    account = look.account(cmd.player_id)
    if isinstance(cmd, CreateAccount):
        return handlers.create_account(account, cmd)
    if isinstance(cmd, Deposit | Withdraw):
        return CommandResult(Answer.error(
            409, "seamless_wallet", f"this wallet settles against the operator's wallet: "
            f"{cmd.type}s are made there, not here"))
    if isinstance(cmd, PlaceBet):
        return place_bet(account, cmd, env.reply_id, now, look)
    if isinstance(cmd, OperatorAnswered):
        return operator_answered(account, cmd, now, look)
    if isinstance(cmd, ReverseSettlement):
        return reverse_settlement(account, cmd, now, look)
    return end_bet(account, cmd, now, look, rules)
