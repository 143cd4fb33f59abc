"""A model of Kafka small enough to run thousands of crash schedules a second.

Plain lists and dicts, no asyncio, no pydantic; every random choice comes from the one
`random.Random` handed in, so a schedule is a function of its seed. Nothing here knows
about the wallet: a driver of any design (today's, or the log-as-ledger one of issue 17)
uses the same calls.

What it models:
- **Topics** with a fixed number of partitions; a partition is a list of records
  `(key, value, writer)`; a record's offset is its index.
- **Acknowledgement**. `append` puts a record in the partition's *unacknowledged tail*; it is
  durable, and readers can see it, only once it is acknowledged: `ack(writer)` (the
  producer's flush), or `ack(writer, topics)` for some topics only (publish_all's gather
  acks the outputs before flush_all the changelogs). Kafka commits a partition in log
  order, so acking a record makes every record before it in the partition durable too,
  whoever wrote it: the durable records are always a prefix (`end` is its length, the
  high watermark).
- **kill -9** (`kill(writer)`): on each partition, a random prefix of the writer's
  unacknowledged records reached the broker (they stay, now durable: the writer just never
  heard back), the rest is lost (or as many as `keep` says, for a crafted schedule).
  Records of other writers still unacknowledged after a lost one move down one offset: an
  offset is final once its record is durable, so `append`'s return value is provisional
  until then.
- **Consumer groups**: a committed offset (the next offset to read) per
  (group, topic, partition). `commit` is exact. `commit_acked` commits the way
  faust-streaming 0.15.3's `Consumer._new_offset` does (`faust_new_offset`): it lets a
  one-offset gap at the head through (upstream issue #606) and checks nothing when the
  committed offset is None or 0. Offsets a stream dropped around a rebalance and acked
  anyway are the driver's to put in `acked`.
- **Compacted topics** (changelogs): `latest` folds a partition into its latest value per
  key (a None value deletes), what a worker recovering a table loads.
- **Disks**: a dict per worker (`disk`), which survives `kill` (RocksDB's files do) and is
  emptied by `wipe` (a restart on an empty volume).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

Record = tuple[Any, Any, str, Any]  # key, value, writer, the broker's append time


class Kafka:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.logs: dict[str, list[list[Record]]] = {}
        self.hw: dict[str, list[int]] = {}  # per topic and partition: records durable
        self.compacted: set[str] = set()
        self.unacked: dict[str, set[tuple[str, int]]] = {}  # writer -> its (topic, partition)s
        self.committed: dict[tuple[str, str, int], int] = {}
        self.disks: dict[str, dict[Any, Any]] = {}

    # topics and records

    def create(self, topic: str, partitions: int, compacted: bool = False) -> None:
        self.logs[topic] = [[] for _ in range(partitions)]
        self.hw[topic] = [0] * partitions
        if compacted:
            self.compacted.add(topic)

    def partitions(self, topic: str) -> int:
        return len(self.logs[topic])

    def append(self, topic: str, partition: int, key: Any, value: Any, writer: str,
               at: Any = None) -> int:
        """Send a record (`at`: the broker's append time, if the driver models one); it
        stays in the unacknowledged tail until acked. Its offset (returned) is final once
        it is durable."""
        log = self.logs[topic][partition]
        log.append((key, value, writer, at))
        pending = self.unacked.get(writer)
        if pending is None:
            pending = self.unacked[writer] = set()
        pending.add((topic, partition))
        return len(log) - 1

    def ack(self, writer: str, topics: Iterable[str] | None = None) -> None:
        """The broker acknowledged every record `writer` sent (to `topics`, if given)."""
        pending = self.unacked.get(writer)
        if not pending:
            return
        wanted = None if topics is None else set(topics)
        for tp in sorted(pending):
            topic, partition = tp
            if wanted is not None and topic not in wanted:
                continue
            log = self.logs[topic][partition]
            hw = self.hw[topic]
            for i in range(len(log) - 1, hw[partition] - 1, -1):
                if log[i][2] == writer:
                    hw[partition] = i + 1
                    break
            pending.discard(tp)

    def kill(self, writer: str, keep: dict[str, int] | None = None
             ) -> list[tuple[str, int, int, int]]:
        """kill -9 of `writer`: on each partition a random prefix of its unacknowledged
        records is kept, the rest lost. `keep` (a crafted schedule's) says instead how many
        are kept on each partition of the topics it names, and all of them elsewhere.
        Returns (topic, partition, kept, lost) per partition it had unacknowledged records
        on."""
        report = []
        for topic, partition in sorted(self.unacked.pop(writer, ())):
            log = self.logs[topic][partition]
            hw = self.hw[topic]
            start = hw[partition]
            mine = [i for i in range(start, len(log)) if log[i][2] == writer]
            if keep is None:
                kept = self.rng.randint(0, len(mine))
            else:
                kept = min(len(mine), keep.get(topic, len(mine)))
            if kept:
                hw[partition] = mine[kept - 1] + 1
            lost = set(mine[kept:])
            if lost:
                log[:] = [r for i, r in enumerate(log) if i not in lost]
            report.append((topic, partition, kept, len(lost)))
        return report

    def end(self, topic: str, partition: int) -> int:
        """The high watermark: the offset after the last durable record."""
        return self.hw[topic][partition]

    def read(self, topic: str, partition: int, start: int = 0, stop: int | None = None
             ) -> list[tuple[int, Any, Any]]:
        """(offset, key, value) of the durable records in `[start, stop)`."""
        hw = self.hw[topic][partition]
        stop = hw if stop is None else min(stop, hw)
        log = self.logs[topic][partition]
        return [(i, log[i][0], log[i][1]) for i in range(start, stop)]

    def appended_at(self, topic: str, partition: int, offset: int) -> Any:
        """The broker's append time of the record at `offset` (as `append` was told)."""
        return self.logs[topic][partition][offset][3]

    def latest(self, topic: str, partition: int, start: int = 0) -> dict[Any, Any]:
        """A compacted partition's latest value per key from `start` on (None deletes
        the key: the result maps it to None, so an overlay can delete too)."""
        log = self.logs[topic][partition]
        return {log[i][0]: log[i][1] for i in range(start, self.hw[topic][partition])}

    # consumer groups

    def committed_offset(self, group: str, topic: str, partition: int) -> int | None:
        return self.committed.get((group, topic, partition))

    def commit(self, group: str, topic: str, partition: int, offset: int) -> None:
        """Commit `offset`, the next one to read."""
        self.committed[(group, topic, partition)] = offset

    def commit_acked(self, group: str, topic: str, partition: int, acked: list[int]
                     ) -> int | None:
        """Commit as faust-streaming 0.15.3 does from the offsets its stream acked
        (`acked` is consumed like Faust's own list). Returns the new committed offset."""
        key = (group, topic, partition)
        offset = faust_new_offset(self.committed.get(key), acked)
        if offset is not None and faust_should_commit(self.committed.get(key), offset):
            self.committed[key] = offset
            return offset
        return None

    # disks

    def disk(self, worker: str) -> dict[Any, Any]:
        """The worker's local store: survives `kill`."""
        found = self.disks.get(worker)
        if found is None:
            found = self.disks[worker] = {}
        return found

    def wipe(self, worker: str) -> None:
        self.disks[worker] = {}


def faust_new_offset(committed: int | None, acked: list[int]) -> int | None:
    """faust-streaming 0.15.3's `Consumer._new_offset` (without its gap tree, which only
    read-committed topics use): the offset after the first run of consecutive acked
    offsets; the acked run is removed from `acked`. Its head check is `min(acked) -
    committed > 1`, so acked `[c+1, ...]` over committed `c` commits past the unprocessed
    `c` (#606), and a committed offset of None or 0 is not checked at all."""
    if not acked:
        return None
    acked.sort()
    if committed:
        if acked[0] - committed > 1:
            return None
    end = 1
    while end < len(acked) and acked[end] == acked[end - 1] + 1:
        end += 1
    last = acked[end - 1]
    del acked[:end]
    return last + 1


def faust_should_commit(committed: int | None, offset: int) -> bool:
    """faust-streaming 0.15.3's `Consumer._should_commit`."""
    return committed is None or bool(offset) and offset > committed
