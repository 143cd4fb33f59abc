"""Time, injected. Services ask a Clock; tests hand them a ManualClock and never sleep."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...

    def elapsed(self) -> float:
        """Seconds on a monotonic clock (only differences mean anything): a wall clock reset
        moves `now`, never this."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def elapsed(self) -> float:
        return time.monotonic()


class ManualClock:
    """A clock that moves only when told to."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._elapsed = 0.0

    def now(self) -> datetime:
        return self._now

    def elapsed(self) -> float:
        return self._elapsed

    def advance(self, seconds: float) -> datetime:
        self._now += timedelta(seconds=seconds)
        self._elapsed += seconds
        return self._now

    def reset_to(self, wall: datetime) -> None:
        """The wall clock set to another time (an operator's mistake, a bad NTP source):
        `now` jumps, the monotonic clock does not."""
        self._now = wall
