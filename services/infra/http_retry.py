"""Retry an idempotent HTTP call while a service fails over, as a well-behaved client does.

A worker that dies takes its partitions with it until the group moves them (the
session timeout, a few seconds): meanwhile its keys answer 503 (Retry-After) or the
connection fails. Every write our clients make carries its own idempotency key (a
bet id, an input id, a request id), so sending the same request again is safe; the
answer to a retry says so (200 with the original body, or `duplicate_input`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from time import monotonic

import httpx

RETRY_STATUSES = frozenset({502, 503, 504})
DEFAULT_RETRY_FOR_S = 30.0


async def with_retry(call: Callable[[], Awaitable[httpx.Response]],
                     retry_for_s: float = DEFAULT_RETRY_FOR_S) -> tuple[httpx.Response, int]:
    """(the first answer that is not a fail-over answer, or the last one; retries made)."""
    deadline = monotonic() + retry_for_s
    retries = 0
    while True:
        try:
            response = await call()
            if response.status_code not in RETRY_STATUSES or monotonic() >= deadline:
                return response, retries
            wait = float(response.headers.get("Retry-After", "0") or 0)
        except httpx.TransportError:
            if monotonic() >= deadline:
                raise
            wait = 0.0
        retries += 1
        await asyncio.sleep(max(wait, min(2.0, 0.2 * retries)))
