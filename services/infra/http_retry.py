"""Retry an idempotent HTTP call while a service fails over, as a well-behaved client does.

A worker that dies takes its partitions with it until the group moves them (the
session timeout, a few seconds): meanwhile its keys answer 503 (Retry-After) or the
connection fails. Every write our clients make carries its own idempotency key (a
bet id, an input id, a request id), so sending the same request again is safe; the
answer to a retry says so (200 with the original body, or `duplicate_input`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from time import monotonic
from typing import Any, Protocol, TypeVar, cast

import aiohttp
import httpx

RETRY_STATUSES = frozenset({502, 503, 504})
# ... unless the answer names one of these: the request's own outcome, the same on every
# retry (seamless mode: the operator's wallet never answered the bet's debit in time, or
# refused it as the integration's fault; docs/decisions/seamless.md)
FINAL_CODES = frozenset({"operator_wallet_timeout", "bad_signature", "bad_request",
                         "transaction_conflict", "transaction_rolled_back",
                         "transaction_not_found"})
DEFAULT_RETRY_FOR_S = 30.0
# what a failed exchange raises (no answer at all): a connection refused or cut, a timeout
TRANSPORT_ERRORS = (httpx.TransportError, aiohttp.ClientConnectionError, asyncio.TimeoutError)


class Answered(Protocol):
    @property
    def status_code(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...


R = TypeVar("R", bound=Answered)


@dataclass(frozen=True)
class Reply:
    """An aiohttp answer read in full (the shape of the httpx answers our other clients use)."""

    status_code: int
    headers: Mapping[str, str]
    content: bytes
    method: str = ""
    url: str = ""

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.content)


async def read_reply(session: aiohttp.ClientSession, method: str, url: str,
                     **kwargs: Any) -> Reply:
    """One aiohttp exchange, its body read before the connection goes back to the pool."""
    async with session.request(method, url, **kwargs) as response:
        return Reply(response.status, dict(response.headers), await response.read(), method,
                     str(response.url))


def final(response: Answered) -> bool:
    """A fail-over status whose answer names an outcome of its own (`FINAL_CODES`)."""
    try:
        code = cast(Any, response).json()["error"]["code"]
    except Exception:  # noqa: BLE001 - not our error body: a fail-over answer
        return False
    return code in FINAL_CODES


async def with_retry(call: Callable[[], Awaitable[R]],
                     retry_for_s: float = DEFAULT_RETRY_FOR_S) -> tuple[R, int]:
    """(the first answer that is not a fail-over answer, or the last one; retries made).

    The `retry_for_s` of fail-over start at the first failure, not at the first send: an
    answer that was slow in coming (a door that waits for a decision) and then cut by a
    kill gets the whole budget to reach the restarted worker."""
    deadline: float | None = None  # set by the first fail-over answer or failure
    retries = 0
    while True:
        try:
            response = await call()
            if response.status_code not in RETRY_STATUSES or final(response):
                return response, retries
            deadline = deadline or monotonic() + retry_for_s
            if monotonic() >= deadline:
                return response, retries
            wait = float(response.headers.get("Retry-After", "0") or 0)
        except TRANSPORT_ERRORS:
            deadline = deadline or monotonic() + retry_for_s
            if monotonic() >= deadline:
                raise
            wait = 0.0
        retries += 1
        await asyncio.sleep(max(wait, min(2.0, 0.2 * retries)))
