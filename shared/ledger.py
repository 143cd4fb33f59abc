"""The wallet's ledger rules, pure: (account, movement) -> (account, transaction) or a refusal.

Every movement carries a deterministic `tx_id` derived from its cause, and an
account remembers which ids it applied, so applying a cause again returns the
original transaction and moves nothing. Balances are integer minor units and
never go negative. No Kafka, HTTP or clock here: the caller hands in `now`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.events.wallet_events import TxKind, WalletTransaction, tx_id

CREDITS: frozenset[str] = frozenset({"deposit", "bet_refund", "payout"})
BetStatus = Literal["placed", "rejected", "settled", "voided"]


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
    model_config = ConfigDict(frozen=True)

    player_id: str
    currency: str
    balance: int = Field(default=0, ge=0)
    tx_count: int = 0
    applied: dict[str, int] = Field(default_factory=dict, description="tx_id -> seq")
    bets: dict[str, BetRecord] = Field(default_factory=dict)


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
class Refusal:
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


def apply(account: Account, movement: Movement, now: datetime) -> Applied | Refusal:
    """Apply one movement once. A duplicate tx_id returns the original seq and no new tx."""
    seen = account.applied.get(movement.tx_id)
    if seen is not None:
        return Applied(account, seen, None)
    if movement.amount <= 0:
        return Refusal("bad_amount", f"amount must be a positive integer, got {movement.amount}")
    credit = movement.kind in CREDITS
    if not credit and movement.amount > account.balance:
        return Refusal(
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
    updated = account.model_copy(update={
        "balance": balance, "tx_count": seq, "applied": {**account.applied, tx.tx_id: seq},
    })
    return Applied(updated, seq, tx)


def with_bet(account: Account, bet_id: str, record: BetRecord) -> Account:
    return account.model_copy(update={"bets": {**account.bets, bet_id: record}})


def signed_sum(txs: list[WalletTransaction]) -> int:
    """The balance a list of distinct transactions adds up to."""
    return sum(tx.signed_amount for tx in txs)
