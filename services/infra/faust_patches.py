"""Faust 0.15.3 commits past an offset it never processed (faust-streaming #606, unmerged).

Upstream `Consumer._new_offset` commits the first run of consecutive acked offsets and
checks the run against the committed offset (the next offset to read) with
`min(acked) - committed > 1`: committed 31 and acked [32, 33] pass and 34 is committed,
past the unprocessed 31. The check is skipped when the committed offset is None or 0
(`if committed_offset:`), so any run is committed then: offset 0 of a fresh partition, or
every offset below a run acked between a revocation and the seek that follows it (when
`on_partitions_revoked` has dropped the committed offset). `perform_seek` stores a
committed 0 as None and, for a partition the group never committed, nothing.

The patch: `_new_offset` commits a run only if it starts at or below the committed offset,
and nothing while that offset is unknown (None). `perform_seek` records a committed 0 as
0 and, for a partition with no committed offset, the consumer's position (the offset its
reset chose, the first it reads): nothing below it is ever handed on. If the position
cannot be had, the offset stays unknown and the partition is not committed until the
next seek.
"""

from __future__ import annotations

import asyncio
from importlib.metadata import version
from typing import Any

from faust.transport.consumer import Consumer, ensure_TP
from faust.types import TP
from faust.utils.functional import consecutive_numbers

FAUST_VERSION = "0.15.3"  # the version read; another one must be read again
POSITION_TIMEOUT_SECONDS = 10.0  # the positions of the uncommitted partitions, once per seek

upstream_new_offset = Consumer._new_offset
upstream_perform_seek = Consumer.perform_seek


def new_offset(self: Consumer, tp: TP) -> int | None:
    """The offset to commit for `tp`: one past the run of acked offsets that starts at or
    below the committed offset, else None (upstream's body but for that check)."""
    acked = self._acked[tp]
    if not acked:
        return None
    max_offset = max(acked)
    gap_for_tp = self._gap[tp]
    if gap_for_tp:
        # offsets the fetcher saw the log skip count as acked (upstream, unchanged)
        sorted_candidates = sorted(gap_for_tp.overlap(0, max_offset), key=lambda x: x.begin)
        if sorted_candidates:
            stuff_to_add: list[int] = []
            for entry in sorted_candidates:
                stuff_to_add.extend(range(entry.begin, entry.end))
            new_max_offset = max(stuff_to_add[-1], max_offset + 1)
            acked.extend(stuff_to_add)
            gap_for_tp.chop(0, new_max_offset)
    acked.sort()
    committed = self._committed_offset[tp]
    # the committed offset is the next one to read: it must itself be acked
    if committed is None or acked[0] > committed:
        return None
    batch = next(consecutive_numbers(acked))
    acked[: len(batch)] = []
    self._acked_index[tp].difference_update(batch)
    return batch[-1] + 1


async def perform_seek(self: Consumer) -> None:
    """Seek every partition to its committed offset (upstream) and record where each one
    starts: the committed offset, 0 included, else the consumer's position."""
    committed = await self.seek_to_committed()
    self._read_offset.update({
        tp: offset if offset is not None and offset >= 0 else None
        for tp, offset in committed.items()})
    heads = {tp: offset for tp, offset in committed.items() if offset is not None and offset >= 0}
    heads.update(await _positions(self, [tp for tp in committed if tp not in heads]))
    self._committed_offset.update(
        {ensure_TP(tp): head for tp, head in heads.items() if head is not None})


async def _positions(consumer: Consumer, tps: list[Any]) -> dict[Any, int | None]:
    """Each partition's position, asked together; None where it cannot be had (revoked
    meanwhile, a timeout): that partition stays unknown, so uncommitted, until the next seek."""
    async def position(tp: Any) -> int | None:
        try:
            return await asyncio.wait_for(consumer.position(tp), POSITION_TIMEOUT_SECONDS)
        except Exception as exc:
            consumer.log.warning("No position for %r (%r): not committed until the next seek",
                                 tp, exc)
            return None

    return dict(zip(tps, await asyncio.gather(*(position(tp) for tp in tps)), strict=True))


def install() -> None:
    """Replace Faust's `Consumer._new_offset` and `Consumer.perform_seek` (idempotent)."""
    installed = version("faust-streaming")
    assert installed == FAUST_VERSION, (
        f"faust-streaming {installed} installed, {FAUST_VERSION} patched: read "
        f"Consumer._new_offset and perform_seek again (services/infra/faust_patches.py)")
    Consumer._new_offset = new_offset  # type: ignore[method-assign]  # deliberate patch
    Consumer.perform_seek = perform_seek  # type: ignore[method-assign]  # deliberate patch


def installed() -> bool:
    return Consumer._new_offset is new_offset and Consumer.perform_seek is perform_seek
