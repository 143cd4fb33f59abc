"""Tails the platform's topics and keeps, per round the benchmark plays, what the log
says happened to its bets: decided, settled, credited, and when.

Timestamps are the records' own (CreateTime, set by the service that wrote them), so
"completion → credit" is measured between two log records, not from the benchmark's
view of them. Reads from where the log ended when the watcher started; rounds the
benchmark did not register are skipped after a cheap look at their round id.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field

from aiokafka import AIOKafkaConsumer
from aiokafka.structs import TopicPartition

from services.infra.kafka_security import OPERATOR, aiokafka_options
from shared.topics import (
    BETS_DECISIONS_TOPIC,
    BETS_SETTLED_TOPIC,
    TABLE_EVENTS_TOPIC,
    WALLET_TRANSACTIONS_TOPIC,
)

TOPICS = (TABLE_EVENTS_TOPIC, BETS_DECISIONS_TOPIC, BETS_SETTLED_TOPIC, WALLET_TRANSACTIONS_TOPIC)
CREDIT_KINDS = ("payout", "bet_refund")


@dataclass
class RoundTrack:
    round_id: str
    accepted: set[str] = field(default_factory=set)
    rejected: dict[str, str] = field(default_factory=dict)  # bet id -> reason code
    settled: dict[str, tuple[int, int, str]] = field(default_factory=dict)  # bet -> ts, returned, sid
    credits: dict[str, int] = field(default_factory=dict)  # cause id -> ts
    debits: int = 0
    completed_ms: int | None = None

    @property
    def decided(self) -> int:
        return len(self.accepted) + len(self.rejected)

    def _end_ms(self, bet_id: str) -> int | None:
        """When the bet ended for the player: its credit if it returned money, else its
        settlement (a lost bet moves no money, so no wallet record marks its end)."""
        ts, returned, sid = self.settled[bet_id]
        if returned == 0:
            return ts
        return self.credits.get(sid, self.credits.get(bet_id))

    def outstanding(self) -> int:
        """Bets not yet ended: accepted but unsettled or uncredited, rejected but unrefunded."""
        left = sum(1 for b in self.accepted if b not in self.settled or self._end_ms(b) is None)
        return left + sum(1 for b in self.rejected if b not in self.credits)

    def done(self) -> bool:
        return self.completed_ms is not None and self.outstanding() == 0

    def end_latencies_s(self) -> list[float]:
        """Completion → each settled bet's end, seconds."""
        if self.completed_ms is None:
            return []
        ends = (self._end_ms(b) for b in self.settled)
        return [(e - self.completed_ms) / 1000 for e in ends if e is not None]

    @property
    def last_credit_ms(self) -> int | None:
        return max(self.credits.values()) if self.credits else None

    def last_credit_s(self) -> float | None:
        if self.completed_ms is None or self.last_credit_ms is None:
            return None
        return (self.last_credit_ms - self.completed_ms) / 1000


class LogWatcher:
    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.rounds: dict[str, RoundTrack] = {}
        self._consumer: AIOKafkaConsumer | None = None
        self._task: asyncio.Task | None = None

    def track(self, round_id: str) -> RoundTrack:
        return self.rounds.setdefault(round_id, RoundTrack(round_id))

    async def start(self) -> None:
        self._consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap,
                                          enable_auto_commit=False, max_poll_records=5000,
                                          **aiokafka_options(OPERATOR))
        await self._consumer.start()
        tps = [TopicPartition(t, p) for t in TOPICS
               for p in sorted(self._consumer.partitions_for_topic(t)
                               or await self._partitions(t))]
        self._consumer.assign(tps)
        await self._consumer.seek_to_end(*tps)
        for tp in tps:  # resolve the positions now, so later records are never skipped
            await self._consumer.position(tp)
        self._task = asyncio.create_task(self._run())

    async def _partitions(self, topic: str) -> set[int]:
        await self._consumer._client.force_metadata_update()
        return self._consumer.partitions_for_topic(topic) or {0}

    def pause(self) -> None:
        """Stop fetching while a timed intake phase runs (the benchmark shares 2 cores with
        the platform); the records wait in the log and are read on resume."""
        self._consumer.pause(*self._consumer.assignment())

    def resume(self) -> None:
        self._consumer.resume(*self._consumer.assignment())

    async def _run(self) -> None:
        while True:
            batch = await self._consumer.getmany(timeout_ms=200, max_records=5000)
            for tp, records in batch.items():
                for r in records:
                    self._apply(tp.topic, r.timestamp, r.value)

    def _apply(self, topic: str, ts: int, value: bytes) -> None:
        if not value or b'"round_id"' not in value:
            return
        doc = json.loads(value)
        track = self.rounds.get(doc.get("round_id"))
        if track is None:
            return
        kind = doc.get("type")
        if topic == TABLE_EVENTS_TOPIC:
            if kind == "round_completed":
                track.completed_ms = ts
        elif topic == BETS_DECISIONS_TOPIC:
            if kind == "bet_accepted":
                track.accepted.add(doc["bet_id"])
            elif kind == "bet_rejected":
                track.rejected[doc["bet_id"]] = doc.get("reason_code", "?")
        elif topic == BETS_SETTLED_TOPIC and kind == "bet_settled":
            track.settled[doc["bet_id"]] = (ts, doc["returned"], doc["settlement_id"])
        elif topic == WALLET_TRANSACTIONS_TOPIC:
            if doc.get("kind") in CREDIT_KINDS:
                track.credits[doc["cause_id"]] = ts
            elif doc.get("kind") == "stake_debit":
                track.debits += 1

    async def wait(self, condition, timeout_s: float, poll_s: float = 0.05,
                   abort=None) -> bool:
        """True once `condition()` holds; False when `timeout_s` passes first, or at once
        when `abort()` says there is no point waiting (a service died)."""
        deadline = time.monotonic() + timeout_s
        next_check = 0.0
        while time.monotonic() < deadline:
            if self._task is not None and self._task.done():
                self._task.result()  # a dead watcher raises here instead of hanging
            if condition():
                return True
            if abort is not None and time.monotonic() >= next_check:
                if abort():
                    return condition()
                next_check = time.monotonic() + 1.0
            await asyncio.sleep(poll_s)
        return condition()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._consumer is not None:
            await self._consumer.stop()
