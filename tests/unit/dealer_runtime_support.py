"""dealer-event's runtime on a fake log (no broker): the world the runtime tests share."""

from __future__ import annotations

from services.dealer_event.admission import AdmissionPolicy
from services.dealer_event.rebuild import Rebuilt, fold_events, fold_rejections
from services.dealer_event.runtime import DealerRuntime
from services.dealer_event.table_machine import MachineConfig
from services.infra.clock import ManualClock
from services.simulators.tables.inputs import InputFactory
from shared.events.inputs import CloseBetting
from shared.topics import DEALER_REJECTIONS_TOPIC, TABLE_EVENTS_TOPIC
from tests.unit.table_machine_support import key_for

PARTITIONS = {"A": 0, "B": 1, "C": 0}  # table -> partition (all three topics)


class FakeLog:
    """table.events and dealer.rejections, per partition; a publish may be told to fail
    after writing its first `fail_after` records (a broker failing mid-batch). A publish
    answers where each record landed (partition, offset), as the broker's acks do; with
    `events_key` the rebuild checks HMACs (and so tells a lost race from tampering)."""

    def __init__(self, events_key: bytes | None = None) -> None:
        self.records: list[tuple[str, bytes, bytes]] = []
        self.publishes = 0
        self.fail_after: int | None = None
        self.events_key = events_key
        self.before_publish = None  # called with the records once, before they land

    def _append(self, records) -> list[tuple[int, int]]:
        placed = []
        for topic, key, value in records:
            partition = PARTITIONS[key.decode()] if key.decode() in PARTITIONS else 0
            placed.append((partition, len(self.in_partition(topic, partition))))
            self.records.append((topic, key, value))
        return placed

    def in_partition(self, topic: str, partition: int) -> list[bytes]:
        return [v for t, k, v in self.records if t == topic and PARTITIONS.get(
            k.decode(), 0) == partition]

    async def publish_all(self, records) -> list[tuple[int, int]]:
        self.publishes += 1
        if self.before_publish is not None:
            hook, self.before_publish = self.before_publish, None
            await hook(records)
        if self.fail_after is not None:
            self._append(records[:self.fail_after])
            self.fail_after = None
            raise ConnectionError("broker gone")
        return self._append(records)

    async def read_events(self, partition: int, start: int, stop: int
                          ) -> list[tuple[int, bytes]]:
        values = self.in_partition(TABLE_EVENTS_TOPIC, partition)
        return list(enumerate(values))[start:stop]

    async def rebuild(self, partitions):
        def mine(topic):
            return [(k, v) for t, k, v in self.records if t == topic and (
                partitions is None or PARTITIONS[k.decode()] in partitions)]
        states: dict = {}
        inputs: dict = {}
        fold_events(states, mine(TABLE_EVENTS_TOPIC), self.events_key, inputs=inputs)
        fold_rejections(states, [v for _, v in mine(DEALER_REJECTIONS_TOPIC)], inputs)
        ends = {p: len(self.in_partition(TABLE_EVENTS_TOPIC, p)) for p in set(PARTITIONS.values())
                if partitions is None or p in partitions}
        return Rebuilt(states, inputs, ends)


class World:
    def __init__(self, owned=frozenset({0, 1}), log: FakeLog | None = None, *,
                 events_key: bytes | None = None, tag: str = "rt") -> None:
        self.clock = ManualClock()
        # another World's: a worker restarted on the same log, or a second writer
        self.log = log or FakeLog(events_key)
        self.owned = owned
        config = MachineConfig(AdmissionPolicy(key_for), betting_window_override=5,
                               table_events_key=events_key)
        self.runtime = DealerRuntime(config, self.clock, self.log.publish_all,
                                     self.log.rebuild, lambda: self.owned,
                                     read_events=self.log.read_events)
        self.make = {t: InputFactory(t, key_for, self.clock.now, run_tag=tag)
                     for t in PARTITIONS}

    def raw(self, table: str, command_type, **fields) -> tuple[bytes, int]:
        inp = self.make[table].make(command_type, **fields)
        return inp.model_dump_json().encode(), PARTITIONS[table]

    def events(self, table: str) -> list[bytes]:
        return [v for t, k, v in self.log.records if t == TABLE_EVENTS_TOPIC and k == table.encode()]


def close(w: World, round_id: str) -> tuple[bytes, int]:
    """A supervisor's early close (a device may not close before the timer, seed 002)."""
    return w.raw("A", CloseBetting, round_id=round_id, role="supervisor",
                 reason_text="test: close now")
