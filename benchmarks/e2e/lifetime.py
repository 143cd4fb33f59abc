"""A player with many lifetime bets must cost per bet what a new player does (issue 10).

Measured through the wallet's pure handlers (services/wallet/handlers.py) and its ledger
fold (services/wallet/ledger_fold.py), with an in-memory dict as the folded state: one
player places and settles bets one after the other, as the wallet's account agent would,
and each command also pays for the ledger entry it writes (built and serialised, as the
kernel sends it) and for folding it. The cost per bet of a new player's first bets is
compared with that after `lifetime_bets` (least of three windows of `window` bets each).
History is built by the same handlers, bounded in time: if the time runs out, the figure
says how far it got.
"""

from __future__ import annotations

import gc
import itertools
import time
from datetime import UTC, datetime

from services.wallet import commands, handlers
from services.wallet.ledger_fold import WALLET_FOLD, Lookups, account_key
from shared.events.sources import InputRef
from shared.events.wallet_ledger import Account

WINDOW = 1_000


def _dump(model) -> int:
    return len(model.model_dump_json())


class _Player:
    """One account and its folded state, kept as the wallet's own log keeps them; every
    entry written is serialised, as the kernel's send would."""

    def __init__(self) -> None:
        self.kv: dict = {account_key("lifer"): Account(player_id="lifer", currency="IDR",
                                                       balance=10**15)}
        self.look = Lookups(self.kv)
        self.offsets = itertools.count()
        self.last_entry = 0

    @property
    def account(self) -> Account:
        return self.kv[account_key("lifer")]

    def _keep(self, env: commands.Envelope, now: datetime) -> None:
        outcome = handlers.handle(env, now, self.look)
        if outcome.answer.status >= 300:
            raise RuntimeError(f"handler refused: {outcome.answer.body}")
        if outcome.change is None:
            return
        offset = next(self.offsets)
        entry = outcome.change.entry(f"w:{offset}", f"w:{offset - 1}", offset - 1,
                                     InputRef(topic="commands", partition=0, offset=offset),
                                     now)
        self.last_entry = _dump(entry)
        WALLET_FOLD.apply(self.kv, entry)
        for _topic, _key, value in WALLET_FOLD.outputs(entry):  # the outbox's records
            len(value)

    def one_bet(self, n: int, now: datetime) -> None:
        bet_id = f"lifer-{n}"
        place = commands.PlaceBet(player_id="lifer", bet_id=bet_id, table_id="T", round_id=f"R{n}",
                                  bet="player", stake=1000)
        self._keep(commands.Envelope(command=place), now)
        end = commands.EndBet(player_id="lifer", bet_id=bet_id, ending="settled",
                              returned=2000 if n % 2 else 0, settlement_id=f"s-{bet_id}",
                              table_id="T", round_id=f"R{n}")
        self._keep(commands.Envelope(command=end), now)


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
    return best, player.last_entry


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
            "entry_bytes_new": new_size, "entry_bytes_old": old_size,
            "complete": done >= lifetime_bets}
