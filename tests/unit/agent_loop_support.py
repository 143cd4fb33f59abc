"""Test doubles for an agent's consume loop without a broker (Faust has no in-memory
transport): events as a Faust stream yields them, and a broker standing in for the app's
producer (`publish_all` and `flush_all` as the services call them). Every step lands in one
ordered log, so a test can tell what happened before what."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from faust.types import TP

Record = tuple[str, bytes, bytes]
APPENDED = datetime(2026, 1, 1, tzinfo=UTC)  # when a fake broker appends (folds without expiry)


@dataclass
class Message:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: float | None = None

    @property
    def tp(self) -> TP:
        return TP(self.topic, self.partition)


class Event:
    """One record as a Faust stream yields it (weak-referenceable, as `processing` needs)."""

    def __init__(self, topic: str, offset: int, key: bytes | None, value: bytes | None,
                 partition: int = 0, timestamp: float | None = None) -> None:
        self.message = Message(topic, partition, offset, key, value, timestamp=timestamp)
        self.key, self.value = key, value


class Broker:
    """What the loop published and flushed, in order: `steps` holds ("publish", records),
    and ("flush",) as they happened."""

    def __init__(self) -> None:
        self.steps: list[tuple] = []

    @property
    def published(self) -> list[Record]:
        return [record for step in self.steps if step[0] == "publish" for record in step[1]]

    def topics(self) -> list[str]:
        return [topic for topic, _, _ in self.published]

    def kinds(self) -> list[str]:
        return [step[0] for step in self.steps]

    async def publish_all(self, app, records: Iterable[Record]) -> None:
        records = list(records)
        if records:
            self.steps.append(("publish", records))

    async def flush_all(self, producer=None) -> None:
        self.steps.append(("flush",))
