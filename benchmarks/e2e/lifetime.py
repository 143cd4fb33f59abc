"""A player with many lifetime bets must cost per bet what a new player does (issue 10).

Measured through the wallet's pure handlers (services/wallet/handlers.py) with
in-memory dicts standing in for the per-item store keys: one player places and settles
bets one after the other, as the wallet's account agent would, and each command also
pays what the agent writes for it (the account value and each new per-item value
serialised, as a changelog write would). The cost per bet of a new player's first bets
is compared with that after `lifetime_bets` (least of three windows of `window` bets
each). History is built by the same handlers, bounded in time: if the time runs out,
the figure says how far it got.
"""

from __future__ import annotations

import gc
import time
from datetime import UTC, datetime

from croupier.services.wallet import commands, handlers, ledger
from croupier.shared.events.wallet_events import WalletTransaction

WINDOW = 1_000


def _dump(model) -> int:
    return len(model.model_dump_json())


class _Player:
    """One account and its per-item keys, kept as the wallet's store would keep them; every
    value written is serialised, as the changelog write would be."""

    def __init__(self) -> None:
        self.account = ledger.Account(player_id="lifer", currency="IDR", balance=10**15)
        self.tx_by_seq: dict[tuple[str, int], WalletTransaction] = {}
        self.seq_by_tx: dict[tuple[str, str], int] = {}
        self.bets: dict[tuple[str, str], ledger.BetRecord] = {}
        self.look = handlers.Lookups(
            tx_at=lambda p, s: self.tx_by_seq.get((p, s)),
            seq_of=lambda p, t: self.seq_by_tx.get((p, t)),
            bet_of=lambda p, b: self.bets.get((p, b)))

    def _keep(self, outcome: handlers.CommandResult) -> None:
        if outcome.answer.status >= 300:
            raise RuntimeError(f"handler refused: {outcome.answer.body}")
        if outcome.account is not None:
            self.account = outcome.account
            _dump(self.account)
        for seq, tx in zip(outcome.seqs, outcome.txs, strict=True):
            self.tx_by_seq[(tx.player_id, seq)] = tx
            self.seq_by_tx[(tx.player_id, tx.tx_id)] = seq
            _dump(tx)
        for bet_id, record in outcome.bets.items():
            self.bets[(self.account.player_id, bet_id)] = record
            _dump(record)
        for _topic, _key, record in outcome.publish:
            _dump(record)

    def one_bet(self, n: int, now: datetime) -> None:
        bet_id = f"lifer-{n}"
        place = commands.PlaceBet(player_id="lifer", bet_id=bet_id, table_id="T", round_id=f"R{n}",
                                bet="player", stake=1000)
        self._keep(handlers.place_bet(self.account, place, now, self.look))
        end = commands.EndBet(player_id="lifer", bet_id=bet_id, ending="settled",
                            returned=2000 if n % 2 else 0, settlement_id=f"s-{bet_id}",
                            table_id="T", round_id=f"R{n}")
        self._keep(handlers.end_bet(self.account, end, now, self.look))


def _timed(player: _Player, start: int, count: int, now: datetime, repeats: int = 3
           ) -> tuple[float, int]:
    """CPU seconds per bet (the least of `repeats` runs of `count` bets), and the account
    value's size after them. The dicts stand in for an off-heap store (RocksDB), so the
    history in them is frozen out of Python's cyclic GC, which would otherwise charge
    the in-memory stand-in, not the wallet, for every object kept."""
    best = float("inf")
    gc.collect()
    gc.freeze()
    try:
        for r in range(repeats):
            began = time.process_time()
            for n in range(start + r * count, start + (r + 1) * count):
                player.one_bet(n, now)
            best = min(best, (time.process_time() - began) / count)
    finally:
        gc.unfreeze()
    return best, _dump(player.account)


def measure(lifetime_bets: int, window: int = WINDOW, budget_s: float = 240.0) -> dict:
    try:
        now = datetime.now(UTC)
        window = max(1, min(window, lifetime_bets // 6))
        _timed(_Player(), 0, window, now, 1)  # warm the code paths
        player = _Player()
        new_cost, new_size = _timed(player, 0, window, now)
        done, deadline = 3 * window, time.monotonic() + budget_s
        while done < lifetime_bets - 3 * window and time.monotonic() < deadline:
            step = min(5_000, lifetime_bets - 3 * window - done)
            for n in range(done, done + step):
                player.one_bet(n, now)
            done += step
        old_cost, old_size = _timed(player, done, window, now)
        done += 3 * window
    except Exception as exc:  # a handler refused: say so, keep the other figures
        return {"lifetime_bets": lifetime_bets, "ratio": None,
                "error": f"{type(exc).__name__}: {exc}"[:400]}
    return {"lifetime_bets": done, "asked_lifetime_bets": lifetime_bets, "window": window,
            "new_ms_per_bet": new_cost * 1000, "old_ms_per_bet": old_cost * 1000,
            "ratio": old_cost / new_cost if new_cost else None,
            "account_bytes_new": new_size, "account_bytes_old": old_size,
            "complete": done >= lifetime_bets}
