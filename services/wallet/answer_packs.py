"""Seamless mode: the operator's answers on their way to the ledger, packed by partition.

The caller (`services.wallet.operator_calls`) puts each answer of the operator's wallet on
the commands topic, where the accounts agent records it over its pending call
(docs/decisions/seamless.md). Under load, a batch's debits are asked together and their
answers come back within a few milliseconds of each other: one record each cost a produce,
a fetch and a kernel decision per answer. `AnswerPacks` holds each answer for `linger_s`
(2 ms, the producer's own linger) and sends the answers of one partition of the commands
topic that arrived meanwhile as one record, a pack (`services.infra.packs`) of their
envelopes, keyed by its first answer's player: the producer's partitioner puts it where
each of them would have gone, and the agent decides them one after the other, each
writing its own entry, numbered as the record's parts (`CommandBatches.decide_parts`). An
answer alone is sent as it was before packs, a plain envelope.

Nothing changes for the money: an answer is still only known to this worker until the
broker has its record (the call stays owed in the log), and `send` returns, as before,
once its record is handed to the producer (raising if it was not: the caller sends it
again).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from services.infra.packs import Packs
from services.wallet.commands import Envelope, OperatorAnswered

SendRecord = Callable[[bytes, bytes], Awaitable[None]]  # (key, value) to the commands topic
LINGER_S = 0.002


class AnswerPacks:
    """`send(answered)`: the answer on the commands topic, in a pack with the answers of
    its partition that came within `linger_s` of the first."""

    def __init__(self, send_record: SendRecord, partition_of: Callable[[str], int],
                 linger_s: float = LINGER_S) -> None:
        self.send_record = send_record
        self.partition_of = partition_of
        self.linger_s = linger_s
        self._waiting: dict[int, list[tuple[OperatorAnswered, bytes,
                                            asyncio.Future[None]]]] = {}
        self._flush: asyncio.TimerHandle | None = None
        self._sending: set[asyncio.Task[None]] = set()

    async def send(self, answered: OperatorAnswered) -> None:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        value = Envelope(command=answered).model_dump_json().encode()
        self._waiting.setdefault(self.partition_of(answered.player_id), []).append(
            (answered, value, done))
        if self._flush is None:
            self._flush = loop.call_later(self.linger_s, self.flush)
        await done

    def flush(self) -> None:
        """Send what waits: one record per partition (more past a pack's bounds)."""
        self._flush = None
        waiting, self._waiting = self._waiting, {}
        for answers in waiting.values():
            packs = Packs()
            for _, value, _ in answers:
                packs.add(value)
            for (first, end), record in zip(packs.spans(), packs.packed(), strict=True):
                task = asyncio.ensure_future(self._send(answers[first:end], record))
                self._sending.add(task)
                task.add_done_callback(self._sending.discard)

    async def _send(self, pack: list[tuple[OperatorAnswered, bytes, asyncio.Future[None]]],
                    record: bytes) -> None:
        try:
            await self.send_record(pack[0][0].player_id.encode(), record)
        except Exception as error:  # noqa: BLE001 - each sender is told (and sends again)
            for _, _, done in pack:
                if not done.done():
                    done.set_exception(error)
            return
        for _, _, done in pack:
            if not done.done():
                done.set_result(None)
