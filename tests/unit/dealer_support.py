"""dealer-event on the real kernel against an in-memory log (no broker): the world the
dealer-event tests share.

`MemoryLog` holds every partition as a list (`dealer.inputs`, `dealer.log`) and what was
published (`table.events`, `dealer.rejections`, `dead.letters`); it is the kernel's
`LogIO`. A `World` is one worker: its own `OwnLog` of `dealer.log` and its `Decisions`,
deciding batches through the kernel's `apply_batch` as the consume loop would hand them
on. Two worlds on one log are two workers (a restart, a zombie and the new owner)."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Any

from services.dealer_event.admission import AdmissionPolicy
from services.dealer_event.dealer_fold import DEALER_FOLD, tables_of
from services.dealer_event.decisions import LOST_RACE, Decisions
from services.dealer_event.state import TableState
from services.dealer_event.table_machine import MachineConfig
from services.infra.clock import ManualClock
from services.infra.kernel import Decided, OwnLog, apply_batch, revoker
from services.infra.own_log import Landed, Logged, entries_of
from services.simulators.tables.inputs import InputFactory
from shared.events.dealer_log import DealerEntry
from shared.events.inputs import CloseBetting
from shared.topics import (
    DEALER_INPUTS_TOPIC,
    DEALER_LOG_TOPIC,
    DEALER_REJECTIONS_TOPIC,
    TABLE_EVENTS_TOPIC,
)
from tests.crashsim.consume import Event, Message
from tests.unit.agent_loop_support import APPENDED
from tests.unit.table_machine_support import key_for

PARTITIONS = {"A": 0, "B": 1, "C": 0}  # table -> partition (every dealer topic)


class MemoryLog:
    """`kernel.LogIO` on in-memory partitions; every send is acknowledged, unless
    `fail_after` says a send writes that many records and then fails (a broker failing
    mid-send; a record of an own log may be a pack of entries, landing whole or not at
    all). `before_send`, if set, runs once before the next send lands (another writer
    getting in first)."""

    own_topic = DEALER_LOG_TOPIC  # the own log `entries` and `logged` read
    parse = staticmethod(DealerEntry.model_validate_json)

    def __init__(self) -> None:
        self.logs: dict[tuple[str, int], list[bytes]] = defaultdict(list)
        self.published: list[tuple[str, bytes, bytes]] = []
        self.fail_after: int | None = None
        self.before_send: Callable[[], Awaitable[None]] | None = None
        self.sends = 0

    async def send(self, topic, partition, records):
        if self.before_send is not None:
            hook, self.before_send = self.before_send, None
            await hook()
        self.sends += 1
        log = self.logs[(topic, partition)]
        landed = []
        for i, (_key, value) in enumerate(records):
            if self.fail_after is not None and i >= self.fail_after:
                self.fail_after = None
                raise ConnectionError("broker gone")
            log.append(value)
            landed.append(Landed(len(log) - 1, APPENDED))
        return landed

    async def read(self, topic, partition, start):
        log = self.logs[(topic, partition)]
        return [Logged(o, v, APPENDED) for o, v in enumerate(log) if o >= start], len(log)

    async def publish(self, records):
        self.published += list(records)

    async def end(self, topic, partition):
        return len(self.logs[(topic, partition)])

    def append_input(self, table: str, value: bytes) -> Event:
        """A record on dealer.inputs (a device's, the door's or the timer's), as the
        consumer would hand it on."""
        partition = PARTITIONS.get(table, 0)
        log = self.logs[(DEALER_INPUTS_TOPIC, partition)]
        log.append(value)
        return Event(Message(DEALER_INPUTS_TOPIC, partition, len(log) - 1, value,
                             table.encode()))

    def logged(self, partition: int = 0) -> list[tuple[int, Any]]:
        """(offset, entry) for every entry of the own log's partition, in order: a pack's
        entries all at its record's offset (`own_log.entries_of`)."""
        return [(offset, entry)
                for offset, value in enumerate(self.logs[(self.own_topic, partition)])
                for entry in entries_of(value, self.parse)]

    def entries(self, partition: int = 0) -> list[Any]:
        """Every entry of the own log's partition, in order (however they were packed)."""
        return [entry for _, entry in self.logged(partition)]

    def on(self, topic: str, table: str) -> list[bytes]:
        return [v for t, k, v in self.published if t == topic and k == table.encode()]


class World:
    """One dealer-event worker on `log` (a new one by default)."""

    def __init__(self, owned=frozenset({0, 1}), log: MemoryLog | None = None, *,
                 events_key: bytes | None = None, tag: str = "rt", writer: str = "w1") -> None:
        self.clock = ManualClock()
        self.log = log or MemoryLog()
        self.owned = set(owned)
        config = MachineConfig(AdmissionPolicy(key_for), betting_window_override=5,
                               table_events_key=events_key)
        self.decisions = Decisions(config, self.clock, PARTITIONS.get)
        self.own: OwnLog[DealerEntry] = OwnLog("dealer-event", DEALER_LOG_TOPIC, DEALER_FOLD,
                                               DealerEntry.model_validate_json,
                                               lambda e: e.table_id.encode(), writer)
        self.own.io = self.log
        self.make = {t: InputFactory(t, key_for, self.clock.now, run_tag=tag)
                     for t in PARTITIONS}
        # what each decided record was answered: (partition, offset) -> report
        self.answers: dict[tuple[int, int], dict[str, Any]] = {}

    @property
    def config(self) -> MachineConfig:
        return self.decisions.config

    @config.setter
    def config(self, config: MachineConfig) -> None:
        self.decisions.config = config

    def raw(self, table: str, command_type, **fields) -> Event:
        """A signed input of `table` put on dealer.inputs (not decided yet)."""
        inp = self.make[table].make(command_type, **fields)
        return self.log.append_input(table, inp.model_dump_json().encode())

    def put(self, table: str, value: bytes) -> Event:
        return self.log.append_input(table, value)

    def _answer(self, event, decided: Decided, backed: bool) -> None:
        self.decisions.answer(event, decided, backed)
        reply = decided.reply
        if reply is not None and reply.report is not None:
            m = event.message
            self.answers[(m.partition, m.offset)] = reply.report if backed else {
                "status": LOST_RACE, "input_id": reply.report.get("input_id")}

    async def handle(self, events: list[Event]) -> list[dict | None]:
        """The kernel's batch over the records of owned partitions (the others are another
        worker's), and what each was answered (None: nothing, a tick or not ours)."""
        ours = [e for e in events if e.message.partition in self.owned]
        if ours:
            await apply_batch(self.own, ours, self.decisions.decide, self._answer)
        return [self.answers.get((e.message.partition, e.message.offset)) for e in events]

    async def tick(self) -> list[dict | None]:
        """The timer: a tick for each owned table with something due, then the ticks
        decided (as the consumer hands them on)."""
        asks = [self.log.append_input(t.table_id, t.model_dump_json().encode())
                for t in self.decisions.due_ticks(self.tables.values())]
        return await self.handle(asks)

    async def recover(self) -> None:
        for partition in sorted(self.owned):
            await self.own.recover(partition)

    def revoke(self, partitions: set[int]) -> None:
        """A rebalance took the partitions (the kernel's hook, wired as app.py wires it)."""
        revoker(self.own, self.decisions.moved)(partitions)
        self.owned -= partitions

    @property
    def tables(self) -> dict[str, TableState]:
        """The tables of the owned partitions, as this worker's fold has them."""
        found: dict[str, TableState] = {}
        for partition in sorted(self.owned):
            state = self.own.state(partition)
            if state is not None:
                found.update(tables_of(state.kv))
        return found

    def events(self, table: str) -> list[bytes]:
        return self.log.on(TABLE_EVENTS_TOPIC, table)

    def kinds(self, table: str) -> list[str]:
        return [json.loads(v)["type"] for v in self.events(table)]

    def rejections(self, table: str) -> list[dict]:
        return [json.loads(v) for v in self.log.on(DEALER_REJECTIONS_TOPIC, table)]


def close(w: World, round_id: str) -> Event:
    """A supervisor's early close (a device may not close before the timer, seed 002)."""
    return w.raw("A", CloseBetting, round_id=round_id, role="supervisor",
                 reason_text="test: close now")
