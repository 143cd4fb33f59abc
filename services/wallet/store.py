"""The wallet's read side: a player's folded state, from the worker that owns it.

Every value is the fold of `wallet.ledger` (`services.wallet.ledger_fold`), kept
per partition of the commands topic by the kernel's `OwnLog`. A partition this worker has
not recovered (a rebalance, a restart still folding) has no state here: its players are
answered 503, never 404.
"""

from __future__ import annotations

from collections.abc import Callable

from services.infra.kernel import OwnLog
from services.wallet.ledger_fold import Lookups

PartitionOf = Callable[[str], int]  # player id -> its partition of the commands topic


class Store:
    def __init__(self, own: OwnLog, partition_of: PartitionOf) -> None:
        self.own = own
        self.partition_of = partition_of

    def lookups(self, player_id: str) -> Lookups | None:
        """Point reads of the player's partition, or None while it is not recovered here."""
        state = self.own.state(self.partition_of(player_id))
        return None if state is None else Lookups(state.kv)
