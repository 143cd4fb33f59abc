"""`wallet.transactions`: every money movement, keyed by player, each with an id
derived from its cause so that re-applying a cause never moves money twice."""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, Field

from shared.models import FrozenModel

TxKind = Literal["deposit", "withdrawal", "stake_debit", "bet_refund", "payout",
                 "payout_reversal"]
# the kinds that add to a balance; every other kind takes from it
CREDITS: frozenset[TxKind] = frozenset({"deposit", "bet_refund", "payout"})


def tx_id(kind: TxKind, cause_id: str) -> str:
    return f"{kind}:{cause_id}"


class WalletTransaction(FrozenModel):

    schema_version: Literal[1] = 1
    type: Literal["wallet_transaction"] = "wallet_transaction"
    tx_id: str
    player_id: str
    kind: TxKind
    amount: int = Field(ge=0, description="Minor units; the direction is given by `kind`.")
    balance_after: int = Field(description="Minor units. Never negative, except after a "
                                           "payout_reversal the balance could not cover "
                                           "(docs/decisions/acceptance.md).")
    currency: str
    cause_id: str = Field(description="Bet id, settlement id, reversal id or operator "
                                      "request id.")
    table_id: str | None = None
    round_id: str | None = None
    occurred_at: AwareDatetime

    @property
    def signed_amount(self) -> int:
        return self.amount if self.kind in CREDITS else -self.amount
