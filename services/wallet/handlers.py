"""What one command does to one account: new state, the answer, the records to publish.

Pure apart from the lookups the caller hands in (`Lookups`): a tx id's seq, a
transaction by seq, a bet's record, each one key in the player's partition. So the
cost of a command does not depend on the player's history. A duplicate command
re-publishes its original records: the first attempt may have crashed before they
reached the broker, and every consumer is idempotent on their ids.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from croupier.services.wallet.commands import (
    CreateAccount,
    Deposit,
    EndBet,
    Envelope,
    PlaceBet,
    ReverseSettlement,
    Withdraw,
)
from croupier.services.wallet.ledger import (
    Account,
    Applied,
    BetRecord,
    LedgerRefusal,
    Movement,
    SpotRecord,
    add_to_spot,
    applied_seq,
    apply,
    known_bet,
    restore_tx,
    spot_total,
)
from croupier.shared.bets import MAIN_BETS
from croupier.shared.events.bet_events import BetPlaced
from croupier.shared.events.wallet_events import WalletTransaction, tx_id

log = logging.getLogger(__name__)
TxAt = Callable[[str, int], WalletTransaction | None]  # (player_id, seq) -> tx, if stored
SeqOf = Callable[[str, str], int | None]  # (player_id, tx_id) -> seq it was applied under
BetOf = Callable[[str, str], BetRecord | None]  # (player_id, bet_id) -> record
SpotOf = Callable[[str], SpotRecord | None]  # spot key -> the player's total on it


def spot_key(player_id: str, table_id: str, round_id: str, bet: str,
             position: int | str | None) -> str:
    """A player's spot in a round (table and round ids and bet names hold no '/', so the
    key reads one way even when the player id does)."""
    return f"{player_id}/{table_id}/{round_id}/{bet}/{'-' if position is None else position}"


def _no_spots(key: str) -> SpotRecord | None:
    return None


@dataclass(frozen=True)
class Lookups:
    """The per-item facts of a player, one key each (never the whole history)."""

    tx_at: TxAt
    seq_of: SeqOf
    bet_of: BetOf
    spot_of: SpotOf = _no_spots


@dataclass(frozen=True)
class Answer:
    status: int
    body: dict[str, Any]

    @classmethod
    def error(cls, status: int, code: str, message: str) -> Answer:
        return cls(status, {"error": {"code": code, "message": message}})


@dataclass
class CommandResult:
    answer: Answer
    account: Account | None = None  # set when the account changed
    txs: list[WalletTransaction] = field(default_factory=list)  # new ones
    seqs: list[int] = field(default_factory=list)  # the seq of each new tx (same order)
    bets: dict[str, BetRecord] = field(default_factory=dict)  # bet_id -> new/changed record
    spots: dict[str, SpotRecord] = field(default_factory=dict)  # spot key -> new total
    # history records lost in a crash and rebuilt from the account (stored again, not
    # counted: no money moved now)
    restored: list[tuple[int, WalletTransaction]] = field(default_factory=list)
    publish: list[tuple[str, str, BaseModel]] = field(default_factory=list)  # topic, key, model
    ended_now: bool = False  # a bet ended by this command (not a redelivery of its end)
    breach: str | None = None  # a money invariant this command would have broken


def no_account(player_id: str) -> Answer:
    return Answer.error(404, "unknown_account", f"no account for player {player_id!r}")


def account_body(account: Account) -> dict[str, Any]:
    return {"player_id": account.player_id, "currency": account.currency,
            "balance": account.balance, "tx_count": account.tx_count}


def create_account(account: Account | None, cmd: CreateAccount) -> CommandResult:
    if account is None:
        new = Account(player_id=cmd.player_id, currency=cmd.currency)
        return CommandResult(Answer(201, account_body(new)), account=new)
    if account.currency != cmd.currency:
        return CommandResult(Answer.error(409, "account_exists",
                                    f"player {cmd.player_id!r} already has a "
                                    f"{account.currency} account"))
    return CommandResult(Answer(200, account_body(account)))


def _apply(account: Account, movement: Movement, now: datetime, look: Lookups
           ) -> Applied | LedgerRefusal:
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
                      look: Lookups) -> CommandResult:
    if account is None:
        return CommandResult(no_account(cmd.player_id))
    movement = Movement(cmd.type, cmd.request_id, cmd.amount)
    result = _apply(account, movement, now, look)
    if not isinstance(result, Applied):
        return CommandResult(Answer.error(402 if result.code == "insufficient_funds" else 422,
                                    result.code, result.message))
    tx, restored = _tx_of(account, movement, result, now, look)
    if result.duplicate and (tx.kind != cmd.type or tx.amount != cmd.amount):
        return CommandResult(Answer.error(409, "request_id_conflict",
                                    f"request {cmd.request_id!r} was already used for a "
                                    f"{tx.kind} of {tx.amount}"))
    body = {"transaction": tx.model_dump(mode="json"), "balance": tx.balance_after}
    return _moved(result, Answer(200 if result.duplicate else 201, body), tx, restored=restored)


def _moved(result: Applied, answer: Answer, tx: WalletTransaction,
           extra: Sequence[tuple[str, str, BaseModel]] = (), restored: bool = False) -> CommandResult:
    publish = [("wallet.transactions", tx.player_id, tx), *extra]
    if result.duplicate:
        return CommandResult(answer, publish=publish,
                       restored=[(result.seq, tx)] if restored else [])
    return CommandResult(answer, account=result.account, txs=[tx], seqs=[result.seq],
                   publish=publish)


def bet_body(bet_id: str, cmd: PlaceBet, record: BetRecord, debit: WalletTransaction
             ) -> dict[str, Any]:
    return {"bet": {"bet_id": bet_id, "table_id": cmd.table_id, "round_id": cmd.round_id,
                    "bet": cmd.bet, "position": cmd.position, "stake": cmd.stake,
                    "placed_at": record.placed_at.isoformat()},
            "debit_tx_id": debit.tx_id, "balance_after": debit.balance_after,
            "currency": debit.currency}


def place_bet(account: Account | None, cmd: PlaceBet, now: datetime, look: Lookups) -> CommandResult:
    """Debit the stake once per bet id and publish the funded bet."""
    if account is None:
        return CommandResult(no_account(cmd.player_id))
    existing = known_bet(account, look.bet_of(cmd.player_id, cmd.bet_id))
    if existing is not None and existing.fingerprint != cmd.fingerprint():
        return CommandResult(Answer.error(409, "bet_id_conflict",
                                    f"bet {cmd.bet_id!r} was already placed with different "
                                    "table, round, bet, position or stake"))
    movement = Movement("stake_debit", cmd.bet_id, cmd.stake, cmd.table_id, cmd.round_id)
    key = spot_key(cmd.player_id, cmd.table_id, cmd.round_id, cmd.bet, cmd.position)
    spot = look.spot_of(key)
    debited = applied_seq(account, movement.tx_id, look.seq_of(cmd.player_id, movement.tx_id))
    if existing is None and debited is None:  # a new bet: the round's rules at the door
        refused = _round_rules(account, cmd, spot, look)
        if refused is not None:
            return CommandResult(refused)
    result = _apply(account, movement, now, look)
    if not isinstance(result, Applied):
        return CommandResult(Answer.error(402 if result.code == "insufficient_funds" else 422,
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
        counted = add_to_spot(account, spot, result.seq, cmd.stake)
        if counted is not None:
            outcome.spots[key] = counted
    return outcome


def _round_rules(account: Account, cmd: PlaceBet, spot: SpotRecord | None, look: Lookups
                 ) -> Answer | None:
    """Seed 002 at the wallet's door, in the agent (one player's bets in order, so two
    bets sent at once cannot both pass): the table maximum on the player's total on one
    spot this round, and Tiger wagers only with a main bet when the table says so.
    Advisory like the rest of the door: bet-settlement's decision binds."""
    before = spot_total(account, spot)
    if cmd.spot_max is not None and before + cmd.stake > cmd.spot_max:
        return Answer.error(422, "spot_maximum",
                            f"{before} already on {cmd.bet!r} this round: {cmd.stake} more "
                            f"would pass the table maximum of {cmd.spot_max} per spot")
    if cmd.needs_main_bet and not any(
            spot_total(account, look.spot_of(spot_key(cmd.player_id, cmd.table_id,
                                                      cmd.round_id, main, None))) > 0
            for main in MAIN_BETS):
        return Answer.error(422, "needs_main_bet",
                            f"{cmd.bet!r} is taken at this table only with a Player, Banker "
                            "or Tie bet in the round: place that first")
    return None


def end_bet(account: Account | None, cmd: EndBet, now: datetime, look: Lookups) -> CommandResult:
    """Refund a rejected or voided bet, pay a settled one: once, whatever the redelivery."""
    record = known_bet(account, look.bet_of(cmd.player_id, cmd.bet_id)) if account else None
    if account is None or record is None:
        log.error("MONEY: %s for bet %r of player %r, but the wallet never debited it",
                  cmd.ending, cmd.bet_id, cmd.player_id)
        return CommandResult(Answer.error(409, "unknown_bet", "bet was never debited"),
                       breach="ending_for_unknown_bet")
    annulled = record.status == "reversed" and cmd.ending == "voided"  # refund after reversal
    if record.status not in ("placed", cmd.ending) and not annulled:
        log.error("MONEY: bet %r already ended %s; refusing to also end it %s",
                  cmd.bet_id, record.status, cmd.ending)
        return CommandResult(Answer.error(409, "bet_already_ended", record.status),
                       breach="bet_ended_twice")
    ended_now = record.status == "placed" or annulled
    changed = {cmd.bet_id: record.model_copy(update={"status": cmd.ending})} if ended_now \
        else {}
    answer = Answer(200, {"bet_id": cmd.bet_id, "status": cmd.ending})
    if cmd.returned == 0:
        return CommandResult(answer, bets=changed, ended_now=ended_now)
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


def reverse_settlement(account: Account | None, cmd: ReverseSettlement, now: datetime,
                       look: Lookups) -> CommandResult:
    """Take a settled bet's return back (a management void after completion), once: a
    `payout_reversal` of what the settlement returned, applied in full even when the
    balance cannot cover it (docs/decisions/acceptance.md); the bet's refund follows."""
    record = known_bet(account, look.bet_of(cmd.player_id, cmd.bet_id)) if account else None
    if account is None or record is None or record.status not in ("settled", "reversed",
                                                                   "voided"):
        status = record.status if record else "unknown"
        log.error("MONEY: reversal %s of bet %r of player %r, whose bet is %s",
                  cmd.reversal_id, cmd.bet_id, cmd.player_id, status)
        return CommandResult(Answer.error(409, "not_settled", f"bet is {status}"),
                       breach="reversal_of_unsettled_bet")
    first = record.status == "settled"
    changed = {cmd.bet_id: record.model_copy(update={"status": "reversed"})} if first else {}
    answer = Answer(200, {"bet_id": cmd.bet_id, "status": "reversed"})
    if cmd.amount == 0:  # a lost bet returned nothing: nothing to take back
        return CommandResult(answer, bets=changed)
    movement = Movement("payout_reversal", cmd.reversal_id, cmd.amount, cmd.table_id,
                        cmd.round_id)
    result = _apply(account, movement, now, look)
    assert isinstance(result, Applied), "a reversal is never refused"
    tx, restored = _tx_of(account, movement, result, now, look)
    outcome = _moved(result, answer, tx, restored=restored)
    outcome.bets = changed
    if not result.duplicate and result.account.balance < 0:
        log.warning("MONEY: reversal %s left player %r at %d (the payout was spent); reported",
                    cmd.reversal_id, cmd.player_id, result.account.balance)
    return outcome


def refund_tx_id(bet_id: str) -> str:
    return tx_id("bet_refund", bet_id)


def handle(account: Account | None, env: Envelope, now: datetime, look: Lookups) -> CommandResult:
    """The handler of the envelope's command, applied to the player's account."""
    cmd = env.command
    if isinstance(cmd, CreateAccount):
        return create_account(account, cmd)
    if isinstance(cmd, Deposit | Withdraw):
        return operator_movement(account, cmd, now, look)
    if isinstance(cmd, PlaceBet):
        return place_bet(account, cmd, now, look)
    if isinstance(cmd, ReverseSettlement):
        return reverse_settlement(account, cmd, now, look)
    return end_bet(account, cmd, now, look)
