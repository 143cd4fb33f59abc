"""The wallet's ledger rules, pure: (account, movement) -> (account, transaction) or a refusal.

Every movement carries a deterministic `tx_id` derived from its cause. An account holds
only what every movement needs (balance, tx_count): which tx ids were applied, and every
bet, are per-item facts kept under their own keys by the caller (`<player>:<tx_id>` ->
seq, `<player>:<bet_id>` -> BetRecord), so neither the account nor any record grows with
a player's history. The caller looks the tx id up and hands the seq in (`indexed`):
applying a cause again returns the original seq and moves nothing. Balances are integer
minor units and never go negative. No Kafka, HTTP or clock here: the caller hands in `now`.

The per-item keys and the account are written to different changelog topics, so after a
crash the log can hold any part of the last batch's writes (the wallet flushes every
batch before it commits its offsets, so never more than the last batch). The account
therefore remembers its last RECENT_TXS movements (tx id -> seq, balance after): a tx id
whose index entry was lost is still known, and a transaction whose history record was lost
can be restored. An index entry or a bet record past the account's `tx_count` was written
by a command whose account write never reached the log: it counts as not applied, and the
redelivered command applies it again. See docs/decisions/scale.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from croupier.shared.events.wallet_events import CREDITS, TxKind, WalletTransaction, tx_id

# the one debit applied in full even when the balance cannot cover it: a management void
# takes a payout back whatever the player did with it since (docs/decisions/acceptance.md)
UNCOVERED_DEBITS: frozenset[str] = frozenset({"payout_reversal"})
RECENT_TXS = 16  # movements an account remembers; the wallet's batches never apply more
#                  than this many commands of one player between two flushes
# "reversed": a settled bet whose settlement a management void took back; its refund
# (`voided`) follows
BetStatus = Literal["placed", "rejected", "settled", "reversed", "voided"]


class BetRecord(BaseModel):
    """What the wallet keeps of a bet: enough to answer a retry and to end it once."""

    model_config = ConfigDict(frozen=True)

    fingerprint: str
    table_id: str
    round_id: str
    stake: int
    status: BetStatus = "placed"
    debit_seq: int
    placed_at: datetime


class Account(BaseModel):
    """The one value per player: bounded, whatever the player's history."""

    model_config = ConfigDict(frozen=True)

    player_id: str
    currency: str
    balance: int = Field(default=0, description="Minor units; below zero only after a "
                                                "payout_reversal it could not cover")
    tx_count: int = 0
    recent: dict[str, tuple[int, int]] = Field(
        default_factory=dict, description="tx_id -> (seq, balance_after) of the last "
                                          f"{RECENT_TXS} movements, oldest first")


@dataclass(frozen=True)
class Movement:
    kind: TxKind
    cause_id: str
    amount: int
    table_id: str | None = None
    round_id: str | None = None

    @property
    def tx_id(self) -> str:
        return tx_id(self.kind, self.cause_id)


@dataclass(frozen=True)
class LedgerRefusal:
    code: str
    message: str


@dataclass(frozen=True)
class Applied:
    account: Account
    seq: int
    tx: WalletTransaction | None  # None when the movement was applied before (duplicate)

    @property
    def duplicate(self) -> bool:
        return self.tx is None


def applied_seq(account: Account, tx_id: str, indexed: int | None) -> int | None:
    """The seq `tx_id` was applied under, or None if it never was. `indexed` is what the
    per-item index says; an entry past `tx_count` never reached the account."""
    if tx_id in account.recent:
        return account.recent[tx_id][0]
    if indexed is not None and indexed <= account.tx_count:
        return indexed
    return None


def known_bet(account: Account, record: BetRecord | None) -> BetRecord | None:
    """A stored bet record, unless it was written by a command whose account write never
    reached the log (its debit is past `tx_count`): then the bet was never placed."""
    if record is None or record.debit_seq > account.tx_count:
        return None
    return record


def restore_tx(account: Account, movement: Movement, seq: int, now: datetime
               ) -> WalletTransaction | None:
    """The transaction of a recent movement whose history record was lost in a crash,
    rebuilt from the movement and what the account remembers (same id, seq and amounts)."""
    remembered = account.recent.get(movement.tx_id)
    if remembered is None or remembered[0] != seq:
        return None
    return WalletTransaction(
        tx_id=movement.tx_id, player_id=account.player_id, kind=movement.kind,
        amount=movement.amount, balance_after=remembered[1], currency=account.currency,
        cause_id=movement.cause_id, table_id=movement.table_id, round_id=movement.round_id,
        occurred_at=now)


def apply(account: Account, movement: Movement, now: datetime, indexed: int | None = None
          ) -> Applied | LedgerRefusal:
    """Apply one movement once. `indexed` is the seq the per-item index holds for this
    movement's tx_id (None if none): if it was applied, nothing moves and the original seq
    is returned with no new tx."""
    seen = applied_seq(account, movement.tx_id, indexed)
    if seen is not None:
        return Applied(account, seen, None)
    if movement.amount <= 0:
        return LedgerRefusal("bad_amount", f"amount must be a positive integer, got {movement.amount}")
    credit = movement.kind in CREDITS
    if not credit and movement.kind not in UNCOVERED_DEBITS \
            and movement.amount > account.balance:
        return LedgerRefusal(
            "insufficient_funds",
            f"balance {account.balance} does not cover {movement.kind} of {movement.amount}",
        )
    balance = account.balance + (movement.amount if credit else -movement.amount)
    seq = account.tx_count + 1
    tx = WalletTransaction(
        tx_id=movement.tx_id, player_id=account.player_id, kind=movement.kind,
        amount=movement.amount, balance_after=balance, currency=account.currency,
        cause_id=movement.cause_id, table_id=movement.table_id, round_id=movement.round_id,
        occurred_at=now,
    )
    recent = {**account.recent, tx.tx_id: (seq, balance)}
    if len(recent) > RECENT_TXS:
        recent = dict(list(recent.items())[-RECENT_TXS:])
    updated = account.model_copy(update={"balance": balance, "tx_count": seq, "recent": recent})
    return Applied(updated, seq, tx)


class SpotRecord(BaseModel):
    """A player's running total on one spot (table, round, bet id, position): seed 002's
    table maximum applies to it. `recent`: (debit seq, stake) of its last RECENT_TXS
    contributions, so a contribution whose account write a crash lost (its seq is past the
    account's `tx_count`) is not counted. Bounded; the key expires like the bet records."""

    model_config = ConfigDict(frozen=True)

    total: int = 0
    recent: tuple[tuple[int, int], ...] = ()


def spot_total(account: Account, record: SpotRecord | None) -> int:
    """The spot's total as the account knows it (contributions past tx_count never happened)."""
    if record is None:
        return 0
    return record.total - sum(stake for seq, stake in record.recent if seq > account.tx_count)


def add_to_spot(account: Account, record: SpotRecord | None, seq: int, stake: int
                ) -> SpotRecord | None:
    """The spot with the stake debited under `seq` added (`account`: as it was before the
    debit), or None when it is counted already (the debit was applied before, and so was
    its spot write; only the bet record was lost in a crash)."""
    recent = record.recent if record else ()
    if seq <= account.tx_count and any(s == seq for s, _ in recent):
        return None
    kept = tuple((s, a) for s, a in recent if s <= account.tx_count)
    recent = (*kept, (seq, stake))[-RECENT_TXS:]
    return SpotRecord(total=spot_total(account, record) + stake, recent=recent)


def signed_sum(txs: list[WalletTransaction]) -> int:
    """The balance a list of distinct transactions adds up to."""
    return sum(tx.signed_amount for tx in txs)
