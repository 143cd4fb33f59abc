"""What one command does to one account: new state, the answer, the records to publish.

Pure apart from the lookups the caller hands in (`Lookups`): a tx id's seq, a
transaction by seq, a bet's record, each one key in the player's partition. So the
cost of a command does not depend on the player's history. A duplicate command
re-publishes its original records: the first attempt may have crashed before they
reached the broker, and every consumer is idempotent on their ids.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import BaseModel

from services.wallet.commands import CreateAccount, Deposit, EndBet, PlaceBet, Withdraw
from shared.events.bet_events import BetPlaced
from shared.events.wallet_events import WalletTransaction, tx_id
from shared.ledger import Account, Applied, BetRecord, Movement, apply, known_bet, restore_tx

log = logging.getLogger(__name__)
TxAt = Callable[[str, int], WalletTransaction | None]  # (player_id, seq) -> tx, if stored
SeqOf = Callable[[str, str], int | None]  # (player_id, tx_id) -> seq it was applied under
BetOf = Callable[[str, str], BetRecord | None]  # (player_id, bet_id) -> record


@dataclass(frozen=True)
class Lookups:
    """The per-item facts of a player, one key each (never the whole history)."""

    tx_at: TxAt
    seq_of: SeqOf
    bet_of: BetOf


@dataclass(frozen=True)
class Answer:
    status: int
    body: dict

    @classmethod
    def error(cls, status: int, code: str, message: str) -> Answer:
        return cls(status, {"error": {"code": code, "message": message}})


@dataclass
class Outcome:
    answer: Answer
    account: Account | None = None  # set when the account changed
    txs: list[WalletTransaction] = field(default_factory=list)  # new ones
    seqs: list[int] = field(default_factory=list)  # the seq of each new tx (same order)
    bets: dict[str, BetRecord] = field(default_factory=dict)  # bet_id -> new/changed record
    # history records lost in a crash and rebuilt from the account (stored again, not
    # counted: no money moved now)
    restored: list[tuple[int, WalletTransaction]] = field(default_factory=list)
    publish: list[tuple[str, str, BaseModel]] = field(default_factory=list)  # topic, key, model
    ended_now: bool = False  # a bet ended by this command (not a redelivery of its end)
    breach: str | None = None  # a money invariant this command would have broken


def no_account(player_id: str) -> Answer:
    return Answer.error(404, "unknown_account", f"no account for player {player_id!r}")


def account_body(account: Account) -> dict:
    return {"player_id": account.player_id, "currency": account.currency,
            "balance": account.balance, "tx_count": account.tx_count}


def create_account(account: Account | None, cmd: CreateAccount) -> Outcome:
    if account is None:
        new = Account(player_id=cmd.player_id, currency=cmd.currency)
        return Outcome(Answer(201, account_body(new)), account=new)
    if account.currency != cmd.currency:
        return Outcome(Answer.error(409, "account_exists",
                                    f"player {cmd.player_id!r} already has a "
                                    f"{account.currency} account"))
    return Outcome(Answer(200, account_body(account)))


def _apply(account: Account, movement: Movement, now: datetime, look: Lookups):
    return apply(account, movement, now, look.seq_of(account.player_id, movement.tx_id))


def _tx_of(account: Account, movement: Movement, result: Applied, now: datetime,
           look: Lookups) -> tuple[WalletTransaction, bool]:
    """(the movement's transaction, whether it had to be restored): new, stored, or, for
    a recent one whose history record a crash lost, rebuilt from the account."""
    if result.tx is not None:
        return result.tx, False
    stored = look.tx_at(account.player_id, result.seq)
    if stored is not None:
        return stored, False
    restored = restore_tx(account, movement, result.seq, now)
    if restored is None:
        raise LookupError(f"transaction {result.seq} of {account.player_id!r} "
                          f"({movement.tx_id}) is missing from the history")
    log.warning("transaction %s of %r was missing from the history (a crash); restored",
                movement.tx_id, account.player_id)
    return restored, True


def operator_movement(account: Account | None, cmd: Deposit | Withdraw, now: datetime,
                      look: Lookups) -> Outcome:
    if account is None:
        return Outcome(no_account(cmd.player_id))
    movement = Movement(cmd.type, cmd.request_id, cmd.amount)
    result = _apply(account, movement, now, look)
    if not isinstance(result, Applied):
        return Outcome(Answer.error(402 if result.code == "insufficient_funds" else 422,
                                    result.code, result.message))
    tx, restored = _tx_of(account, movement, result, now, look)
    if result.duplicate and (tx.kind != cmd.type or tx.amount != cmd.amount):
        return Outcome(Answer.error(409, "request_id_conflict",
                                    f"request {cmd.request_id!r} was already used for a "
                                    f"{tx.kind} of {tx.amount}"))
    body = {"transaction": tx.model_dump(mode="json"), "balance": tx.balance_after}
    return _moved(result, Answer(200 if result.duplicate else 201, body), tx, restored=restored)


def _moved(result: Applied, answer: Answer, tx: WalletTransaction,
           extra: list[tuple[str, str, BaseModel]] = (), restored: bool = False) -> Outcome:
    publish = [("wallet.transactions", tx.player_id, tx), *extra]
    if result.duplicate:
        return Outcome(answer, publish=publish,
                       restored=[(result.seq, tx)] if restored else [])
    return Outcome(answer, account=result.account, txs=[tx], seqs=[result.seq],
                   publish=publish)


def bet_body(bet_id: str, cmd: PlaceBet, record: BetRecord, debit: WalletTransaction) -> dict:
    return {"bet": {"bet_id": bet_id, "table_id": cmd.table_id, "round_id": cmd.round_id,
                    "bet": cmd.bet, "position": cmd.position, "stake": cmd.stake,
                    "placed_at": record.placed_at.isoformat()},
            "debit_tx_id": debit.tx_id, "balance_after": debit.balance_after,
            "currency": debit.currency}


def place_bet(account: Account | None, cmd: PlaceBet, now: datetime, look: Lookups) -> Outcome:
    """Debit the stake once per bet id and publish the funded bet."""
    if account is None:
        return Outcome(no_account(cmd.player_id))
    existing = known_bet(account, look.bet_of(cmd.player_id, cmd.bet_id))
    if existing is not None and existing.fingerprint != cmd.fingerprint():
        return Outcome(Answer.error(409, "bet_id_conflict",
                                    f"bet {cmd.bet_id!r} was already placed with different "
                                    "table, round, bet, position or stake"))
    movement = Movement("stake_debit", cmd.bet_id, cmd.stake, cmd.table_id, cmd.round_id)
    result = _apply(account, movement, now, look)
    if not isinstance(result, Applied):
        return Outcome(Answer.error(402 if result.code == "insufficient_funds" else 422,
                                    result.code, result.message))
    debit, restored = _tx_of(account, movement, result, now, look)
    record = existing or BetRecord(fingerprint=cmd.fingerprint(), table_id=cmd.table_id,
                                   round_id=cmd.round_id, stake=cmd.stake,
                                   debit_seq=result.seq, placed_at=now)
    placed = BetPlaced(bet_id=cmd.bet_id, player_id=cmd.player_id, table_id=cmd.table_id,
                       round_id=cmd.round_id, bet=cmd.bet, position=cmd.position,
                       stake=cmd.stake, currency=account.currency, debit_tx_id=debit.tx_id,
                       placed_at=record.placed_at)
    status = 200 if existing or result.duplicate else 201
    answer = Answer(status, bet_body(cmd.bet_id, cmd, record, debit))
    outcome = _moved(result, answer, debit, [("bets.placed", cmd.table_id, placed)], restored)
    if existing is None:
        outcome.bets[cmd.bet_id] = record
    return outcome


def end_bet(account: Account | None, cmd: EndBet, now: datetime, look: Lookups) -> Outcome:
    """Refund a rejected or voided bet, pay a settled one: once, whatever the redelivery."""
    record = known_bet(account, look.bet_of(cmd.player_id, cmd.bet_id)) if account else None
    if account is None or record is None:
        log.error("MONEY: %s for bet %r of player %r, but the wallet never debited it",
                  cmd.ending, cmd.bet_id, cmd.player_id)
        return Outcome(Answer.error(409, "unknown_bet", "bet was never debited"),
                       breach="ending_for_unknown_bet")
    if record.status not in ("placed", cmd.ending):
        log.error("MONEY: bet %r already ended %s; refusing to also end it %s",
                  cmd.bet_id, record.status, cmd.ending)
        return Outcome(Answer.error(409, "bet_already_ended", record.status),
                       breach="bet_ended_twice")
    ended_now = record.status == "placed"
    changed = {cmd.bet_id: record.model_copy(update={"status": cmd.ending})} if ended_now \
        else {}
    answer = Answer(200, {"bet_id": cmd.bet_id, "status": cmd.ending})
    if cmd.returned == 0:
        return Outcome(answer, bets=changed, ended_now=ended_now)
    if cmd.ending == "settled":
        movement = Movement("payout", cmd.settlement_id or cmd.bet_id, cmd.returned,
                            cmd.table_id, cmd.round_id)
    else:
        movement = Movement("bet_refund", cmd.bet_id, cmd.returned, cmd.table_id, cmd.round_id)
    result = _apply(account, movement, now, look)
    assert isinstance(result, Applied), "credits are never refused"
    tx, restored = _tx_of(account, movement, result, now, look)
    outcome = _moved(result, answer, tx, restored=restored)
    outcome.bets = changed
    if result.duplicate and tx.amount != cmd.returned:
        log.error("MONEY: %s of bet %r asked again with %d, but %s already credited %d; "
                  "the first stands", cmd.ending, cmd.bet_id, cmd.returned, tx.tx_id, tx.amount)
        outcome.breach = "tx_id_conflict"
    outcome.ended_now = ended_now
    return outcome


def refund_tx_id(bet_id: str) -> str:
    return tx_id("bet_refund", bet_id)
