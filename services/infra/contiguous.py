"""Read every offset of a partition, in order, even when Faust's stream drops one.

Faust's stream skips, without a word, a record tagged with an older consumer generation
than the app's (a fetch that straddles a rebalance); the consumer's position has already
moved past it, so it is never read again. Seen in the e2e run: after a kill -9,
game-evaluation never saw seq 15 of a table, so that round got no result and its bets
were never settled. Every topic our agents read is append-only (delete policy, no
transactions), so a partition's offsets are contiguous and a jump means records were
dropped: the reader then seeks the consumer back to the first missing offset and drops
what it reads until that offset comes again. Reading a record again is safe: every
consumer is idempotent on deterministic ids.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from time import monotonic

import faust

from services.infra import metrics

log = logging.getLogger(__name__)
REWIND_PATIENCE_S = 30.0  # past this, a missing offset is taken as gone (logged)


class ContiguousReads:
    """Decides, record by record, whether the reader may take it (True) or must drop it
    (False) because an earlier offset of its partition is missing and being read again."""

    def __init__(self, consumer, service: str,
                 read_committed: Callable[[], dict | None] | None = None) -> None:
        self.consumer, self.service = consumer, service
        self.read_committed = read_committed  # blocking: the group's committed offsets
        self.committed: dict | None = None  # read once per generation
        self.generation: int | None = None
        self.expected: dict = {}  # tp -> the next offset to read
        self.rewinding: dict = {}  # tp -> (missing offset, give-up time)

    async def admit(self, event: faust.EventT) -> bool:
        message = event.message
        if message.generation_id != self.generation:  # a rebalance: positions were reset
            self.generation = message.generation_id
            self.expected.clear()
            self.rewinding.clear()
            self.committed = None
        tp, offset = message.tp, message.offset
        want = self.expected.get(tp)
        if want is None:  # the first read since the rebalance: from the committed offset
            want = await self._committed(tp)
        if want is None or offset <= want:  # in order, a record again, or nothing to go by
            self.expected[tp] = offset + 1
            self.rewinding.pop(tp, None)
            return True
        rewind = self.rewinding.get(tp)
        if rewind is not None and rewind[0] == want:
            if monotonic() < rewind[1]:
                return False  # read before the seek took effect: it comes again later
            log.error("%s: offsets %d..%d of %s never came back after a rewind; going on",
                      self.service, want, offset - 1, tp)
            self.expected[tp] = offset + 1
            self.rewinding.pop(tp, None)
            return True
        metrics.REWINDS.labels(self.service, tp.topic).inc()
        self.expected[tp] = want
        log.warning("%s: %s jumped from offset %d to %d (records dropped by the stream); "
                    "reading again from %d", self.service, tp, want, offset, want)
        await self.consumer.seek(tp, want)
        self.rewinding[tp] = (want, monotonic() + REWIND_PATIENCE_S)
        return False

    async def _committed(self, tp) -> int | None:
        """The group's committed offset of `tp` (the next record to read), read from the
        broker once per rebalance: where Faust sought the partition. (Faust's own
        `_committed_offset` can be stale for a partition this worker owned before.) Faust's
        commit tolerates one missing offset at a partition's head (`min(acked) - committed
        > 1`), so a first record dropped right after a rebalance would otherwise be
        committed past and lost (an e2e round never settled: bet-settlement's new owner
        never read its result)."""
        if self.read_committed is None:
            return None
        if self.committed is None:
            try:
                self.committed = await asyncio.to_thread(self.read_committed) or {}
            except Exception as error:  # noqa: BLE001 - then only in-order reads are checked
                log.warning("%s: reading the committed offsets failed: %s", self.service, error)
                self.committed = {}
        offset = self.committed.get((tp.topic, tp.partition))
        return offset if isinstance(offset, int) and offset >= 0 else None
