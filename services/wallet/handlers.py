"""What one command does to one account: the answer, and the change to write as one
ledger entry (`services.wallet.ledger_fold.Change`).

Pure apart from the point reads the caller hands in (`Lookups`, over the fold of the
wallet's own log): a tx id's seq, a transaction by seq, a bet's record, a spot's total,
each one key in the player's partition. So the cost of a command does not depend on the
player's history. A command applied before (the same request id, bet id or settlement)
changes nothing and is answered as its first attempt was: the first attempt's entry is
in the log, and its outputs are published from there (the outbox), whatever happened to
the worker that wrote it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

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
from services.wallet.ledger import (
    Account,
    Applied,
    BetRecord,
    LedgerRefusal,
    Movement,
    SpotTotal,
    apply,
)
from services.wallet.ledger_fold import Change, Lookups
from shared.bets import MAIN_BETS
from shared.events.bet_events import BetPlaced
from shared.events.wallet_events import TxKind, WalletTransaction, tx_id
from shared.settlement import Bet, BetError, check_round_rules

__all__ = ["Answer", "CommandResult", "LateEnding", "Lookups", "account_body", "bet_checks",
           "handle", "no_account", "spot_key"]

log = logging.getLogger(__name__)


def spot_key(player_id: str, table_id: str, round_id: str, bet: str,
             position: int | str | None) -> str:
    """A player's spot in a round (table and round ids and bet names hold no '/', so the
    key reads one way even when the player id does)."""
    return f"{player_id}/{table_id}/{round_id}/{bet}/{'-' if position is None else position}"


@dataclass(frozen=True)
class Answer:
    status: int
    body: dict[str, Any]

    @classmethod
    def error(cls, status: int, code: str, message: str) -> Answer:
        return cls(status, {"error": {"code": code, "message": message}})


@dataclass(frozen=True)
class CommandResult:
    # None: no one is answered now (seamless mode: a bet waits for the operator's debit)
    answer: Answer | None
    change: Change | None = None  # None: nothing changed (a refusal or a duplicate)
    ended_now: bool = False  # a bet ended by this command (not a redelivery of its end)
    breach: str | None = None  # a money invariant this command would have broken
    dead_letter: str | None = None  # refused for good: the command goes to dead.letters
    # whose waiter the answer is for, if not the command's own (seamless mode: the
    # operator's answer to a debit answers the bet's request)
    reply_to: str | None = None

    @property
    def txs(self) -> list[WalletTransaction]:
        """The new movement, if any (a list: the metrics count each)."""
        return [self.change.tx] if self.change is not None and self.change.tx else []


def no_account(player_id: str) -> Answer:
    return Answer.error(404, "unknown_account", f"no account for player {player_id!r}")


def account_body(account: Account) -> dict[str, Any]:
    """An account as its player sees it. Seamless mode (the account carries the operator's
    balance): the operator's balance as it reported it last, and croupier's net apart."""
    if account.operator_balance is not None:
        return {"player_id": account.player_id, "currency": account.currency,
                "balance": account.operator_balance, "tx_count": account.tx_count,
                "net_at_tables": account.balance}
    return {"player_id": account.player_id, "currency": account.currency,
            "balance": account.balance, "tx_count": account.tx_count}


def create_account(account: Account | None, cmd: CreateAccount) -> CommandResult:
    if account is None:
        new = Account(player_id=cmd.player_id, currency=cmd.currency)
        return CommandResult(Answer(201, account_body(new)), Change("create_account", new))
    if account.currency != cmd.currency:
        return CommandResult(Answer.error(409, "account_exists",
                                          f"player {cmd.player_id!r} already has a "
                                          f"{account.currency} account"))
    return CommandResult(Answer(200, account_body(account)))


def _apply(account: Account, movement: Movement, now: datetime, look: Lookups
           ) -> Applied | LedgerRefusal:
    return apply(account, movement, now, look.seq_of(account.player_id, movement.tx_id))


def _tx_of(account: Account, result: Applied, look: Lookups) -> WalletTransaction:
    """The movement's transaction: new, or the one its first application wrote."""
    if result.tx is not None:
        return result.tx
    stored = look.tx_at(account.player_id, result.seq)
    if stored is None:  # the fold writes both keys from one entry: never apart
        raise LookupError(f"transaction {result.seq} of {account.player_id!r} is missing "
                          "from the folded history")
    return stored


def _refused(result: LedgerRefusal) -> CommandResult:
    return CommandResult(Answer.error(402 if result.code == "insufficient_funds" else 422,
                                      result.code, result.message))


def operator_movement(account: Account | None, cmd: Deposit | Withdraw, now: datetime,
                      look: Lookups) -> CommandResult:
    if account is None:
        return CommandResult(no_account(cmd.player_id))
    result = _apply(account, Movement(cmd.type, cmd.request_id, cmd.amount), now, look)
    if not isinstance(result, Applied):
        return _refused(result)
    tx = _tx_of(account, result, look)
    if result.duplicate and (tx.kind != cmd.type or tx.amount != cmd.amount):
        return CommandResult(Answer.error(409, "request_id_conflict",
                                          f"request {cmd.request_id!r} was already used for a "
                                          f"{tx.kind} of {tx.amount}"))
    body = {"transaction": tx.model_dump(mode="json"), "balance": tx.balance_after}
    if result.duplicate:
        return CommandResult(Answer(200, body))
    return CommandResult(Answer(201, body), Change(cmd.type, result.account, tx=tx))


def bet_body(bet_id: str, cmd: PlaceBet, record: BetRecord, debit_tx_id: str,
             balance_after: int, currency: str) -> dict[str, Any]:
    return {"bet": {"bet_id": bet_id, "table_id": cmd.table_id, "round_id": cmd.round_id,
                    "bet": cmd.bet, "position": cmd.position, "stake": cmd.stake,
                    "placed_at": record.placed_at.isoformat()},
            "debit_tx_id": debit_tx_id, "balance_after": balance_after, "currency": currency}


def _retry_body(account: Account, cmd: PlaceBet, record: BetRecord, look: Lookups
                ) -> dict[str, Any]:
    """A bet placed before, answered as it was: from its record (which outlives its debit's
    place in the history: the history expires oldest first, the bet with its last change),
    or, for a record written before it said its balance after, from the debit itself."""
    debit_tx_id = tx_id(*stake_movement(cmd.bet_id))
    if record.debit_balance_after is not None:
        return bet_body(cmd.bet_id, cmd, record, debit_tx_id, record.debit_balance_after,
                        account.currency)
    debit = look.tx_at(cmd.player_id, record.debit_seq)
    if debit is None:
        raise LookupError(f"the debit of bet {cmd.bet_id!r} is missing from the history")
    return bet_body(cmd.bet_id, cmd, record, debit.tx_id, debit.balance_after, debit.currency)


def place_bet(account: Account | None, cmd: PlaceBet, now: datetime, look: Lookups
              ) -> CommandResult:
    """Debit the stake once per bet id and publish the funded bet. A bet id placed before
    is answered as it was, whatever the door or the round says now."""
    if account is None:
        return CommandResult(no_account(cmd.player_id))
    checked = bet_checks(account, cmd, look)
    if isinstance(checked, CommandResult):
        return checked
    key, before = checked
    movement = Movement(*stake_movement(cmd.bet_id), cmd.stake, cmd.table_id, cmd.round_id)
    result = _apply(account, movement, now, look)
    if not isinstance(result, Applied):
        return _refused(result)
    if result.duplicate:  # a debit without its bet record: the fold writes both at once
        raise LookupError(f"bet {cmd.bet_id!r} was debited but has no record")
    debit = _tx_of(account, result, look)
    record = BetRecord(fingerprint=cmd.fingerprint(), table_id=cmd.table_id,
                       round_id=cmd.round_id, stake=cmd.stake, debit_seq=result.seq,
                       placed_at=now, debit_balance_after=debit.balance_after)
    placed = BetPlaced(bet_id=cmd.bet_id, player_id=cmd.player_id, table_id=cmd.table_id,
                       round_id=cmd.round_id, bet=cmd.bet, position=cmd.position,
                       stake=cmd.stake, currency=account.currency, debit_tx_id=debit.tx_id,
                       placed_at=now, opened_seq=cmd.opened_seq)
    change = Change("place_bet", result.account, tx=debit, bet_id=cmd.bet_id, bet=record,
                    spot=SpotTotal(key=key, total=before + cmd.stake), placed=placed)
    return CommandResult(Answer(201, bet_body(cmd.bet_id, cmd, record, debit.tx_id,
                                              debit.balance_after, debit.currency)), change)


def bet_checks(account: Account, cmd: PlaceBet, look: Lookups
               ) -> CommandResult | tuple[str, int]:
    """A bet's answer if it was placed before or is refused before any money moves (the
    door, the round's rules); else its spot's key and the player's total on it so far."""
    existing = look.bet_of(cmd.player_id, cmd.bet_id)
    if existing is not None:
        if existing.fingerprint != cmd.fingerprint():
            return CommandResult(Answer.error(409, "bet_id_conflict",
                                              f"bet {cmd.bet_id!r} was already placed with "
                                              "different table, round, bet, position or stake"))
        if existing.failure is not None:  # seamless: the operator refused it, or was silent
            failure = existing.failure
            return CommandResult(Answer.error(failure.status, failure.code, failure.message))
        if existing.status == "debiting":
            return CommandResult(Answer.error(
                503, "debit_in_progress", f"bet {cmd.bet_id!r} waits for the operator's "
                "wallet to answer its debit; retry (the same id is safe)"))
        return CommandResult(Answer(200, _retry_body(account, cmd, existing, look)))
    if cmd.door_refusal is not None:  # the door's verdict binds only a bet never placed
        refusal = cmd.door_refusal
        return CommandResult(Answer.error(refusal.status, refusal.code, refusal.message))
    key = spot_key(cmd.player_id, cmd.table_id, cmd.round_id, cmd.bet, cmd.position)
    before = look.spot_total(key)
    refused = _round_rules(cmd, account.currency, before, look)
    if refused is not None:
        return CommandResult(refused)
    return key, before


def _round_rules(cmd: PlaceBet, currency: str, before: int, look: Lookups) -> Answer | None:
    """Seed 002 at the wallet's door, in the agent (one player's bets in order, so two
    bets sent at once cannot both pass): `settlement.check_round_rules` with the rules the
    door read into the command. Advisory like the rest of the door: bet-settlement's
    decision binds."""
    has_main = not cmd.needs_main_bet or any(
        look.spot_total(spot_key(cmd.player_id, cmd.table_id, cmd.round_id, main, None)) > 0
        for main in MAIN_BETS)
    try:
        check_round_rules(Bet(bet=cmd.bet, position=cmd.position, stake=cmd.stake), currency,
                          cmd.spot_max, before, cmd.needs_main_bet, has_main)
    except BetError as refused:
        return Answer.error(422, refused.code, str(refused))
    return None


class LateEnding(Exception):
    """An ending or a reversal of a bet whose record the wallet no longer holds (it expired
    with the player's older history): refused, dead-lettered, nothing moved."""


def _expired(cmd: EndBet | ReverseSettlement, look: Lookups) -> CommandResult | None:
    """The refusal of a bet's ending or reversal when the bet's record may have expired:
    the player's history before `oldest_held_seq` did, and a bet's record and its movements
    expire together, never before its debit (docs/decisions/wallet-window.md). None when
    nothing of the player's expired (the bet was never debited: a breach, as ever)."""
    oldest = look.oldest_held_seq(cmd.player_id)
    if oldest <= 1:
        return None
    if isinstance(cmd, ReverseSettlement):
        what, movement = f"reversal {cmd.reversal_id}", tx_id(*reversal_movement(cmd.reversal_id))
    else:
        what = f"{cmd.ending} ending"
        movement = tx_id(*ending_movement(cmd.ending, cmd.bet_id, cmd.settlement_id))
    amount = cmd.amount if isinstance(cmd, ReverseSettlement) else cmd.returned
    message = (f"bet_record_expired: the {what} of bet {cmd.bet_id!r} of player "
               f"{cmd.player_id!r} ({amount} minor units) came after the wallet stopped "
               f"holding the bet (its movements before seq {oldest} expired: the archive of "
               f"wallet.transactions has them). Nothing moved. If the archive holds "
               f"{movement} it was applied before; otherwise apply it by hand.")
    log.error("MONEY: %s", message)
    return CommandResult(Answer.error(409, "bet_record_expired", message), dead_letter=message)


def end_bet(account: Account | None, cmd: EndBet, now: datetime, look: Lookups
            ) -> CommandResult:
    """Refund a rejected or voided bet, pay a settled one: once, whatever the redelivery."""
    record = look.bet_of(cmd.player_id, cmd.bet_id) if account else None
    if account is not None and record is None and (late := _expired(cmd, look)) is not None:
        return late
    if account is None or record is None:
        log.error("MONEY: %s for bet %r of player %r, but the wallet never debited it",
                  cmd.ending, cmd.bet_id, cmd.player_id)
        return CommandResult(Answer.error(409, "unknown_bet", "bet was never debited"),
                             breach="ending_for_unknown_bet")
    annulled = record.status == "reversed" and cmd.ending == "voided"  # refund after reversal
    # a corrected round settles the bet again after its reversal, under a settlement id of
    # its own (the reversed settlement, seen again, changes nothing)
    again = record.status == "reversed" and cmd.ending == "settled" and \
        cmd.settlement_id is not None and cmd.settlement_id != record.settlement_id
    if record.status == "reversed" and cmd.ending == "settled" and not again:
        return CommandResult(Answer(200, {"bet_id": cmd.bet_id, "status": "reversed"}))
    # annulled (reversed, then refunded): the settlement it took back, seen again, is
    # history, not a second ending; the bet's standing answer is its annulment
    if record.status == "voided" and cmd.ending == "settled" and \
            record.settlement_id is not None and cmd.settlement_id == record.settlement_id:
        return CommandResult(Answer(200, {"bet_id": cmd.bet_id, "status": "voided"}))
    if record.status not in ("placed", cmd.ending) and not (annulled or again):
        log.error("MONEY: bet %r already ended %s; refusing to also end it %s",
                  cmd.bet_id, record.status, cmd.ending)
        return CommandResult(Answer.error(409, "bet_already_ended", record.status),
                             breach="bet_ended_twice")
    ended_now = record.status == "placed" or annulled or again
    answer = Answer(200, {"bet_id": cmd.bet_id, "status": cmd.ending})
    ended = record.model_copy(update={"status": cmd.ending} | (
        {"settlement_id": cmd.settlement_id} if cmd.ending == "settled" else {}))
    if cmd.returned == 0:
        change = Change("end_bet", account, bet_id=cmd.bet_id, bet=ended) if ended_now else None
        return CommandResult(answer, change, ended_now=ended_now)
    kind, cause = ending_movement(cmd.ending, cmd.bet_id, cmd.settlement_id)
    movement = Movement(kind, cause, cmd.returned, cmd.table_id, cmd.round_id)
    result = _apply(account, movement, now, look)
    assert isinstance(result, Applied), "credits are never refused"
    breach = None
    if result.duplicate:  # (a settlement again whose credit is in: seen before, not new)
        # the credit's place in the history may have expired before the bet (its tx id
        # lives as long as the bet): then there is nothing left to compare the amount with
        first = look.tx_at(account.player_id, result.seq)
        if first is not None and first.amount != cmd.returned:
            log.error("MONEY: %s of bet %r asked again with %d, but %s already credited %d; "
                      "the first stands", cmd.ending, cmd.bet_id, cmd.returned, first.tx_id,
                      first.amount)
            breach = "tx_id_conflict"
        change = Change("end_bet", account, bet_id=cmd.bet_id, bet=ended) \
            if ended_now and not again else None
    else:
        change = Change("end_bet", result.account, tx=_tx_of(account, result, look),
                        bet_id=cmd.bet_id, bet=ended if ended_now else None)
    return CommandResult(answer, change, ended_now=ended_now, breach=breach)


def reverse_settlement(account: Account | None, cmd: ReverseSettlement, now: datetime,
                       look: Lookups) -> CommandResult:
    """Take a settled bet's return back (a management void after completion), once: a
    `payout_reversal` of what the settlement returned, applied in full even when the
    balance cannot cover it (docs/decisions/acceptance.md); the bet's refund follows."""
    record = look.bet_of(cmd.player_id, cmd.bet_id) if account else None
    if account is not None and record is None and (late := _expired(cmd, look)) is not None:
        return late
    if account is None or record is None or record.status not in ("settled", "reversed",
                                                                   "voided"):
        status = record.status if record else "unknown"
        log.error("MONEY: reversal %s of bet %r of player %r, whose bet is %s",
                  cmd.reversal_id, cmd.bet_id, cmd.player_id, status)
        return CommandResult(Answer.error(409, "not_settled", f"bet is {status}"),
                             breach="reversal_of_unsettled_bet")
    # the settlement it takes back is the one standing (not an earlier one, seen again)
    first = record.status == "settled" and record.settlement_id in (None, cmd.settlement_id)
    reversed_bet = record.model_copy(update={"status": "reversed"}) if first else None
    answer = Answer(200, {"bet_id": cmd.bet_id, "status": "reversed"})
    if cmd.amount == 0:  # a lost bet returned nothing: nothing to take back
        change = Change("reverse_settlement", account, bet_id=cmd.bet_id,
                        bet=reversed_bet) if first else None
        return CommandResult(answer, change)
    movement = Movement(*reversal_movement(cmd.reversal_id), cmd.amount, cmd.table_id,
                        cmd.round_id)
    result = _apply(account, movement, now, look)
    assert isinstance(result, Applied), "a reversal is never refused"
    if result.duplicate:
        change = Change("reverse_settlement", account, bet_id=cmd.bet_id,
                        bet=reversed_bet) if first else None
        return CommandResult(answer, change)
    tx = _tx_of(account, result, look)
    if result.account.balance < 0:
        log.warning("MONEY: reversal %s left player %r at %d (the payout was spent); reported",
                    cmd.reversal_id, cmd.player_id, result.account.balance)
    return CommandResult(answer, Change("reverse_settlement", result.account, tx=tx,
                                        bet_id=cmd.bet_id, bet=reversed_bet))


def stake_movement(bet_id: str) -> tuple[TxKind, str]:
    """(kind, cause) of the debit a funded bet's stake moves (its tx id is `tx_id(kind,
    cause)`), in transfer and seamless mode alike; the operator's replay looks for it by it."""
    return "stake_debit", bet_id


def ending_movement(ending: str, bet_id: str, settlement_id: str | None
                    ) -> tuple[TxKind, str]:
    """(kind, cause) of the credit a bet's ending moves (its tx id is `tx_id(kind, cause)`):
    a settled bet's payout, by its settlement; a rejected or voided bet's refund, by the bet
    (an annulment's refund too: an ending `voided`). The operator's replay looks for the
    movement by it."""
    if ending == "settled":
        return "payout", settlement_id or bet_id
    return "bet_refund", bet_id


def reversal_movement(reversal_id: str) -> tuple[TxKind, str]:
    """(kind, cause) of the debit a settlement's reversal moves."""
    return "payout_reversal", reversal_id


def handle(env: Envelope, now: datetime, look: Lookups) -> CommandResult:
    """The handler of the envelope's command, applied to the player's account."""
    cmd = env.command
    account = look.account(cmd.player_id)
    if isinstance(cmd, CreateAccount):
        return create_account(account, cmd)
    if isinstance(cmd, Deposit | Withdraw):
        return operator_movement(account, cmd, now, look)
    if isinstance(cmd, PlaceBet):
        return place_bet(account, cmd, now, look)
    if isinstance(cmd, ReverseSettlement):
        return reverse_settlement(account, cmd, now, look)
    if isinstance(cmd, OperatorAnswered):  # only a seamless wallet calls an operator's
        log.error("an operator wallet's answer (%s of %r) reached a transfer wallet: ignored",
                  cmd.transaction_id, cmd.player_id)
        return CommandResult(None)
    return end_bet(account, cmd, now, look)
