"""The operator's HTTP endpoint for replay reports: the same reports as `croupier replay`,
for operator credentials only.

GET /rounds/{table_id}/{round_id}/report?at=TIME[&player=P][&format=text|json|html]
and a player's complaint (RULES §6; `services.operator.complaint_filing`):
POST /complaints   JSON {player_id, played_at, dealer, table_id, round_id[, override]}:
    recorded on operator.actions with the platform's clock; 201 {complaint_id, filed_at,
    within_window, report_url}. A caller's filed_at/complaint_at: 422 caller_time; a late
    complaint: 422 out_of_window unless overridden (`override`, only where
    CROUPIER_LATE_COMPLAINT_OVERRIDE is set; the override is recorded too)
GET /complaints/{complaint_id}/report[?format=text|json|html]   the complaint's report, its
    window judged by the recorded time of filing
and, from the archive and the log's last minutes (`services.archive.queries`):
GET /players/{player_id}/rounds?limit=10   the player's game recall (JSON); the player's own
                                           token may read it too
GET /players/{player_id}/statement?from=T&to=T[&format=csv|json]
GET /events[?from=T&to=T&table=ID&large_win=N&format=csv|json]   the significant events
GET /rtp[?from=T&to=T&format=csv|json]   realised RTP by day, table, profile, dealer, bet
GET /stats[?from=T&to=T]   per dealer and table, of the rounds opened in the range (JSON):
                           hands per hour, voids, refused inputs, corrections; hold, its theory, z
GET /risk/opposite[?from=T&to=T&min_rounds=3]   pairs betting opposite sides (risk_views.py)
and, in seamless mode, `croupier reconcile`'s report (`services.operator.reconcile`):
GET /reconcile[?from=T&to=T | ?day=YYYY-MM-DD][&player=P][&margin=MIN][&settle=S]   JSON:
    croupier's calls to the operator's wallet against its transaction report, every
    difference named; `clean` true when there is none (X-Croupier-Verdict: CLEAN or
    DIFFERENCES); 422 for a bad window, 503 when a side cannot be read (the broker, the
    operator's wallet)
and the operator's web console under /console/ (`services.operator.console`): its
own login and session cookie instead of the bearer token.
Reading the log is blocking (kafka-python), so each request runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import json
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

from services.infra.auth import Authenticator, AuthError
from services.infra.settings import Settings
from services.operator import complaint_filing
from services.operator.console import add_console, is_console
from services.operator.replay_service import ReplayRequest, parse_time, run_replay
from services.operator.report_render import CONTENT_TYPES, render
from services.operator.risk_views import opposite_handler

PLAYER_RECALL = "player-recall"  # the one route a player's own token may read


def _problem(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error": {"code": code, "message": message}}, status=status)


def make_app(settings: Settings) -> web.Application:
    auth = Authenticator.from_settings(settings)

    @web.middleware
    async def operator_only(request: web.Request, handler):
        """401 without valid credentials; 403 for a player's (valid) token, except on the
        player's own game recall (`/players/{id}/rounds`), which the player may read."""
        if request.path == "/health" or is_console(request.path):  # the console: its session
            return await handler(request)
        header = request.headers.get("Authorization")
        try:
            if request.match_info.route.name == PLAYER_RECALL:
                auth.require_player(header, request.match_info["player_id"], operator_may=True)
            else:
                auth.require_operator(header)
        except AuthError as exc:
            return _problem(exc.status, exc.code, exc.message)
        return await handler(request)

    async def health(request: web.Request) -> web.Response:
        return web.json_response({"service": "operator-api", "ok": True})

    # what a report used to take for a complaint: a complaint is now filed, on the platform's
    # clock, and its report opened by its id
    FILED_NOW = ("complaint_at", "dealer", "override")

    async def replay_answer(fmt: str, make) -> web.Response:
        """The report of the replay `make()` asks for (run in a thread: it reads the log),
        or the problem that stopped it."""
        if fmt not in CONTENT_TYPES:
            return _problem(422, "bad_format", f"format must be one of {sorted(CONTENT_TYPES)}")
        try:
            result, notes, _ = await asyncio.to_thread(
                lambda: run_replay(settings.bootstrap_servers, make()))
        except complaint_filing.ANSWERED as exc:
            return _problem(*complaint_filing.refusal(exc), str(exc))
        return web.Response(text=render(result, fmt, notes), content_type=CONTENT_TYPES[fmt],
                            headers={"X-Croupier-Verdict": result.verdict})

    async def report(request: web.Request) -> web.Response:
        q = request.query
        moved = next((name for name in FILED_NOW if name in q), None)
        if moved is not None:
            return _problem(422, "complaint_not_taken_here", (
                f"{moved}= is not taken by a round's report: file the complaint with POST "
                "/complaints (the platform stamps its time) and open its report_url"))

        def make() -> ReplayRequest:
            replay = ReplayRequest.from_text(request.match_info["table_id"],
                                             request.match_info["round_id"], q.get("at"),
                                             q.get("player"))
            if q.get("annulled_within"):  # minutes past the round to look for its annulment
                replay.annulled_within = timedelta(minutes=float(q["annulled_within"]))
            return replay
        return await replay_answer(q.get("format", "text"), make)

    async def complaint_report(request: web.Request) -> web.Response:
        def make() -> ReplayRequest:
            return ReplayRequest.from_complaint(complaint_filing.find_complaint(
                settings.bootstrap_servers, request.match_info["complaint_id"], settings))
        return await replay_answer(request.query.get("format", "text"), make)

    async def file_complaint(request: web.Request) -> web.Response:
        """201 with the complaint's id, the platform's time of filing, the window's verdict
        and where its report is; every refusal names its reason (nothing recorded)."""
        try:
            body = json.loads(await request.read() or b"null")
        except (ValueError, UnicodeDecodeError):
            return _problem(422, "bad_json", "the body is not JSON: send a JSON object of the "
                                             "complaint's fields")
        if not isinstance(body, dict):
            return _problem(422, "bad_json", "the body must be a JSON object of the complaint's "
                                             "fields")
        try:
            filed = await asyncio.to_thread(complaint_filing.file_complaint,
                                            settings.bootstrap_servers, body, settings)
        except complaint_filing.ANSWERED as exc:
            return _problem(*complaint_filing.refusal(exc), str(exc))
        answer = filed.answer()
        return web.json_response(answer, status=201, headers={"Location": answer["report_url"]})

    shared: dict[str, Any] = {}
    lock = threading.Lock()

    def query(run):
        """Run `run(queries)` over the archive and the live tail in a thread: one DuckDB
        connection for the process (it keeps the immutable files' footers), its views of
        the archive's files and of the tail made again for each request, one at a time."""
        def work():
            from services.archive.queries import open_queries
            with lock:
                if "queries" not in shared:
                    shared["queries"] = open_queries(settings)
                queries = shared["queries"]
                queries.refresh()
                return run(queries)
        return asyncio.to_thread(work)

    def moment(q, name: str):
        return parse_time(q[name]) if q.get(name) else None

    async def recall(request: web.Request) -> web.Response:
        try:
            limit = int(request.query.get("limit", "10"))
            found = await query(lambda qs: qs.recall(request.match_info["player_id"], limit))
        except ValueError as exc:
            return _problem(422, "bad_request", str(exc))
        return web.json_response(found)

    async def as_table(request: web.Request, run, key: str | None, columns) -> web.Response:
        """`run(queries)` answered as JSON (the whole answer) or CSV (its rows: `key`)."""
        from services.archive.queries import to_csv
        fmt = request.query.get("format", "json")
        if fmt not in ("csv", "json"):
            return _problem(422, "bad_format", "format must be csv or json")
        try:
            found = await query(run(request.query))
        except ValueError as exc:
            return _problem(422, "bad_request", str(exc))
        if fmt == "csv":
            return web.Response(text=to_csv(found[key] if key else found, columns),
                                content_type="text/csv")
        return web.json_response(found if key else {"rows": found})

    async def statement(request: web.Request) -> web.Response:
        from services.archive.queries import STATEMENT_COLUMNS

        def run(q):
            since, until = moment(q, "from"), moment(q, "to")
            if since is None or until is None:
                raise ValueError("give the statement's range: from=TIME&to=TIME (ISO 8601)")
            return lambda qs: qs.statement(request.match_info["player_id"], since, until)
        return await as_table(request, run, "movements", STATEMENT_COLUMNS)

    async def significant_events(request: web.Request) -> web.Response:
        from services.archive.queries import EVENT_COLUMNS, LARGE_WIN_DEFAULT

        def run(q):
            since, until = moment(q, "from"), moment(q, "to")
            large = int(q.get("large_win", LARGE_WIN_DEFAULT))
            return lambda qs: qs.events(since, until, large, q.get("table"))
        return await as_table(request, run, None, EVENT_COLUMNS)

    async def realised_rtp(request: web.Request) -> web.Response:
        from services.archive.queries import RTP_COLUMNS

        def run(q):
            since, until = moment(q, "from"), moment(q, "to")
            return lambda qs: qs.realised_rtp(since, until)
        return await as_table(request, run, None, RTP_COLUMNS)

    async def statistics(request: web.Request) -> web.Response:
        try:
            since, until = moment(request.query, "from"), moment(request.query, "to")
            found = await query(lambda qs: qs.stats(since, until))
        except ValueError as exc:
            return _problem(422, "bad_request", str(exc))
        return web.json_response(found)

    async def reconciliation(request: web.Request) -> web.Response:
        from services.operator import reconcile_sources as sources
        q = request.query
        try:
            start, end, note = sources.window_of(
                q.get("from"), q.get("to"), q.get("day"), datetime.now(UTC),
                timedelta(seconds=float(q.get("settle", "60"))))
            margin = timedelta(minutes=float(q.get("margin", "60")))
            if margin < timedelta(0) or float(q.get("settle", "60")) < 0:
                raise ValueError("margin (minutes) and settle (seconds) must be 0 or more")
            found = await asyncio.to_thread(sources.run_reconcile, settings, start, end,
                                            q.get("player"), margin)
        except (ValueError, OverflowError) as exc:
            return _problem(422, "bad_request", str(exc))
        except sources.ReconcileSourceError as exc:
            return _problem(503, "reconcile_source_unavailable", str(exc))
        body = found.model_dump(mode="json")
        body["note"] = note
        return web.json_response(body, headers={
            "X-Croupier-Verdict": "CLEAN" if found.clean else "DIFFERENCES"})

    app = web.Application(middlewares=[operator_only])
    app.router.add_get("/health", health)
    app.router.add_get("/rounds/{table_id}/{round_id}/report", report)
    app.router.add_post("/complaints", file_complaint)
    app.router.add_get("/complaints/{complaint_id}/report", complaint_report)
    app.router.add_get("/players/{player_id}/rounds", recall, name=PLAYER_RECALL)
    app.router.add_get("/players/{player_id}/statement", statement)
    app.router.add_get("/events", significant_events)
    app.router.add_get("/rtp", realised_rtp)
    app.router.add_get("/stats", statistics)
    app.router.add_get("/risk/opposite", opposite_handler(query))
    app.router.add_get("/reconcile", reconciliation)
    add_console(app, settings, auth, query)
    return app
