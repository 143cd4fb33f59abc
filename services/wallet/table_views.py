"""Every table's recent rounds, on every wallet worker whatever partitions it owns, so any
worker can refuse a bet at the door: each worker folds the whole of `table.events` itself
into an in-memory view (`services.wallet.rounds_view`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from services.infra import metrics
from services.infra.clock import Clock
from services.infra.dead_letters import flag_table, note_void
from services.wallet.rounds_view import TableRounds, fold_checked
from shared.events.table import BettingClosed, parse_table_event

log = logging.getLogger("croupier.wallet")
VIEW_HORIZON_S = 3600  # a worker starts folding table.events from this long ago


class TableViews:
    """Every table's recent rounds: each worker folds the whole of `table.events` itself
    (no consumer group, from VIEW_HORIZON_S ago), a batch of records at a time, on the
    kernel's `follow` loop (`services.infra.consume_loop`). In memory only: at most
    KEEP_ROUNDS rounds per table."""

    def __init__(self, events_key: bytes, accept_unsigned: bool, clock: Clock) -> None:
        self.events_key = events_key
        self.accept_unsigned = accept_unsigned
        self.clock = clock
        self.views: dict[str, TableRounds] = {}
        self.ready = asyncio.Event()
        # (table_id, round_id) -> None: a round's betting closed
        self.on_close: Callable[[str, str], None] | None = None

    def get(self, table_id: str) -> TableRounds | None:
        return self.views.get(table_id)

    def apply(self, raw: bytes) -> None:
        """Fold one record; one that cannot be read or folded is skipped, counted and
        logged (game-evaluation and bet-settlement dead-letter the same record)."""
        try:
            event = parse_table_event(raw)
            before = self.views.get(event.table_id)
            after, refused, verdict = fold_checked(before, event, self.events_key,
                                                   self.accept_unsigned)
            self.views[event.table_id] = after
        except Exception as error:  # noqa: BLE001 - a hostile record must not stop the view
            metrics.MALFORMED.labels("wallet", "table_event").inc()
            log.error("table.events record skipped by the wallet's view: %s: %s",
                      type(error).__name__, str(error)[:300])
            return
        if refused is not None:  # game-evaluation and bet-settlement dead-letter it
            flag_table("wallet", refused, event.table_id)
            return
        if verdict == "void":  # a lost race: nothing of it is folded, nothing flagged
            note_void("wallet", event.table_id, f"seq {event.seq} ({event.type}) does not "
                      f"continue seq {before.last_seq if before else '-'}")
            return
        if isinstance(event, BettingClosed) and self.ready.is_set() and verdict == "apply":
            self.closed(event.table_id, event.round_id)

    def closed(self, table_id: str, round_id: str) -> None:
        if self.on_close is not None:
            self.on_close(table_id, round_id)

    def caught_up(self) -> None:
        """Ready: rounds closed and not yet completed may still wait for this worker's
        intake mark (it restarted meanwhile): mark them. Once: the loop starting over after
        a failure folds again what the view holds, and marks nothing again."""
        if self.ready.is_set():
            return
        log.info("table views caught up: %d tables", len(self.views))
        self.ready.set()
        for view in self.views.values():
            for info in view.rounds.values():
                if info.phase == "dealing":
                    self.closed(view.table_id, info.round_id)

    def apply_batch(self, batch) -> None:
        """Fold a batch of the kernel's `follow` loop, record by record."""
        for record in batch:
            self.apply(record.value)

    def since_ms(self, horizon_s: float = VIEW_HORIZON_S) -> int:
        """Where a worker starts folding: `horizon_s` ago."""
        return int((self.clock.now().timestamp() - horizon_s) * 1000)
