"""The cyclic garbage collector's settings of a service's worker process.

Measured in the wallet under `make bench-e2e` (6 December 2026, CPython 3.11, default
thresholds 700/10/10): a third of the worker's time at intake went to the collector, and
a full collection, over every object the worker holds (about 130,000 from its start-up
and its state's), paused the event loop for 0.2-0.9 s, 30 times in two minutes. Full
collections came that often because the records of a batch in flight (requests, futures,
buffers) live a few milliseconds, long enough to survive two young collections at 700
allocations each and count towards a full one, then die by reference counting anyway.

So (`tune`, before the worker starts):
- the young generation is collected every `YOUNG` allocations, not 700: what lives less
  than a batch's round trip dies before it is ever promoted;
- what the process built before its worker started (modules, classes, the app) is moved
  out of the collector's sight (`gc.freeze`): it lives as long as the process, and no
  full collection walks it again.
Garbage without cycles is freed by reference counting as before; only cycles wait longer.
"""

from __future__ import annotations

import gc

YOUNG = 50_000  # allocations between young collections (CPython's default: 700)
MIDDLE = 20  # young collections between middle ones (default 10)
OLD = 10  # middle collections between full ones, at least (default 10)


def tune() -> None:
    """Apply the thresholds, and freeze what exists now (call once, before the worker
    starts)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG, MIDDLE, OLD)
