"""`wallet.ledger`: the wallet's source of truth, one record per command it applied.

A `LedgerEntry` carries everything the wallet must remember of the command: the
movement (a `WalletTransaction`), the account after it (seq and balance), the bet's
record (status, what a retry is answered with), the spot's total, and where in the
wallet's input the command stood (`source`). The wallet's state is the fold of its
entries (`services.wallet.ledger_fold`); nothing else is kept that the log
does not say, so a crash, a wiped disk or a partition move can only ever leave a
state the log rebuilds.

Entries are chained per partition: `prev` is the id of the partition's previous valid
entry. An entry whose `prev` is not the id of the last valid one is void
(a writer that lost its partition and has not noticed yet wrote it): the fold skips it
and its writer never answers for it (docs/decisions/ledger.md).
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, Field

from shared.events.bet_events import BetPlaced
from shared.events.operator_wallet import OperatorCall
from shared.events.sources import ChainedEntry
from shared.events.wallet_events import WalletTransaction
from shared.models import FrozenModel

# "reversed": a settled bet whose settlement a management void took back; its refund
# (`voided`) follows
# seamless mode (docs/decisions/seamless.md): "debiting" while the operator's wallet has
# not answered the bet's debit, "debit_failed" once it refused it or never answered (the
# bet was never placed; a debit with no answer is rolled back)
BetStatus = Literal["debiting", "debit_failed", "placed", "rejected", "settled", "reversed",
                    "voided"]
CommandKind = Literal["create_account", "deposit", "withdrawal", "place_bet", "end_bet",
                      "reverse_settlement", "operator_answered"]


class Account(FrozenModel):
    """The one value per player: bounded, whatever the player's history."""


    player_id: str
    currency: str
    balance: int = Field(default=0, description="Minor units; below zero only after a "
                                                "payout_reversal it could not cover")
    tx_count: int = Field(default=0, ge=0, description="The seq of the last movement.")
    # seamless mode: the balance is the operator's; `balance` is then croupier's net of
    # the movements at its tables (below zero whenever the player lost), and this the
    # balance the operator's wallet reported last
    operator_balance: int | None = Field(default=None, exclude_if=lambda v: v is None)


class BetFailure(FrozenModel):
    """Why a bet was never placed (seamless mode): the answer its player got."""


    status: int
    code: str
    message: str


class BetRecord(FrozenModel):
    """What the wallet keeps of a bet: enough to answer a retry and to end it once."""


    fingerprint: str
    table_id: str
    round_id: str
    stake: int
    status: BetStatus = "placed"
    debit_seq: int
    placed_at: AwareDatetime
    # the settlement that settled it last (a corrected round settles a bet again, under an id
    # of its own): absent before it is settled, and in records written before corrections
    settlement_id: str | None = Field(default=None, exclude_if=lambda v: v is None)
    # the balance right after the stake's debit, so a retried bet is answered as it was
    # after the debit's place in the history expired (the bet's record outlives it: the
    # wallet's state window); absent in records written before the window
    debit_balance_after: int | None = Field(default=None, exclude_if=lambda v: v is None)
    # seamless mode, a bet whose debit the operator refused or never answered: what its
    # player was answered (a retry of the bet id is answered the same)
    failure: BetFailure | None = Field(default=None, exclude_if=lambda v: v is None)
    # seamless mode, while its debit is pending: the funded bet to publish once the
    # operator confirms it
    placing: BetPlaced | None = Field(default=None, exclude_if=lambda v: v is None)


class SpotTotal(FrozenModel):
    """A player's running total on one spot of a round (seed 002's table maximum)."""


    key: str
    total: int = Field(ge=0)


class LedgerEntry(ChainedEntry):
    """One applied command: its movement and every fact it changed, absolute values only
    (so folding an entry twice, or over a newer state of the same keys, is harmless)."""

    schema_version: Literal[1] = 1
    type: Literal["ledger_entry"] = "ledger_entry"
    command: CommandKind
    account: Account = Field(description="The account after the command.")
    tx: WalletTransaction | None = Field(default=None, description="The movement, if any.")
    bet_id: str | None = None
    bet: BetRecord | None = Field(default=None, description="The bet's record after it.")
    spot: SpotTotal | None = None
    placed: BetPlaced | None = Field(default=None, description="The funded bet this entry "
                                                               "publishes on bets.placed.")
    calls: tuple[OperatorCall, ...] = Field(default=(), exclude_if=lambda v: not v, description=(
        "Seamless mode: the calls to the operator's wallet this entry owes (pending) or "
        "closes (answered: published on wallet.operator_calls)."))
