"""The one place where a worker consumes a batch (`Consumer`): which records it takes from
its consumer position, where that position starts on an assignment, and what it commits.

The model: a consumer delivers each assigned input partition from its position P, in
offset order. On an assignment the group's committed offset is where the consumer stands;
the worker then recovers each partition of its own log and seeks every input partition to
`PartitionState.resume_at(topic, partition)` (the own log's checkpoint), so the group's
commit only decides where the consumer stood before the seek. A fetch issued before the
seek (`stale`) hands on one batch from the committed offset, which a faulty commit may have
put anywhere: behind the checkpoint (a redelivery) or past records nobody processed
(faust-streaming #606). After a batch the worker commits its position, or (a fault) any
offset of the log.

When the kernel owns the consume loop, this class is what gets ported to drive it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from faust.types import TP

from services.infra.kernel import OwnLog
from tests.crashsim.kafka_model import Kafka


@dataclass
class Message:
    """A consumed record as the kernel reads it (`event.message`)."""

    topic: str
    partition: int
    offset: int
    value: bytes
    key: bytes | None = None
    timestamp: float | None = None  # the broker's append time (seconds), when known

    @property
    def tp(self) -> TP:
        return TP(self.topic, self.partition)


class Event:
    """A stream's event: the record, its key and value."""

    def __init__(self, message: Message) -> None:
        self.message = message
        self.value = message.value
        self.key = message.key


class Consumer:
    """One worker's consumer of a stage's input topics."""

    def __init__(self, kafka: Kafka, group: str, topics: tuple[str, ...]) -> None:
        self.kafka = kafka
        self.group = group
        self.topics = topics
        self.position: dict[tuple[str, int], int] = {}
        self.stale: dict[tuple[str, int], int] = {}  # a fetch issued before the seek

    @property
    def partitions(self) -> set[int]:
        return {p for _, p in self.position}

    async def assign(self, partitions: set[int], own: OwnLog, stale: bool = False) -> None:
        """A rebalance gave these partitions: recover each from the own log and seek each
        input partition to the log's checkpoint (`stale`: one fetch from the group's
        commit is already on its way)."""
        own.revoke(set(own.owned) - partitions)
        self.position, self.stale = {}, {}
        for p in sorted(partitions):
            state = await own.recover(p)
            for topic in self.topics:
                committed = self.kafka.committed_offset(self.group, topic, p)
                if stale and committed is not None:
                    self.stale[(topic, p)] = committed
                self.position[(topic, p)] = state.resume_at(topic, p)

    def take(self, count: int) -> list[Event]:
        """Up to `count` records of each assigned input partition from where the consumer
        stands (the stale fetch first, once)."""
        source, moving = (self.stale, False) if self.stale else (self.position, True)
        out: list[Event] = []
        for (topic, p), start in sorted(source.items()):
            records = self.kafka.read(topic, p, start, start + count)
            out += [Event(Message(topic, p, o, v, k,
                                  self.kafka.appended_at(topic, p, o).timestamp()))
                    for o, k, v in records]
            if moving:
                self.position[(topic, p)] = start + len(records)
        self.stale = {}
        return out

    def rewind(self, rng: random.Random) -> None:
        """A redelivery: the consumer goes back to some earlier offset."""
        self.position = {tp: rng.randrange(o + 1) for tp, o in self.position.items()}

    def commit(self, rng: random.Random | None = None) -> dict[tuple[str, int], int]:
        """Commit the position; with `rng`, any offset of each log (a faulty commit)."""
        done: dict[tuple[str, int], int] = {}
        for (topic, p), position in self.position.items():
            offset = position if rng is None else rng.randrange(self.kafka.end(topic, p) + 1)
            self.kafka.commit(self.group, topic, p, offset)
            done[(topic, p)] = offset
        return done


__all__: list[Any] = ["Consumer", "Event", "Message"]
