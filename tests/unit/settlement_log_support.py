"""bet-settlement on the kernel without a broker: the real `kernel.apply_batch`, the real
`SettlementRecords.decide/answer` and the real fold, with `settlement.log` as an in-memory
list of records (`LogBroker`, the kernel's `LogIO`: `send` appends and says the offsets,
`read` reads the log back, `publish` is logged as tests/unit/agent_loop_support.py's Broker
logs it).

A worker's own log is an `OwnLog` on that I/O, so a test can crash a worker (drop it),
start another one and see it recover from the log alone."""

from __future__ import annotations

import asyncio

from services.bet_settlement.records import SettlementRecords
from services.bet_settlement.settlement_fold import SETTLEMENT_FOLD
from services.infra import kernel
from services.infra.clock import Clock
from services.infra.own_log import Landed, Logged, entries_of
from shared.events.settlement_log import SettlementEntry
from shared.topics import SETTLEMENT_LOG_TOPIC
from tests.event_keys import events_key
from tests.unit.agent_loop_support import APPENDED, Broker, Event


class LogBroker(Broker):
    """Broker + the own log's partitions, as lists of record bytes (a record: a pack of
    entries, or one entry alone): the kernel's `LogIO`."""

    def __init__(self) -> None:
        super().__init__()
        self.log: dict[int, list[bytes]] = {}
        self.fail_after: int | None = None  # records accepted before the "crash"

    async def send(self, topic, partition, records):
        assert topic == SETTLEMENT_LOG_TOPIC
        offsets = []
        part = self.log.setdefault(partition, [])
        for _key, value in records:
            if self.fail_after is not None:
                if self.fail_after == 0:
                    raise ConnectionError("the worker died mid-batch")
                self.fail_after -= 1
            part.append(value)
            offsets.append(Landed(len(part) - 1, APPENDED))
        return offsets

    async def read(self, topic, partition, start):
        values = self.log.get(partition, []) if topic == SETTLEMENT_LOG_TOPIC else []
        return [Logged(o, values[o], APPENDED) for o in range(start, len(values))], len(values)

    async def end(self, topic, partition):
        return len(self.log.get(partition, []))

    async def partition_for(self, topic, key):  # one partition of every topic
        return 0

    async def publish(self, records):
        await self.publish_all(None, records)
        await self.flush_all()

    def logged(self, partition: int = 0, start: int = 0) -> list[tuple[int, SettlementEntry]]:
        """(offset, entry) for each entry of the partition's records from offset `start`:
        a pack's entries all at its record's offset (`own_log.entries_of`)."""
        values = self.log.get(partition, [])
        return [(offset, entry) for offset in range(start, len(values))
                for entry in entries_of(values[offset], SettlementEntry.model_validate_json)]

    def entries(self, partition: int = 0, start: int = 0) -> list[SettlementEntry]:
        """The entries of the partition's records from offset `start`, in order."""
        return [entry for _, entry in self.logged(partition, start)]


def own_log(broker: LogBroker, writer: str = "w0") -> kernel.OwnLog:
    """An OwnLog whose log is `broker.log`."""
    own = kernel.OwnLog("bet-settlement", SETTLEMENT_LOG_TOPIC, SETTLEMENT_FOLD,
                        SettlementEntry.model_validate_json,
                        lambda entry: entry.table_id.encode(), writer)
    own.io = broker
    return own


class Worker:
    """One bet-settlement worker: its folded partitions and its decisions."""

    def __init__(self, broker: LogBroker, clock: Clock, writer: str = "w0",
                 key: bytes | None = None, accept_unsigned: bool = True) -> None:
        self.broker = broker
        self.own = own_log(broker, writer)
        self.records = SettlementRecords(key or events_key(), accept_unsigned, clock)

    def apply(self, events: list[Event]) -> None:
        """One batch, as `run_own_log` applies it (the records' partitions recovered first)."""
        asyncio.run(self._apply(events))

    async def _apply(self, events: list[Event]) -> None:
        for partition in {e.message.partition for e in events}:
            if self.own.state(partition) is None:
                await self.own.recover(partition)
        await kernel.apply_batch(self.own, events, self.records.decide, self.records.answer)

    def kv(self, partition: int = 0) -> dict:
        return self.own.states[partition].kv


class _Silent(LogBroker):
    async def publish(self, records):  # only folded: nothing published
        return None


def rebuilt(broker: LogBroker, partition: int = 0) -> dict:
    """The partition's state folded from its log alone, by a worker that never saw it."""
    silent = _Silent()
    silent.log = broker.log
    return asyncio.run(own_log(silent, "rebuilder").recover(partition)).kv


def patch_kernel(monkeypatch, broker: LogBroker) -> None:
    """Kept for the tests' set-up: the kernel's I/O is the broker itself (`own.io`)."""
