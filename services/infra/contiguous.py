"""Notice, and say, when Faust's stream skips an offset of a partition.

Faust's stream skips, without a word, a record tagged with an older consumer generation
than the app's (a fetch that straddles a rebalance), and its commit can then move past
it. Seen in clean-clone e2e runs after a kill -9: game-evaluation's new owner of a
partition never saw seq 15 of a table; bet-settlement's never read a round's result.
Every topic our agents read is append-only (delete policy, no transactions), so a
partition's offsets are contiguous and a jump means records were skipped.

This only detects: a warning naming the partition and the offsets, and
`croupier_consumer_rewinds_total`. Seeking the consumer back from here was tried and
did not work (Faust's consumer thread never re-delivered the offsets), so the fix of the
skip itself is open (docs/decisions/scale.md).
"""

from __future__ import annotations

import logging

import faust

from services.infra import metrics

log = logging.getLogger(__name__)


class ContiguousReads:
    """Follows each partition's offsets within a consumer generation."""

    def __init__(self, service: str) -> None:
        self.service = service
        self.generation: int | None = None
        self.expected: dict = {}  # tp -> the next offset to read

    def admit(self, event: faust.EventT) -> bool:
        """Note the record's offset; a jump is logged and counted. Always True."""
        message = event.message
        if message.generation_id != self.generation:  # a rebalance: positions were reset
            self.generation = message.generation_id
            self.expected.clear()
        tp, offset = message.tp, message.offset
        want = self.expected.get(tp)
        if want is not None and offset > want:
            metrics.REWINDS.labels(self.service, tp.topic).inc()
            log.warning("%s: %s jumped from offset %d to %d: the stream skipped %d record(s)",
                        self.service, tp, want, offset, offset - want)
        self.expected[tp] = offset + 1
        return True
