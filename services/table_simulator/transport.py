"""How the simulator reaches dealer-event: its HTTP door (answers with the decision)
or straight onto `dealer.inputs` (fire and forget, like a device on the bus)."""

from __future__ import annotations

import asyncio
from typing import Protocol

import httpx

from shared.events.inputs import InputBase


class Transport(Protocol):
    async def send(self, inp: InputBase) -> dict: ...

    async def close(self) -> None: ...


class HttpTransport:
    def __init__(self, url: str, timeout_s: float = 30.0) -> None:
        self._client = httpx.AsyncClient(base_url=url.rstrip("/"), timeout=timeout_s)

    async def send(self, inp: InputBase) -> dict:
        response = await self._client.post(
            "/inputs", content=inp.model_dump_json(),
            headers={"content-type": "application/json"})
        return response.json()

    async def close(self) -> None:
        await self._client.aclose()


class KafkaTransport:
    def __init__(self, bootstrap: str) -> None:
        from kafka import KafkaProducer

        self._producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")

    async def send(self, inp: InputBase) -> dict:
        def _send() -> None:
            self._producer.send("dealer.inputs", key=inp.table_id.encode(),
                                value=inp.model_dump_json().encode()).get(timeout=30)

        await asyncio.to_thread(_send)
        return {"status": "sent", "input_id": inp.input_id}

    async def close(self) -> None:
        await asyncio.to_thread(self._producer.close)
