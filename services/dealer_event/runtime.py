"""The worker's side of dealer-event: table states in memory, decisions published to Kafka.

One lock serialises every decision (inputs and the betting timer), so a table's
events are sealed and published strictly in order. Each event is acknowledged by
the broker before the in-memory state moves on; if a publish fails, the state is
rebuilt from the log before the next decision (the log is the source of truth).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta

from services.dealer_event.admission import AdmissionPolicy
from services.dealer_event.intake import Parsed, make_rejection, parse_raw
from services.dealer_event.refusals import Refusal
from services.dealer_event.state import TableState
from services.dealer_event.table_machine import MachineConfig, Outcome, step, tick
from services.infra import metrics
from services.infra.clock import Clock
from services.infra.settings import Settings
from services.infra.table_keys import table_key
from shared.events.table import (
    TABLE_EVENT_TYPES,
    RoundCompleted,
    RoundVoided,
    TableEventBase,
    VoidReason,
)
from shared.profile import ProfileError, load_profile

log = logging.getLogger(__name__)

Publish = Callable[[str, bytes, bytes], Awaitable[None]]  # (topic, key, value), acked
Rebuild = Callable[[], Awaitable[dict[str, TableState]]]


def machine_config(settings: Settings) -> MachineConfig:
    def key_for(table_id: str, role: str) -> bytes:
        return table_key(settings.table_signing_secret, table_id, role)

    policy = AdmissionPolicy(key_for, timedelta(seconds=settings.input_max_age_seconds),
                             timedelta(seconds=settings.input_max_ahead_seconds))
    return MachineConfig(policy, settings.betting_window_seconds)


class DealerRuntime:
    def __init__(self, config: MachineConfig, clock: Clock, publish: Publish,
                 rebuild: Rebuild) -> None:
        self.config = config
        self.clock = clock
        self._publish = publish
        self._rebuild = rebuild
        self.tables: dict[str, TableState] = {}
        self.ready = False
        self._lock = asyncio.Lock()
        self._waiters: dict[str, list[asyncio.Future]] = {}

    async def ensure_ready(self) -> None:
        if self.ready:
            return
        async with self._lock:
            await self._ensure_ready_locked()

    async def _ensure_ready_locked(self) -> None:
        if not self.ready:
            self.tables = await self._rebuild()
            self.ready = True

    def expect(self, input_id: str) -> asyncio.Future:
        """A future the HTTP door awaits: resolved with the decision on `input_id`."""
        fut = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(input_id, []).append(fut)
        return fut

    def forget(self, input_id: str, fut: asyncio.Future) -> None:
        waiting = self._waiters.get(input_id, [])
        if fut in waiting:
            waiting.remove(fut)
        if not waiting:
            self._waiters.pop(input_id, None)

    async def handle_raw(self, raw: bytes) -> dict:
        parsed = parse_raw(raw)
        async with self._lock:
            await self._ensure_ready_locked()
            if parsed.input is None:
                report = await self._refuse(parsed, parsed.refusal, raw)
            else:
                report = await self._decide(parsed, raw)
        for fut in self._waiters.pop(parsed.input_id or "", []):
            if not fut.done():
                fut.set_result(report)
        return report

    async def tick_all(self) -> None:
        async with self._lock:
            await self._ensure_ready_locked()
            now = self.clock.now()
            for table_id, state in list(self.tables.items()):
                outcome = tick(state, now)
                if outcome.events:
                    await self._commit(table_id, outcome)

    async def _decide(self, parsed: Parsed, raw: bytes) -> dict:
        inp = parsed.input
        state = self.tables.get(inp.table_id) or TableState(inp.table_id)
        outcome = step(state, inp, self.clock.now(), self.config)
        await self._commit(inp.table_id, outcome)
        if outcome.refusal is not None:
            return await self._refuse(parsed, outcome.refusal, raw)
        metrics.INPUTS.labels(inp.table_id, "accepted", metrics.NO_REASON).inc()
        return {"status": "accepted", "input_id": inp.input_id, "table_id": inp.table_id,
                "events": [_brief(e) for e in outcome.events]}

    async def _commit(self, table_id: str, outcome: Outcome) -> None:
        """Publish the events (each acked), then adopt the new state."""
        try:
            for event in outcome.events:
                await self._publish("table.events", table_id.encode(),
                                    event.model_dump_json().encode())
                count_published(event, outcome.state)
        except Exception:
            log.exception("publishing to table.events failed; rebuilding from the log")
            self.ready = False
            raise
        self.tables[table_id] = outcome.state

    async def _refuse(self, parsed: Parsed, refusal: Refusal, raw: bytes) -> dict:
        record = make_rejection(parsed, refusal, raw, self.clock.now())
        await self._publish("dealer.rejections", record.table_id.encode(),
                            record.model_dump_json().encode())
        table = parsed.table_id if parsed.table_id in self.tables else metrics.UNKNOWN_TABLE
        metrics.INPUTS.labels(table, "refused", refusal.code).inc()
        log.info("refused %s on table %s: %s (%s)", parsed.input_id, parsed.table_id,
                 refusal.code, refusal.message)
        return {"status": "refused", "input_id": parsed.input_id, "table_id": parsed.table_id,
                "reason_code": refusal.code, "message": refusal.message,
                "rejection_id": record.rejection_id}


def game_of(state: TableState) -> str:
    """The game the table's current round (or shoe) plays, for the rounds metric."""
    profile = state.round.profile if state.round else state.shoe.profile if state.shoe else None
    try:
        return load_profile(profile).game if profile else metrics.OTHER
    except ProfileError:
        return metrics.OTHER


def count_published(event: TableEventBase, state: TableState) -> None:
    """Metrics of one event the broker acknowledged (a round is counted once, when its
    RoundCompleted or RoundVoided is in the log)."""
    metrics.TABLE_EVENTS.labels(event.type).inc()
    if isinstance(event, RoundCompleted | RoundVoided):
        outcome = "completed" if isinstance(event, RoundCompleted) else "voided"
        metrics.ROUNDS.labels(event.table_id, game_of(state), outcome).inc()
    if isinstance(event, RoundVoided):
        metrics.VOIDS.labels(str(event.reason_code)).inc()


def init_metrics() -> None:
    metrics.init_series(metrics.VOIDS, [str(r) for r in VoidReason])
    metrics.init_series(metrics.TABLE_EVENTS,
                        [t.model_fields["type"].default for t in TABLE_EVENT_TYPES])


def _brief(event: TableEventBase) -> dict:
    return {"seq": event.seq, "type": event.type, "event_id": event.event_id}
