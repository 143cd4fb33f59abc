"""The wallet's five tables, read and written one fact per key (every key lives in the
player's partition of the commands topic):
- `accounts`      `<player>`           -> Account (balance, tx_count)
- `transactions`  `<player>:<seq>`     -> WalletTransaction (paged history)
- `tx-ids`        `<player>:<tx_id>`   -> seq (idempotency)
- `bets`          `<player>:<bet_id>`  -> BetRecord (retry answers, ending once)
- `spots`         `<player>/<table>/<round>/<bet>/<position>` -> SpotRecord (seed 002's
                                          table maximum per spot per round)
In a worker the tables are Faust tables; in a unit test, dicts.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from croupier.services.wallet import handlers
from croupier.services.wallet.ledger import Account, BetRecord, SpotRecord
from croupier.shared.events.wallet_events import WalletTransaction

Table = MutableMapping[str, Any]


def tx_key(player_id: str, seq: int) -> str:
    return f"{player_id}:{seq:010d}"


def item_key(player_id: str, item: str) -> str:
    return f"{player_id}:{item}"


class Store:
    def __init__(self, accounts: Table, transactions: Table, tx_ids: Table, bets: Table,
                 spots: Table) -> None:
        self.accounts = accounts
        self.transactions = transactions
        self.tx_ids = tx_ids
        self.bets = bets
        self.spots = spots
        self.lookups = handlers.Lookups(tx_at=self.tx_at, seq_of=self.seq_of,
                                        bet_of=self.bet_of, spot_of=self.spot_of)

    def tx_at(self, player_id: str, seq: int) -> WalletTransaction | None:
        raw = self.transactions.get(tx_key(player_id, seq))
        return None if raw is None else WalletTransaction.model_validate(raw)

    def seq_of(self, player_id: str, tx_id: str) -> int | None:
        return self.tx_ids.get(item_key(player_id, tx_id))

    def bet_of(self, player_id: str, bet_id: str) -> BetRecord | None:
        raw = self.bets.get(item_key(player_id, bet_id))
        return None if raw is None else BetRecord.model_validate(raw)

    def spot_of(self, key: str) -> SpotRecord | None:
        raw = self.spots.get(key)
        return None if raw is None else SpotRecord.model_validate(raw)

    def load_account(self, player_id: str) -> Account | None:
        raw = self.accounts.get(player_id)
        return None if raw is None else Account.model_validate(raw)

    def store(self, player_id: str, outcome: handlers.CommandResult) -> None:
        """Write what a command changed, each fact under its own key (per-item facts first,
        the account last)."""
        for seq, tx in [*zip(outcome.seqs, outcome.txs, strict=True), *outcome.restored]:
            self.transactions[tx_key(player_id, seq)] = tx.model_dump(mode="json")
            self.tx_ids[item_key(player_id, tx.tx_id)] = seq
        for bet_id, record in outcome.bets.items():
            self.bets[item_key(player_id, bet_id)] = record.model_dump(mode="json")
        for key, spot in outcome.spots.items():
            self.spots[key] = spot.model_dump(mode="json")
        if outcome.account is not None:
            self.accounts[player_id] = outcome.account.model_dump(mode="json")
