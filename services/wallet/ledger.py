"""The wallet's ledger rules, pure: (account, movement) -> (account, transaction) or a refusal.

Every movement carries a deterministic `tx_id` derived from its cause. An account holds
only what every movement needs (balance, tx_count): which tx ids were applied, and every
bet, are per-item facts the wallet's fold keeps under their own keys
(`services.wallet.ledger_fold`), so neither the account nor any record grows with
a player's history. The caller looks the tx id up and hands its seq in (`applied`): a
cause applied before moves nothing and returns the original seq. Balances are integer
minor units and never go negative. No Kafka, HTTP or clock here: the caller hands in `now`.

Every value the caller looks up is the fold of the wallet's own log (`wallet.ledger`), so
none of them can be ahead of or behind another: no repair rule is needed here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from shared.events.wallet_events import CREDITS, TxKind, WalletTransaction, tx_id
from shared.events.wallet_ledger import Account, BetRecord, BetStatus, SpotTotal

__all__ = ["UNCOVERED_DEBITS", "Account", "Applied", "BetRecord", "BetStatus",
           "LedgerRefusal", "Movement", "SpotTotal", "apply", "signed_sum"]

# the one debit applied in full even when the balance cannot cover it: a management void
# takes a payout back whatever the player did with it since (docs/decisions/acceptance.md)
UNCOVERED_DEBITS: frozenset[str] = frozenset({"payout_reversal"})


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


def apply(account: Account, movement: Movement, now: datetime, applied: int | None = None,
          covered_elsewhere: bool = False) -> Applied | LedgerRefusal:
    """Apply one movement once. `applied` is the seq the movement's tx_id was applied under
    (None if never): then nothing moves and that seq is returned with no new tx.
    `covered_elsewhere`: the balance that pays it is not this account's (seamless mode: the
    operator's wallet confirmed the debit), so no debit is refused for funds here."""
    if applied is not None:
        return Applied(account, applied, None)
    if movement.amount <= 0:
        return LedgerRefusal("bad_amount", f"amount must be a positive integer, got {movement.amount}")
    credit = movement.kind in CREDITS
    if not credit and not covered_elsewhere and movement.kind not in UNCOVERED_DEBITS \
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
    updated = account.model_copy(update={"balance": balance, "tx_count": seq})
    return Applied(updated, seq, tx)


def signed_sum(txs: list[WalletTransaction]) -> int:
    """The balance a list of distinct transactions adds up to."""
    return sum(tx.signed_amount for tx in txs)
