"""The wallet's state as the fold of `wallet.ledger`: one function for live state,
recovery and `croupier rebuild`.

An entry writes, each under its own key (absolute values, so a fold is idempotent):
- `a/<player>`           -> Account (balance, tx_count)
- `t/<player>/<seq>`     -> WalletTransaction (the paged history)
- `x/<player>/<tx_id>`   -> seq (a cause is applied once)
- `b/<player>/<bet_id>`  -> BetRecord (retry answers, a bet ends once)
- `s/<spot key>`         -> the player's total on a spot of a round (seed 002)
and publishes its transaction on `wallet.transactions` and its funded bet on
`bets.placed` (the outbox: `croupier.services.infra.own_log`).

Pure: no Kafka, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from croupier.services.infra.own_log import Record, Writes
from croupier.shared.events.sources import InputRef
from croupier.shared.events.wallet_events import WalletTransaction
from croupier.shared.events.wallet_ledger import (
    Account,
    BetRecord,
    CommandKind,
    LedgerEntry,
    SpotTotal,
)

LEDGER_TOPIC = "wallet.ledger"


def account_key(player_id: str) -> str:
    return f"a/{player_id}"


def accounts(kv: Mapping[str, Any]) -> list[Account]:
    """Every account a folded state holds."""
    return [value for key, value in kv.items() if key.startswith("a/")]


def tx_key(player_id: str, seq: int) -> str:
    return f"t/{player_id}/{seq}"


def tx_id_key(player_id: str, tx_id: str) -> str:
    return f"x/{player_id}/{tx_id}"


def bet_key(player_id: str, bet_id: str) -> str:
    return f"b/{player_id}/{bet_id}"


def spot_state_key(spot_key: str) -> str:
    return f"s/{spot_key}"


class WalletFold:
    """`croupier.services.infra.own_log.Fold` for the wallet's ledger."""

    def apply(self, kv: Writes, entry: LedgerEntry) -> None:
        player_id = entry.account.player_id
        kv[account_key(player_id)] = entry.account
        if entry.tx is not None:
            kv[tx_key(player_id, entry.account.tx_count)] = entry.tx
            kv[tx_id_key(player_id, entry.tx.tx_id)] = entry.account.tx_count
        if entry.bet_id is not None and entry.bet is not None:
            kv[bet_key(player_id, entry.bet_id)] = entry.bet
        if entry.spot is not None:
            kv[spot_state_key(entry.spot.key)] = entry.spot.total

    def outputs(self, entry: LedgerEntry) -> list[Record]:
        out: list[Record] = []
        if entry.tx is not None:
            out.append(("wallet.transactions", entry.tx.player_id.encode(),
                        entry.tx.model_dump_json().encode()))
        if entry.placed is not None:
            out.append(("bets.placed", entry.placed.table_id.encode(),
                        entry.placed.model_dump_json().encode()))
        return out


WALLET_FOLD = WalletFold()


@dataclass(frozen=True)
class Lookups:
    """Point reads of the folded state, one key each (never the whole history)."""

    kv: Mapping[str, Any]

    def account(self, player_id: str) -> Account | None:
        found: Account | None = self.kv.get(account_key(player_id))
        return found

    def tx_at(self, player_id: str, seq: int) -> WalletTransaction | None:
        found: WalletTransaction | None = self.kv.get(tx_key(player_id, seq))
        return found

    def seq_of(self, player_id: str, tx_id: str) -> int | None:
        found: int | None = self.kv.get(tx_id_key(player_id, tx_id))
        return found

    def bet_of(self, player_id: str, bet_id: str) -> BetRecord | None:
        found: BetRecord | None = self.kv.get(bet_key(player_id, bet_id))
        return found

    def spot_total(self, spot_key: str) -> int:
        found: int = self.kv.get(spot_state_key(spot_key), 0)
        return found


@dataclass(frozen=True)
class Change:
    """What a command changed, to be written as one ledger entry."""

    command: CommandKind
    account: Account
    tx: WalletTransaction | None = None
    bet_id: str | None = None
    bet: BetRecord | None = None
    spot: SpotTotal | None = None
    placed: Any = None  # BetPlaced

    def entry(self, entry_id: str, prev: str, published_through: int, source: InputRef,
              now: datetime) -> LedgerEntry:
        return LedgerEntry(entry_id=entry_id, prev=prev, source=source, command=self.command,
                           account=self.account, tx=self.tx, bet_id=self.bet_id, bet=self.bet,
                           spot=self.spot, placed=self.placed,
                           published_through=published_through, recorded_at=now)
