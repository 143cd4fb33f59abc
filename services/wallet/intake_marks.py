"""A wallet worker's intake marks: when a round's betting closes, each worker writes on
`bets.placed`, for the partitions of the commands topic it owns, the moment through which
every bet its agent stamped is acknowledged (docs/decisions/acceptance.md)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import faust

from services.infra.batching import publish_all
from services.infra.clock import Clock
from services.infra.consumer import settling
from services.infra.settings import Settings
from shared.events.bet_events import IntakeMark
from shared.topics import BETS_PLACED_TOPIC

log = logging.getLogger("croupier.wallet")
MARK_TRIES = 20


class IntakeMarks:
    def __init__(self, app: faust.App, settings: Settings,
                 owned: Callable[[], tuple[int, ...]], batch_lock: asyncio.Lock,
                 clock: Clock) -> None:
        self.app = app
        self.settings = settings
        self.owned = owned
        self.batch_lock = batch_lock  # held by the accounts agent while it applies a batch
        self.clock = clock
        self._sending: set[asyncio.Task] = set()

    def owned_command_partitions(self) -> tuple[int, ...]:
        """The wallet-commands partitions (players) this worker's agent applies: assigned,
        and their ledger folded (so their outbox is published)."""
        return self.owned()

    async def send_mark(self, table_id: str, round_id: str) -> None:
        """This worker's intake mark for a round whose betting closed: taken between
        batches, so every bet its agent stamped before `through` is already acknowledged
        on bets.placed, and every bet it stamps later is stamped after `through`."""
        for _ in range(MARK_TRIES):  # (re)starting: wait for the assignment and the recovery
            if self.owned_command_partitions() and not settling(self.app):
                break
            await asyncio.sleep(0.5)
        async with self.batch_lock:
            partitions = self.owned_command_partitions()
            if not partitions:
                log.info("no wallet partitions here: no intake mark for %s/%s", table_id,
                         round_id)
                return
            settings = self.settings
            mark = IntakeMark(table_id=table_id, round_id=round_id, partitions=partitions,
                              partition_count=settings.topic_partitions,
                              worker=f"{settings.instance}-wallet-{settings.worker_id}",
                              through=self.clock.now())
            await publish_all(self.app, [(BETS_PLACED_TOPIC, table_id.encode(),
                                          mark.model_dump_json().encode())])

    def schedule(self, table_id: str, round_id: str) -> None:
        """Send the round's mark in the background (TableViews.on_close)."""
        task = asyncio.ensure_future(self.send_mark(table_id, round_id))
        self._sending.add(task)
        task.add_done_callback(self._sent)

    def _sent(self, task: asyncio.Task) -> None:
        self._sending.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("intake mark not sent (the round closes at its result instead): %s",
                      task.exception())
