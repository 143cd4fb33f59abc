"""The wallet's state as the fold of `wallet.ledger`: one function for live state,
recovery and `croupier rebuild`.

An entry writes, each under its own key (absolute values, so a fold is idempotent):
- `a/<player>`           -> Account (balance, tx_count)
- `t/<player>/<seq>`     -> WalletTransaction (the paged history)
- `x/<player>/<tx_id>`   -> seq (a cause is applied once)
- `b/<player>/<bet_id>`  -> BetRecord (retry answers, a bet ends once)
- `s/<spot key>`         -> the player's total on a spot of a round (seed 002)
- `c/<player>/<tx id>`   -> OperatorCall (seamless mode: a call to the operator's wallet,
                            pending until its answer is written over it)
and publishes its transaction on `wallet.transactions`, its funded bet on `bets.placed`
and each call it answers on `wallet.operator_calls` (the outbox:
`services.infra.own_log`).

With a window (`CROUPIER_WALLET_STATE_WINDOW_HOURS`, `WalletFold(window)`), every key but the
accounts expires a window after it was last written, on the fold's clock (the ledger's
`recorded_at`, never the wall clock): a bet's record and the tx ids of the bet's movements
are one group (the bet's key), so whenever a bet's record is held, so is every movement
it made (its end and its reversal are never applied twice); the history, the other tx ids
and the spot totals expire each alone, the history oldest first
(docs/decisions/wallet-window.md). A pending call never expires (it is owed until the
operator answers); once answered, it expires with its bet.

Pure: no Kafka, no clock.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from services.infra.own_log import Record, Writes
from shared.events.operator_wallet import OperatorCall
from shared.events.sources import InputRef
from shared.events.wallet_events import WalletTransaction
from shared.events.wallet_ledger import (
    Account,
    BetRecord,
    CommandKind,
    LedgerEntry,
    SpotTotal,
)
from shared.topics import (
    BETS_PLACED_TOPIC,
    WALLET_OPERATOR_CALLS_TOPIC,
    WALLET_TRANSACTIONS_TOPIC,
)

MIN_WINDOW = timedelta(hours=24)  # the dispute window: a round is corrected within 24 h


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


def call_key(player_id: str, transaction_id: str) -> str:
    return f"c/{player_id}/{transaction_id}"


def pending_calls(kv: Mapping[str, Any]) -> list[OperatorCall]:
    """Every call a folded state still owes the operator's wallet (a scan: on recovery)."""
    return [value for key, value in kv.items() if key.startswith("c/") and value.pending]


@dataclass(frozen=True)
class WalletExpiry:
    """`services.infra.own_log.Expiry` of the wallet: everything but the accounts."""

    window: timedelta

    def expiring(self, entry: LedgerEntry) -> Iterator[tuple[str, str]]:
        player_id = entry.account.player_id
        bet_group = bet_key(player_id, entry.bet_id) if entry.bet_id is not None else None
        if entry.tx is not None:
            history = tx_key(player_id, entry.account.tx_count)
            yield history, history
            index = tx_id_key(player_id, entry.tx.tx_id)
            yield bet_group or index, index
        if bet_group is not None:
            yield bet_group, bet_group
        if entry.spot is not None:
            spot = spot_state_key(entry.spot.key)
            yield spot, spot
        for call in entry.calls:
            if not call.pending:  # owed until answered; then it goes with its bet
                key = call_key(player_id, call.request.transaction_id)
                yield bet_group or key, key


class WalletFold:
    """`services.infra.own_log.Fold` for the wallet's ledger; with a `window`, its
    state holds the last window's history, tx ids, bets and spots, and every account."""

    def __init__(self, window: timedelta | None = None) -> None:
        if window is not None and window < MIN_WINDOW:
            raise ValueError(f"the wallet's state window must be at least {MIN_WINDOW}, "
                             f"got {window}")
        self.expiry = None if window is None else WalletExpiry(window)

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
        for call in entry.calls:
            kv[call_key(player_id, call.request.transaction_id)] = call

    def outputs(self, entry: LedgerEntry) -> list[Record]:
        out: list[Record] = []
        if entry.tx is not None:
            out.append((WALLET_TRANSACTIONS_TOPIC, entry.tx.player_id.encode(),
                        entry.tx.model_dump_json().encode()))
        if entry.placed is not None:
            out.append((BETS_PLACED_TOPIC, entry.placed.table_id.encode(),
                        entry.placed.model_dump_json().encode()))
        out += [(WALLET_OPERATOR_CALLS_TOPIC, entry.account.player_id.encode(),
                 call.record().model_dump_json().encode())
                for call in entry.calls if not call.pending]
        return out


WALLET_FOLD = WalletFold()  # keeps every key (tests, tools); the wallet's own has a window


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

    def call(self, player_id: str, transaction_id: str) -> OperatorCall | None:
        found: OperatorCall | None = self.kv.get(call_key(player_id, transaction_id))
        return found

    def spot_total(self, spot_key: str) -> int:
        found: int = self.kv.get(spot_state_key(spot_key), 0)
        return found

    def oldest_held_seq(self, player_id: str) -> int:
        """The first seq of the player's history the state holds (`tx_count + 1` if none):
        1 unless older movements expired. The history expires oldest first, so the held
        seqs are the last ones: found in O(log n) point reads."""
        account = self.account(player_id)
        if account is None:
            return 1
        low, high = 1, account.tx_count + 1  # the answer is in [low, high]
        while low < high:
            mid = (low + high) // 2
            if tx_key(player_id, mid) in self.kv:
                high = mid
            else:
                low = mid + 1
        return low

    def history_expired(self, player_id: str) -> bool:
        """Some of the player's movements are no longer held (the archive has them)."""
        return self.oldest_held_seq(player_id) > 1


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
    calls: tuple[OperatorCall, ...] = ()  # seamless mode: owed, or answered

    def entry(self, entry_id: str, prev: str, published_through: int, source: InputRef,
              now: datetime) -> LedgerEntry:
        return LedgerEntry(entry_id=entry_id, prev=prev, source=source, command=self.command,
                           account=self.account, tx=self.tx, bet_id=self.bet_id, bet=self.bet,
                           spot=self.spot, placed=self.placed, calls=self.calls,
                           published_through=published_through, recorded_at=now)
