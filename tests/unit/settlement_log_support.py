"""bet-settlement on the kernel without a broker: the real `kernel.apply_batch`, the real
`SettlementRecords.decide/answer` and the real fold, with `settlement.log` as an in-memory
list of records (`LogBroker`: the producer's `send` appends and says the offset; `publish_all`
and `flush_all` are logged as tests/unit/agent_loop_support.py's Broker logs them).

A worker's own log state is an `OwnLog` whose `catch_up` folds the in-memory log, so a test
can crash a worker (drop it), start another one and see it recover from the log alone."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from croupier.services.bet_settlement.records import SettlementRecords
from croupier.services.bet_settlement.settlement_fold import LOG_TOPIC, SETTLEMENT_FOLD
from croupier.services.infra import kernel
from croupier.services.infra.clock import Clock
from croupier.services.infra.own_log import PartitionState, fold_entry, skip_to
from croupier.shared.events.settlement_log import SettlementEntry
from tests.event_keys import events_key
from tests.unit.agent_loop_support import Broker, Event


class LogBroker(Broker):
    """Broker + the own log's partitions, as lists of entry bytes."""

    def __init__(self) -> None:
        super().__init__()
        self.log: dict[int, list[bytes]] = {}
        self.fail_after: int | None = None  # entries accepted before the "crash"

    async def send(self, topic, key, value, partition, timestamp, headers):
        assert topic == LOG_TOPIC
        if self.fail_after is not None:
            if self.fail_after == 0:
                raise ConnectionError("the worker died mid-batch")
            self.fail_after -= 1
        part = self.log.setdefault(partition, [])
        part.append(value)
        done = asyncio.get_running_loop().create_future()
        done.set_result(SimpleNamespace(offset=len(part) - 1))
        return done

    def entries(self, partition: int = 0) -> list[SettlementEntry]:
        return [SettlementEntry.model_validate_json(v) for v in self.log.get(partition, [])]


class MemoryOwnLog(kernel.OwnLog):
    """An OwnLog whose log is `broker.log`."""

    def __init__(self, broker: LogBroker) -> None:
        super().__init__("bet-settlement", LOG_TOPIC, SETTLEMENT_FOLD,
                         SettlementEntry.model_validate_json,
                         lambda entry: entry.table_id.encode(), "unused:9092")
        self.broker = broker

        async def publish(records):
            await broker.publish_all(None, records)
        self.publish = publish

    async def catch_up(self, state: PartitionState) -> None:
        values = self.broker.log.get(state.partition, [])
        for offset in range(state.end, len(values)):
            fold_entry(state, offset, self.parse(values[offset]), self.fold)
        skip_to(state, len(values))


class Worker:
    """One bet-settlement worker: its folded partitions and its decisions."""

    def __init__(self, broker: LogBroker, clock: Clock, writer: str = "w0",
                 key: bytes | None = None, accept_unsigned: bool = True) -> None:
        self.broker = broker
        self.own = MemoryOwnLog(broker)
        self.records = SettlementRecords(writer, key or events_key(), accept_unsigned, clock)
        self.app = SimpleNamespace(producer=broker)

    def apply(self, events: list[Event]) -> None:
        """One batch, as `run_own_log` applies it (the records' partitions recovered first)."""
        asyncio.run(self._apply(events))

    async def _apply(self, events: list[Event]) -> None:
        for partition in {e.message.partition for e in events}:
            if self.own.state(partition) is None:
                await self.own.recover(partition)
        await kernel.apply_batch(self.app, self.own, events, self.records.decide,
                                 self.records.answer)

    def kv(self, partition: int = 0) -> dict:
        return self.own.states[partition].kv


def rebuilt(broker: LogBroker, partition: int = 0) -> dict:
    """The partition's state folded from its log alone, by a worker that never saw it."""
    own = MemoryOwnLog(broker)
    own.publish = None  # only folded: nothing published
    return asyncio.run(own.recover(partition)).kv


def patch_kernel(monkeypatch, broker: LogBroker) -> None:
    monkeypatch.setattr(kernel, "publish_all", broker.publish_all)
    monkeypatch.setattr(kernel, "flush_all", broker.flush_all)
