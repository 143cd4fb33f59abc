"""Futures an HTTP request waits on until the agent in the same process answers it.

A view registers a future under a key (`expect`), sends its command or input to Kafka,
and awaits the future; the agent that applies the command resolves every future waiting
under its key (`resolve`). The view always `forget`s its future when it stops waiting
(answered, timed out or failed), so nothing is kept for a request no one waits for.

A future may carry a tag (dealer-event: the partition of the input it waits for), so a
caller can answer every waiter whose tag no longer holds (`answer_each`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

Answer = TypeVar("Answer")
Tag = TypeVar("Tag")


class Replies(Generic[Answer, Tag]):
    """Futures waiting for an answer, by key; several may wait under one key."""

    def __init__(self) -> None:
        self._waiting: dict[str, list[tuple[asyncio.Future[Answer], Tag | None]]] = {}

    def __len__(self) -> int:
        """How many futures are waiting."""
        return sum(len(waiting) for waiting in self._waiting.values())

    def expect(self, key: str, tag: Tag | None = None) -> asyncio.Future[Answer]:
        """A new future, resolved by the next `resolve(key, ...)`."""
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(key, []).append((future, tag))
        return future

    def forget(self, key: str, future: asyncio.Future[Answer] | None = None) -> None:
        """Stop waiting: `future` only, or (None) every future under `key`."""
        waiting = [] if future is None else [
            w for w in self._waiting.get(key, []) if w[0] is not future]
        if waiting:
            self._waiting[key] = waiting
        else:
            self._waiting.pop(key, None)

    def resolve(self, key: str | None, answer: Answer) -> None:
        """Answer every future waiting under `key` (none for None or "") and forget them."""
        if not key:
            return
        for future, _ in self._waiting.pop(key, []):
            if not future.done():
                future.set_result(answer)

    def answer_each(self, answer_of: Callable[[str, Tag | None], Answer | None]) -> None:
        """Answer each waiting future for which `answer_of(key, tag)` is not None (they stay
        registered until their waiter forgets them)."""
        for key, waiting in list(self._waiting.items()):
            for future, tag in list(waiting):
                if future.done():
                    continue
                answer = answer_of(key, tag)
                if answer is not None:
                    future.set_result(answer)
