"""Chained `wallet.ledger` entries for the snapshot tests: deposits, and bets with their
record and spot total, spread over players, each entry chained on the one before (as the
wallet chains a partition's entries)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

from shared.events.sources import InputRef
from shared.events.wallet_events import WalletTransaction, tx_id
from shared.events.wallet_ledger import Account, BetRecord, LedgerEntry, SpotTotal

COMMANDS = "t-wallet-commands"
AT = datetime(2026, 12, 3, 8, 0, tzinfo=UTC)


class Ledger:
    """A writer of one partition's entries; `entries(n)` continues where it stopped."""

    def __init__(self, writer: str = "w", players: int = 50, partition: int = 0) -> None:
        self.writer = writer
        self.players = players
        self.partition = partition
        self.n = 0
        self.prev = ""
        self.balances = [0] * players
        self.seqs = [0] * players

    def entries(self, count: int) -> Iterator[LedgerEntry]:
        for _ in range(count):
            yield self.next()

    def next(self, published_through: int | None = None) -> LedgerEntry:
        n, p = self.n, self.n % self.players
        player = f"snap-p{p}"
        bet = self.seqs[p] % 2 == 1 and self.balances[p] >= 500
        kind = "stake_debit" if bet else "deposit"
        amount = 500 if bet else 1000
        self.balances[p] += -amount if bet else amount
        self.seqs[p] += 1
        cause = f"b{n}" if bet else f"d{n}"
        tx = WalletTransaction(tx_id=tx_id(kind, cause), player_id=player, kind=kind,
                               amount=amount, balance_after=self.balances[p], currency="IDR",
                               cause_id=cause, table_id="T1" if bet else None,
                               round_id="R1" if bet else None, occurred_at=AT)
        entry_id = f"{self.writer}:{n + 1}"
        entry = LedgerEntry(
            entry_id=entry_id, prev=self.prev,
            source=InputRef(topic=COMMANDS, partition=self.partition, offset=n),
            command="place_bet" if bet else "deposit",
            account=Account(player_id=player, currency="IDR", balance=self.balances[p],
                            tx_count=self.seqs[p]),
            tx=tx, bet_id=cause if bet else None,
            bet=BetRecord(fingerprint=f"fp{n}", table_id="T1", round_id="R1", stake=amount,
                          debit_seq=self.seqs[p], placed_at=AT) if bet else None,
            spot=SpotTotal(key=f"T1/R1/{player}/player", total=amount * (n // 3 + 1))
            if bet else None,
            published_through=n - 1 if published_through is None else published_through,
            recorded_at=AT)
        self.n += 1
        self.prev = entry_id
        return entry
