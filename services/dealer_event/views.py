"""HTTP door of dealer-event: POST /inputs, GET /tables/{table_id}, GET /health
(GET /metrics comes from services.infra.observability).

POST /inputs puts the signed input on `dealer.inputs` (the log keeps everything
received) and waits briefly for the worker's decision, so a device or a person
with curl sees "accepted" with the event seqs or "refused" with code and reason.

With several workers, a request about a table is answered by the worker that owns the
table's partition of `dealer.inputs` (services/infra/routing.py): any other worker
forwards the whole request there, so the decision's waiter lives in the process that
decides. While the group rebalances (no owner yet, or the owner died) the answer is 503
with Retry-After; resending the same signed input is safe (`duplicate_input` if an
earlier attempt was applied).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, cast

import faust
from aiohttp.web import BaseRequest
from faust import web

from services.dealer_event.decisions import LOST_RACE, MOVED
from services.dealer_event.input_parsing import parse_raw
from services.infra import routing
from services.infra.consumer import assignment_of, owners_of
from services.infra.faust_app import bound_view
from services.infra.observability import health_problems
from shared.topics import DEALER_INPUTS_TOPIC

if TYPE_CHECKING:
    from services.dealer_event.bootstrap import DealerEvent

AUTH_CODES = frozenset({"unsigned", "bad_signature", "role_not_allowed"})


def http_status(report: dict) -> int:
    if report["status"] == "accepted":
        return 200
    code = report["reason_code"]
    if code in AUTH_CODES:
        return 403
    return 409 if code == "duplicate_input" else 422


class DoorView(web.View):
    """A page of the door, bound to the worker's `DealerEvent` by `register`."""
    service: DealerEvent


async def _elsewhere(view: DoorView, request: web.Request, table_id: str,
                     body: bytes | None = None) -> web.Response | None:
    """The owner's answer if another worker owns `table_id`, a 503 while nobody does,
    None if this worker owns it (`body`: the request's body, already read)."""
    d = view.service
    try:
        owner = routing.owner_of(d.app, d.inputs_topic, table_id.encode())
    except routing.NoOwner as exc:
        return routing.unavailable(view.web, str(exc))
    if owner is None:
        return None
    return await routing.forward(d.app, owner, request, view.web, body)


async def _body_within_limit(request: web.Request, limit: int) -> bytes | None:
    """The body, or None when it is over `limit` (`input_max_bytes`, checked before anything
    is written to dealer.inputs: 20 posts of 1 MB used to write 18 MB in a second)."""
    # faust's web driver is aiohttp's: its requests stream (faust's Request ABC does not say)
    aio_request = cast(BaseRequest, request)
    if aio_request.content_length is not None and aio_request.content_length > limit:
        return None
    chunks, size = [], 0
    while chunk := await aio_request.content.read(limit + 1 - size):
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return None
    return b"".join(chunks)


class InputsView(DoorView):
    async def post(self, request: web.Request) -> web.Response:
        d = self.service
        raw = await _body_within_limit(request, d.settings.input_max_bytes)
        if raw is None:
            return self.json({"status": "refused", "reason_code": "body_too_large",
                              "message": f"an input is at most {d.settings.input_max_bytes} "
                                         "bytes; nothing was written"}, status=413)
        parsed = parse_raw(raw)
        if parsed.tick is not None:  # the platform's own record, not an input
            return self.json({"status": "refused", "reason_code": "malformed_input",
                              "message": "a timer tick is dealer-event's own record, not an "
                                         "input; nothing was written"}, status=400)
        if parsed.input is None:  # any worker may log it: it moves no table
            await d.forward(raw, parsed.table_id)
            return self.json({"status": "refused", "input_id": parsed.input_id,
                              "reason_code": "malformed_input",
                              "message": parsed.problem.message}, status=400)
        routed = await _elsewhere(self, request, parsed.table_id, raw)
        if routed is not None:
            return routed
        input_id, signature = parsed.input.input_id, parsed.input.signature
        waiter = d.decisions.expect(input_id, d.input_partition(parsed.table_id), signature)
        try:
            await d.forward(raw, parsed.table_id)
            report = await asyncio.wait_for(asyncio.shield(waiter),
                                            d.settings.decision_wait_seconds)
        except TimeoutError:
            return self.json({"status": "queued", "input_id": input_id}, status=202)
        finally:
            d.decisions.forget(input_id, waiter, signature)
        if report["status"] == MOVED:
            return routing.unavailable(self.web, "the table moved to another worker before "
                                                 "this input was decided; resend it")
        if report["status"] == LOST_RACE:  # never the void decision
            return routing.unavailable(self.web, "another worker wrote this table first (this "
                                                 "one had lost it); resend the input",
                                       code=LOST_RACE)
        return self.json(report, status=http_status(report))


class TablePage(DoorView):
    async def get(self, request: web.Request, table_id: str) -> web.Response:
        d = self.service
        routed = await _elsewhere(self, request, table_id)
        if routed is not None:
            return routed
        partition = d.input_partition(table_id)
        if partition is None or d.own.state(partition) is None:
            return routing.unavailable(self.web, "this worker is folding its tables' log")
        state = d.table(table_id)
        if state is None:
            return self.json({"error": f"table {table_id} has no events yet"}, status=404)
        return self.json(state.summary())


class HealthView(DoorView):
    async def get(self, request: web.Request) -> web.Response:
        """Ready once the worker joined the group and every partition it was assigned is
        folded from its own log; a worker with no partition stands by, ready."""
        d = self.service
        owners = owners_of(d.app)
        joined = owners is not None and not owners.rebalancing
        partitions = sorted(tp.partition for tp in assignment_of(d.app)
                            if tp.topic == DEALER_INPUTS_TOPIC) if joined else []
        folding = sorted(set(partitions) - d.own.owned)
        problems = [] if joined else ["not in the consumer group yet"]
        if folding:
            problems.append(f"recovering: partitions {folding} of dealer.log not folded yet")
        problems += [p for p in health_problems(d.app) if p.startswith("stalled")]
        tables = sum(len(s.kv) for p in partitions if (s := d.own.state(p)) is not None)
        return self.json({"service": "dealer-event", "ready": not problems,
                          "partitions": partitions, "tables": tables, "problems": problems},
                         status=503 if problems else 200)


def register(app: faust.App, service: DealerEvent) -> None:
    """The door's routes on the worker's app, bound to `service` (the bootstrap calls it)."""
    for path, view in (("/inputs", InputsView), ("/tables/{table_id}", TablePage),
                       ("/health", HealthView)):
        app.page(path)(bound_view(view, service))
