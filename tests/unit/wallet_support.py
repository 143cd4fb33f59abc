"""The wallet's command handlers applied as its agent applies them, for the wallet handler,
acceptance and metrics tests: a change becomes one ledger entry (`Change.entry`), sent as
bytes and read back, then folded by the real fold (`own_log.fold_entry` over
`WalletFold.apply`) into one partition's state, a dict. The next command reads that state
through `Lookups`, as the kernel's `decide` does."""

from __future__ import annotations

from datetime import UTC, datetime

from services.infra.own_log import Fold, PartitionState, fold_entry
from services.wallet import handlers
from services.wallet.commands import Envelope, PlaceBet
from services.wallet.ledger import Account, BetRecord
from services.wallet.ledger_fold import WALLET_FOLD, Lookups, spot_state_key
from shared.events.sources import InputRef
from shared.events.wallet_ledger import LedgerEntry

NOW = datetime(2026, 1, 1, tzinfo=UTC)
COMMANDS = "wallet-commands"  # the input the entries name as their source


def fold_all(entries: list[tuple[int, LedgerEntry]], fold: Fold = WALLET_FOLD
             ) -> PartitionState:
    """A fresh partition state folded from `(offset, entry)` records alone (a recovery)."""
    state: PartitionState = PartitionState(0)
    for offset, entry in entries:
        fold_entry(state, offset, entry, fold, entry.recorded_at)
    return state


class Ledger:
    """One partition of the wallet: commands in, entries out, state = their fold."""

    def __init__(self, player_id: str = "p1", fold: Fold = WALLET_FOLD) -> None:
        self.player_id = player_id
        self.fold = fold
        self.state: PartitionState = PartitionState(0)
        self.look = Lookups(self.state.kv)
        self.entries: list[tuple[int, LedgerEntry]] = []  # (offset, entry), as in the log
        self.commands = 0  # offsets of the commands topic handed out so far
        self.largest_value = 0  # bytes of the entry the last command wrote (0: none)

    @property
    def kv(self) -> dict:
        return self.state.kv

    @property
    def account(self) -> Account | None:
        return self.look.account(self.player_id)

    def bet_of(self, bet_id: str) -> BetRecord | None:
        return self.look.bet_of(self.player_id, bet_id)

    @property
    def bets(self) -> dict[str, BetRecord]:
        prefix = f"b/{self.player_id}/"
        return {k[len(prefix):]: v for k, v in self.kv.items() if k.startswith(prefix)}

    @property
    def spots(self) -> dict[str, int]:
        return {k: v for k, v in self.kv.items() if k.startswith(spot_state_key(""))}

    def run(self, fn, cmd) -> handlers.CommandResult:
        """One handler, on the account as the fold holds it."""
        account = self.look.account(cmd.player_id)
        args = (account, cmd) if fn is handlers.create_account else (
            account, cmd, NOW, self.look)
        return self.write(fn(*args))

    def handle(self, cmd, now: datetime = NOW) -> handlers.CommandResult:
        """The command through `handlers.handle`, as the agent applies an envelope."""
        return self.write(handlers.handle(Envelope(command=cmd), now, self.look), now)

    def write(self, outcome: handlers.CommandResult, now: datetime = NOW
              ) -> handlers.CommandResult:
        """The outcome's change as the next entry of the log, folded."""
        source = InputRef(topic=COMMANDS, partition=0, offset=self.commands)
        self.commands += 1
        self.largest_value = 0
        if outcome.change is None:
            return outcome
        entry = outcome.change.entry(f"w0:{len(self.entries) + 1}", self.state.head_id,
                                     self.state.published_through, source, now)
        raw = entry.model_dump_json().encode()
        self.largest_value = len(raw)
        landed = LedgerEntry.model_validate_json(raw)  # what the log holds and a fold reads
        offset = self.state.end
        # the broker appended it when its writer says: clocks that agree
        assert fold_entry(self.state, offset, landed, self.fold, landed.recorded_at), \
            "a chained entry is valid"
        self.entries.append((offset, landed))
        return outcome

    def last_entry(self) -> LedgerEntry:
        return self.entries[-1][1]


def bet(stake=3000, bet_id="b1", **extra) -> PlaceBet:
    return PlaceBet(player_id="p1", bet_id=bet_id, table_id="T1", round_id="R1", bet="player",
                    stake=stake, **extra)
