"""HTTP door of dealer-event: POST /inputs, GET /tables/{table_id}, GET /health
(GET /metrics comes from services.infra.observability).

POST /inputs puts the signed input on `dealer.inputs` (the log keeps everything
received) and waits briefly for the worker's decision, so a device or a person
with curl sees "accepted" with the event seqs or "refused" with code and reason.
"""

from __future__ import annotations

import asyncio

from faust import web

from services.dealer_event.app import app, forward, runtime, settings
from services.dealer_event.intake import parse_raw

AUTH_CODES = frozenset({"unsigned", "bad_signature", "role_not_allowed"})


def http_status(report: dict) -> int:
    if report["status"] == "accepted":
        return 200
    code = report["reason_code"]
    if code in AUTH_CODES:
        return 403
    return 409 if code == "duplicate_input" else 422


@app.page("/inputs")
class InputsView(web.View):
    async def post(self, request: web.Request) -> web.Response:
        raw = await request.read()
        parsed = parse_raw(raw)
        waiter = runtime.expect(parsed.input_id) if parsed.input is not None else None
        await forward(raw, parsed.table_id)
        if waiter is None:
            return self.json({"status": "refused", "input_id": parsed.input_id,
                              "reason_code": "malformed_input",
                              "message": parsed.refusal.message}, status=400)
        try:
            report = await asyncio.wait_for(asyncio.shield(waiter),
                                            settings.decision_wait_seconds)
        except TimeoutError:
            runtime.forget(parsed.input_id, waiter)
            return self.json({"status": "queued", "input_id": parsed.input_id}, status=202)
        return self.json(report, status=http_status(report))


@app.page("/tables/{table_id}")
class TableView(web.View):
    async def get(self, request: web.Request, table_id: str) -> web.Response:
        state = runtime.tables.get(table_id)
        if state is None:
            return self.json({"error": f"table {table_id} has no events yet"}, status=404)
        return self.json(state.summary())


@app.page("/health")
class HealthView(web.View):
    async def get(self, request: web.Request) -> web.Response:
        assigned = bool(app.consumer.assignment()) if app.consumer else False
        ok = runtime.ready and assigned
        return self.json({"service": "dealer-event", "ready": runtime.ready,
                          "assigned": assigned, "tables": len(runtime.tables)},
                         status=200 if ok else 503)
