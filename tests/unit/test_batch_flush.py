"""A batch's offsets are committed only after its table changelog records are acknowledged.

Faust's own producer flush gives up on its buffer after 0.1 s without progress; on a slow
machine that let a batch be acked before its changelog records reached the broker, and a
worker killed then lost state (CI: bets placed but never settled after a kill -9)."""

from __future__ import annotations

import asyncio

from services.infra.batching import flush_all, track_buffer


class GivingUpBuffer:
    """A producer buffer whose sender is slower than Faust's flush is willing to wait."""

    def __init__(self) -> None:
        self.queued: list[asyncio.Future] = []

    def put(self, fut: asyncio.Future) -> None:
        self.queued.append(fut)


class GivingUpProducer:
    def __init__(self) -> None:
        self.buffer = GivingUpBuffer()

    async def flush(self) -> None:  # returns at once, as Faust's does after its 0.1 s wait
        return None


def test_flush_waits_for_every_buffered_record_to_be_acknowledged():
    async def scenario() -> tuple[bool, bool]:
        producer = GivingUpProducer()
        await flush_all(producer)  # starts tracking the buffer
        loop = asyncio.get_running_loop()
        changelog_write = loop.create_future()
        producer.buffer.put(changelog_write)
        flushing = asyncio.ensure_future(flush_all(producer))
        await asyncio.sleep(0.3)
        waited = not flushing.done()
        changelog_write.set_result("acknowledged")
        await asyncio.wait_for(flushing, 1.0)
        return waited, flushing.done()

    waited, finished = asyncio.run(scenario())
    assert waited, "flush returned while a changelog record was still unacknowledged"
    assert finished


def test_a_failed_changelog_write_fails_the_flush():
    async def scenario() -> None:
        producer = GivingUpProducer()
        await flush_all(producer)
        write = asyncio.get_running_loop().create_future()
        producer.buffer.put(write)
        write.set_exception(ConnectionError("broker away"))
        await flush_all(producer)

    try:
        asyncio.run(scenario())
    except ConnectionError:
        return
    raise AssertionError("a batch whose changelog write failed must not be acked")


def test_acknowledged_records_are_forgotten():
    async def scenario() -> int:
        producer = GivingUpProducer()
        await flush_all(producer)
        for _ in range(1000):
            write = asyncio.get_running_loop().create_future()
            producer.buffer.put(write)
            write.set_result(None)
        await asyncio.sleep(0)
        await flush_all(producer)
        return len(track_buffer(producer).futures)

    assert asyncio.run(scenario()) == 0
