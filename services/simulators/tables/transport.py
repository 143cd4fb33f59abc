"""How the simulator reaches dealer-event: its HTTP door (answers with the decision)
or straight onto `dealer.inputs` (fire and forget, like a device on the bus)."""

from __future__ import annotations

import asyncio
from typing import Protocol

import httpx

from services.infra.http_retry import with_retry
from shared.events.inputs import InputBase
from shared.topics import DEALER_INPUTS_TOPIC


class Transport(Protocol):
    async def send(self, inp: InputBase) -> dict: ...

    async def close(self) -> None: ...


# A table cannot deal past an input nobody decided, so a device keeps sending it for
# longer than a player's 30 s: through two dealer-event workers failing over one after
# the other (the second's restart on a loaded machine) without ending the session.
DEVICE_RETRY_FOR_S = 120.0


class HttpTransport:
    def __init__(self, url: str, timeout_s: float = 30.0,
                 retry_for_s: float = DEVICE_RETRY_FOR_S) -> None:
        self._client = httpx.AsyncClient(base_url=url.rstrip("/"), timeout=timeout_s)
        self._retry_for_s = retry_for_s

    async def send(self, inp: InputBase) -> dict:
        """The decision on `inp`. During a fail-over the same signed input is sent again;
        if an earlier attempt was applied, the retry is refused `duplicate_input`, which
        here means accepted (the table moved once)."""
        body = inp.model_dump_json()
        response, retries = await with_retry(lambda: self._client.post(
            "/inputs", content=body, headers={"content-type": "application/json"}),
            self._retry_for_s)
        report = response.json()
        if retries and report.get("reason_code") == "duplicate_input":
            return {"status": "accepted", "input_id": inp.input_id, "table_id": inp.table_id,
                    "events": [], "note": "applied by an earlier attempt"}
        return report

    async def close(self) -> None:
        await self._client.aclose()


class KafkaTransport:
    def __init__(self, bootstrap: str) -> None:
        from services.infra.kafka_clients import durable_producer
        from services.infra.kafka_security import TABLE_DEVICE

        # a table device's principal: it may write dealer.inputs and nothing else
        self._producer = durable_producer(bootstrap, TABLE_DEVICE)

    async def send(self, inp: InputBase) -> dict:
        def _send() -> None:
            self._producer.send(DEALER_INPUTS_TOPIC, key=inp.table_id.encode(),
                                value=inp.model_dump_json().encode()).get(timeout=30)

        await asyncio.to_thread(_send)
        return {"status": "sent", "input_id": inp.input_id}

    async def close(self) -> None:
        await asyncio.to_thread(self._producer.close)
