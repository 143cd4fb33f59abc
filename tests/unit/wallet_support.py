"""The wallet's command handlers applied as its agent stores them, for the wallet handler,
acceptance and metrics tests."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from croupier.services.wallet import handlers
from croupier.services.wallet.commands import PlaceBet
from croupier.services.wallet.ledger import Account

NOW = datetime(2026, 1, 1, tzinfo=UTC)


class Ledger:
    """Applies outcomes the way the agent does: one key per fact (txs by seq, tx id ->
    seq, bet id -> record), every stored value serialized as the tables store it."""

    def __init__(self) -> None:
        self.account: Account | None = None
        self.txs: dict[int, object] = {}
        self.seqs: dict[str, int] = {}
        self.bets: dict[str, object] = {}
        self.largest_value = 0  # bytes of the largest value written by the last command
        self.look = handlers.Lookups(tx_at=lambda p, seq: self.txs.get(seq),
                                     seq_of=lambda p, tx_id: self.seqs.get(tx_id),
                                     bet_of=lambda p, bet_id: self.bets.get(bet_id))

    def run(self, fn, cmd) -> handlers.CommandResult:
        args = (self.account, cmd) if fn is handlers.create_account else (
            self.account, cmd, NOW, self.look)
        outcome = fn(*args)
        written = []
        for seq, tx in [*zip(outcome.seqs, outcome.txs, strict=True), *outcome.restored]:
            self.txs[seq] = tx
            self.seqs[tx.tx_id] = seq
            written += [tx.model_dump(mode="json"), seq]
        for bet_id, record in outcome.bets.items():
            self.bets[bet_id] = record
            written.append(record.model_dump(mode="json"))
        if outcome.account is not None:
            self.account = outcome.account
            written.append(outcome.account.model_dump(mode="json"))
        self.largest_value = max([len(json.dumps(v)) for v in written], default=0)
        return outcome


def bet(stake=3000, bet_id="b1") -> PlaceBet:
    return PlaceBet(player_id="p1", bet_id=bet_id, table_id="T1", round_id="R1", bet="player",
                    stake=stake)
