"""The operator's HTTP endpoint for replay reports: the same reports as `croupier replay`,
for operator credentials only.

GET /rounds/{table_id}/{round_id}/report?at=TIME[&player=P][&format=text|json|html]
    [&complaint_at=TIME&dealer=NAME[&override=REASON]]
Reading the log is blocking (kafka-python), so each replay runs in a worker thread.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from aiohttp import web

from croupier.services.infra.auth import Authenticator, AuthError
from croupier.services.infra.settings import Settings
from croupier.services.operator.complaints import ComplaintError
from croupier.services.operator.replay_service import ReplayRequest, run_replay
from croupier.services.operator.report_render import CONTENT_TYPES, render
from croupier.services.operator.round_reader import RoundNotFoundError


def _problem(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error": {"code": code, "message": message}}, status=status)


def make_app(settings: Settings) -> web.Application:
    auth = Authenticator.from_settings(settings)

    @web.middleware
    async def operator_only(request: web.Request, handler):
        """401 without valid credentials; 403 for a player's (valid) token."""
        if request.path == "/health":
            return await handler(request)
        try:
            auth.require_operator(request.headers.get("Authorization"))
        except AuthError as exc:
            return _problem(exc.status, exc.code, exc.message)
        return await handler(request)

    async def health(request: web.Request) -> web.Response:
        return web.json_response({"service": "operator-api", "ok": True})

    async def report(request: web.Request) -> web.Response:
        q = request.query
        fmt = q.get("format", "text")
        if fmt not in CONTENT_TYPES:
            return _problem(422, "bad_format", f"format must be one of {sorted(CONTENT_TYPES)}")
        try:
            replay = ReplayRequest.from_text(
                request.match_info["table_id"], request.match_info["round_id"], q.get("at"),
                q.get("player"), q.get("dealer"), q.get("complaint_at"), q.get("override"))
            if q.get("annulled_within"):  # minutes past the round to look for its annulment
                replay.annulled_within = timedelta(minutes=float(q["annulled_within"]))
            result, notes, _ = await asyncio.to_thread(run_replay, settings.bootstrap_servers,
                                                       replay)
        except ComplaintError as exc:
            return _problem(422, exc.code, str(exc))
        except RoundNotFoundError as exc:
            return _problem(404, "unknown_round", str(exc))
        except (ValueError, OverflowError) as exc:
            return _problem(422, "bad_request", str(exc))
        return web.Response(text=render(result, fmt, notes), content_type=CONTENT_TYPES[fmt],
                            headers={"X-Croupier-Verdict": result.verdict})

    app = web.Application(middlewares=[operator_only])
    app.router.add_get("/health", health)
    app.router.add_get("/rounds/{table_id}/{round_id}/report", report)
    return app
