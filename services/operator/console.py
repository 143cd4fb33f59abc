"""The operator's web console, served by the operator API under /console/ (docs/decisions/
console.md): server-rendered pages (Jinja2, autoescaped), the floor kept live with
server-sent events, for operator credentials only.

- /console/login         the operator's credential (the API's bearer token) -> a session
                         cookie (random id held server-side, HttpOnly, SameSite=Strict,
                         expiring); every form carries the session's CSRF token, checked on
                         every POST (403 without it)
- /console/              the floor: every table, live (/console/floor/stream: SSE;
                         /console/floor/fragment: the same HTML once)
- /console/complaint     a complaint's fields -> filed as `POST /complaints` files it (the
                         platform's clock, on operator.actions), then the round's report,
                         the player's recall around it, the HTML and JSON reports to
                         download (/console/report?complaint=ID)
- /console/player        balance, transactions, recall, statement download
- /console/events        the significant-event log and the dead letters, with re-drive
- /console/stats         each dealer's and table's figures (`console_stats`)
- /console/risk          pairs of players betting opposite sides (risk_views.py)
Without a live session a page redirects to the login; a fragment, stream or download
answers 401.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from aiohttp import web
from jinja2 import Environment, PackageLoader, StrictUndefined

from croupier.services.infra.auth import Authenticator, AuthError
from croupier.services.infra.log_reader import LogReadError
from croupier.services.infra.settings import Settings
from croupier.services.operator import complaint_filing, dead_letter_ops
from croupier.services.operator.complaints import COMPLAINT_WINDOW
from croupier.services.operator.console_floor import FloorCache, read_floor
from croupier.services.operator.console_session import COOKIE, CSRF_FIELD, Session, Sessions
from croupier.services.operator.console_stats import add_stats_page
from croupier.services.operator.money_text import money
from croupier.services.operator.replay_service import ReplayRequest, parse_time, run_replay
from croupier.services.operator.report_render import CONTENT_TYPES, REPORT_HELPERS, render
from croupier.services.operator.risk_views import add_risk_page
from croupier.services.operator.round_reader import RoundNotFoundError
from croupier.services.operator.wallet_client import Wallet, WalletError

PREFIX = "/console"
STATIC = Path(__file__).parent / "templates" / "console"
Query = Callable[[Callable[[Any], Any]], Awaitable[Any]]
SESSION_KEY = web.RequestKey("console_session", Session)
# a script only from this origin (the console's own file), no framing, no plugins
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data:; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; "
       "form-action 'self'")

_PAGES = Environment(loader=PackageLoader("croupier.services.operator", "templates"),
                     autoescape=True, undefined=StrictUndefined)
# cash: an amount in its currency (the console's own pages); money: the replay report's plain
# minor units, as in the report's file
_PAGES.globals.update(REPORT_HELPERS, cash=money, prefix=PREFIX, csrf_field=CSRF_FIELD,
                      window_hours=int(COMPLAINT_WINDOW.total_seconds() // 3600))


def _page(template: str, session: Session | None, status: int = 200, **context) -> web.Response:
    html = _PAGES.get_template(f"console/{template}").render(
        session=session, **context)
    return web.Response(text=html, content_type="text/html", status=status)


def is_console(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


def add_console(app: web.Application, settings: Settings, auth: Authenticator,
                query: Query) -> None:
    """The console's routes and its session middleware on the operator API's `app`."""
    sessions = Sessions(settings.console_session_minutes * 60.0)
    wallet_url = settings.wallet_url or f"http://127.0.0.1:{settings.wallet_port}"
    state: dict[str, Any] = {}

    def wallet() -> Wallet:
        if "wallet" not in state:  # made on the server's own event loop
            state["wallet"] = Wallet(wallet_url, settings.operator_token)
        return state["wallet"]

    floor = FloorCache(lambda: read_floor(wallet(), query), settings.console_refresh_seconds)

    async def close_wallet(_app: web.Application) -> None:
        if "wallet" in state:
            await state["wallet"].close()

    app.on_cleanup.append(close_wallet)

    def set_cookie(response: web.StreamResponse, session: Session) -> None:
        response.set_cookie(COOKIE, session.sid, path=PREFIX, httponly=True, samesite="Strict",
                            secure=settings.console_secure_cookie,
                            max_age=settings.console_session_minutes * 60)

    # ------------------------------------------------------------ the gate
    PUBLIC = {f"{PREFIX}/login", f"{PREFIX}/static/console.js"}
    FRAGMENTS = (f"{PREFIX}/floor/", f"{PREFIX}/report", f"{PREFIX}/player/statement")

    @web.middleware
    async def gate(request: web.Request, handler):
        """A live operator session for every console path but the login and the script
        (pages: redirect to the login; fragments, streams, downloads: 401); the session's
        CSRF token on every POST (403)."""
        if not is_console(request.path):
            return await handler(request)
        session = sessions.get(request.cookies.get(COOKIE))
        if request.path not in PUBLIC:
            if session is None or not session.operator:
                if request.path.startswith(FRAGMENTS):
                    return web.json_response({"error": {
                        "code": "unauthenticated",
                        "message": "no console session: log in at /console/login"}}, status=401)
                raise web.HTTPSeeOther(f"{PREFIX}/login")
        if request.method == "POST":
            form = await request.post()
            token = form.get(CSRF_FIELD)
            if session is None or not session.csrf_ok(token if isinstance(token, str) else None):
                return _page("refused.html", session, 403,
                             message="The form was refused: its CSRF token is missing or not "
                                     "this session's. Reload the page and send it again.")
        if session is not None:
            request[SESSION_KEY] = session
        response = await handler(request)
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        if not isinstance(response, web.FileResponse):
            response.headers.setdefault("Cache-Control", "no-store")
        return response

    app.middlewares.append(gate)

    def session_of(request: web.Request) -> Session:
        return request[SESSION_KEY]

    # ------------------------------------------------------------ login
    async def login_form(request: web.Request) -> web.Response:
        session = request.get(SESSION_KEY)
        if session is not None and session.operator:
            raise web.HTTPSeeOther(f"{PREFIX}/")
        session = session or sessions.new()
        response = _page("login.html", session)
        set_cookie(response, session)
        return response

    async def login(request: web.Request) -> web.Response:
        form = await request.post()
        token = str(form.get("token", ""))
        try:  # exactly as the API's bearer auth: the operator's token, in constant time
            auth.require_operator(f"Bearer {token}")
        except AuthError as exc:
            return _page("login.html", request[SESSION_KEY], 401,
                         error=f"not logged in: {exc.message} (the operator's credential, "
                               "CROUPIER_OPERATOR_TOKEN, is needed)")
        sessions.end(request[SESSION_KEY].sid)
        fresh = sessions.new(operator=True)  # a new id: none known before the login
        response = web.HTTPSeeOther(f"{PREFIX}/")
        set_cookie(response, fresh)
        raise response

    async def logout(request: web.Request) -> web.Response:
        sessions.end(session_of(request).sid)
        response = web.HTTPSeeOther(f"{PREFIX}/login")
        response.del_cookie(COOKIE, path=PREFIX)
        raise response

    async def script(request: web.Request) -> web.FileResponse:
        return web.FileResponse(STATIC / "console.js",
                                headers={"Content-Type": "text/javascript"})

    # ------------------------------------------------------------ the floor
    def floor_html(view) -> str:
        return _PAGES.get_template("console/_floor.html").render(view=view)

    async def floor_page(request: web.Request) -> web.Response:
        view = await floor.get()
        return _page("floor.html", session_of(request), floor_html=floor_html(view),
                     refresh_ms=int(settings.console_refresh_seconds * 1000))

    async def floor_fragment(request: web.Request) -> web.Response:
        return web.Response(text=floor_html(await floor.get()), content_type="text/html")

    async def floor_stream(request: web.Request) -> web.StreamResponse:
        """Server-sent events: the floor's HTML (event `floor`) each time it changes, while
        the page is open and its session lives."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                               "Cache-Control": "no-store",
                                               "X-Accel-Buffering": "no"})
        await response.prepare(request)
        sid = session_of(request).sid
        sent = None
        try:
            while sessions.get(sid) is not None:
                html = floor_html(await floor.get())
                if html != sent:
                    data = "".join(f"data: {line}\n" for line in html.splitlines())
                    await response.write(f"event: floor\n{data}\n".encode())
                    sent = html
                else:
                    await response.write(b": still here\n\n")
                await asyncio.sleep(settings.console_refresh_seconds)
            await response.write(b"event: expired\ndata: log in again\n\n")
        except ConnectionResetError:  # the page went away (a cancelled task propagates)
            pass
        return response

    # ------------------------------------------------------------ a complaint
    FIELDS = ("player_id", "played_at", "dealer", "table_id", "round_id", "override")

    async def recall_around(player_id: str, round_id: str) -> list[dict]:
        found = await query(lambda qs: qs.recall(player_id, 30))
        rounds = found["rounds"]
        at = next((i for i, r in enumerate(rounds) if r["round_id"] == round_id), None)
        return rounds if at is None else rounds[max(0, at - 5): at + 6]

    async def complaint_form(request: web.Request) -> web.Response:
        return _page("complaint.html", session_of(request), fields=dict.fromkeys(FIELDS, ""),
                     now=datetime.now(UTC))

    async def complaint(request: web.Request) -> web.Response:
        """Files the complaint as `POST /complaints` does (the platform's clock, recorded on
        operator.actions), then shows its report."""
        form = await request.post()
        fields = {name: str(form.get(name, "")).strip() for name in FIELDS}
        session = session_of(request)

        def refused(status: int, message: str) -> web.Response:
            return _page("complaint.html", session, status, fields=fields,
                         now=datetime.now(UTC), error=message)
        body = {name: value for name, value in fields.items() if value}
        try:
            filed = await asyncio.to_thread(complaint_filing.file_complaint,
                                            settings.bootstrap_servers, body, settings)
        except complaint_filing.ANSWERED as exc:
            status, code = complaint_filing.refusal(exc)  # a ComplaintError names itself
            prefix = {"unknown_round": "no such round: ", "bad_request": "complaint refused: "
                      }.get(code, "" if status == 422 else "complaint not filed: ")
            return refused(status, f"{prefix}{exc}")
        record = filed.record
        try:
            report, notes, _ = await asyncio.to_thread(
                run_replay, settings.bootstrap_servers, ReplayRequest.from_complaint(record))
        except RoundNotFoundError as exc:
            return refused(404, f"complaint {record.complaint_id} filed; its round could not "
                                f"be read again: {exc}")
        try:
            recall = await recall_around(record.player_id, record.round_id)
            recall_problem = None
        except Exception as exc:  # noqa: BLE001 - the report stands without the recall
            recall, recall_problem = [], f"{type(exc).__name__}: {exc}"
        downloads = {fmt: f"{PREFIX}/report?" + urlencode(
            {"complaint": record.complaint_id, "format": fmt}) for fmt in ("html", "json")}
        return _page("complaint_report.html", session, report=report,
                     notes=[*report.notes, *notes], fields=fields, complaint=record,
                     late=record.filed_at - record.round_opened_at, recall=recall,
                     recall_problem=recall_problem, downloads=downloads)

    async def report_download(request: web.Request) -> web.Response:
        """A filed complaint's report as a file (html or json), its window as recorded when
        it was filed."""
        q = request.query
        fmt = q.get("format", "html")

        def problem(status: int, code: str, message: str) -> web.Response:
            return web.json_response({"error": {"code": code, "message": message}},
                                     status=status)
        if fmt not in ("html", "json"):
            return problem(422, "bad_format", "format must be html or json")
        complaint_id = q.get("complaint", "")
        try:
            record = await asyncio.to_thread(complaint_filing.find_complaint,
                                             settings.bootstrap_servers, complaint_id, settings)
            report, notes, _ = await asyncio.to_thread(
                run_replay, settings.bootstrap_servers, ReplayRequest.from_complaint(record))
        except complaint_filing.ANSWERED as exc:
            return problem(*complaint_filing.refusal(exc), str(exc))
        name = f"replay-{record.table_id}-{record.round_id}.{fmt}"
        return web.Response(text=render(report, fmt, notes), content_type=CONTENT_TYPES[fmt],
                            headers={"Content-Disposition": f'attachment; filename="{name}"',
                                     "X-Croupier-Verdict": report.verdict})

    # ------------------------------------------------------------ a player
    async def player(request: web.Request) -> web.Response:
        player_id = request.query.get("player_id", "").strip()
        session = session_of(request)
        now = datetime.now(UTC)
        context: dict[str, Any] = {"player_id": player_id, "account": None, "transactions": [],
                                   "recall": [], "problems": [],
                                   "statement_from": (now - timedelta(days=1)).strftime(
                                       "%Y-%m-%dT%H:%M"),
                                   "statement_to": now.strftime("%Y-%m-%dT%H:%M")}
        if not player_id:
            return _page("player.html", session, **context)
        problems = context["problems"]
        try:
            context["account"] = await wallet().balance(player_id)
            context["transactions"] = list(reversed(
                (await wallet().transactions(player_id))["items"]))
        except WalletError as exc:
            problems.append(f"wallet: {exc}")
        try:
            context["recall"] = (await query(lambda qs: qs.recall(player_id, 10)))["rounds"]
        except ValueError as exc:
            problems.append(f"recall: {exc}")
        status = 404 if context["account"] is None and not context["recall"] else 200
        return _page("player.html", session, status, **context)

    async def statement(request: web.Request) -> web.Response:
        from croupier.services.archive.queries import STATEMENT_COLUMNS, to_csv

        q = request.query
        fmt = q.get("format", "csv")
        try:
            if fmt not in ("csv", "json"):
                raise ValueError("format must be csv or json")
            player_id = q.get("player_id", "").strip()
            if not player_id:
                raise ValueError("give the player's id (player_id)")
            if not q.get("from") or not q.get("to"):
                raise ValueError("give the statement's range: from and to (ISO 8601, UTC)")
            since, until = parse_time(q["from"]), parse_time(q["to"])
            found = await query(lambda qs: qs.statement(player_id, since, until))
        except ValueError as exc:
            return web.json_response({"error": {"code": "bad_request", "message": str(exc)}},
                                     status=422)
        name = f"statement-{player_id}-{since:%Y%m%dT%H%M}-{until:%Y%m%dT%H%M}.{fmt}"
        text = to_csv(found["movements"], STATEMENT_COLUMNS) if fmt == "csv" else \
            json.dumps(found, indent=2, default=str)
        return web.Response(text=text, content_type="text/csv" if fmt == "csv" else
                            "application/json",
                            headers={"Content-Disposition": f'attachment; filename="{name}"'})

    # ------------------------------------------------------------ events, dead letters
    async def events(request: web.Request) -> web.Response:
        session = session_of(request)
        try:
            hours = float(request.query.get("hours", "24"))
            if not 0 < hours <= 24 * 90:
                raise ValueError
        except ValueError:
            return _page("refused.html", session, 422,
                         message="hours must be a number of hours above 0, at most 2160")
        since = datetime.now(UTC) - timedelta(hours=hours)
        problems = []
        try:
            found = await query(lambda qs: qs.events(since))
        except Exception as exc:  # noqa: BLE001 - the dead letters are still worth showing
            found, problems = [], [f"significant events: {type(exc).__name__}: {exc}"]
        try:
            letters = await asyncio.to_thread(dead_letter_ops.read_dead_letters,
                                              settings.bootstrap_servers)
        except LogReadError as exc:
            letters, problems = dead_letter_ops.DeadLetters(), [*problems, f"dead letters: {exc}"]
        return _page("events.html", session, events=list(reversed(found)), hours=hours,
                     letters=letters, problems=problems, done=request.query.get("redriven"))

    async def one_letter(letter_id: str):
        letters = await asyncio.to_thread(dead_letter_ops.read_dead_letters,
                                          settings.bootstrap_servers)
        return letters, letters.letters.get(letter_id)

    async def redrive_confirm(request: web.Request) -> web.Response:
        letter_id = request.query.get("id", "")
        letters, letter = await one_letter(letter_id)
        if letter is None:
            return _page("refused.html", session_of(request), 404,
                         message=f"no dead letter {letter_id!r} in dead.letters")
        return _page("redrive.html", session_of(request), letter=letter,
                     redrives=letters.redrives.get(letter_id, []))

    async def redrive(request: web.Request) -> web.Response:
        form = await request.post()
        letter_id, reason = str(form.get("id", "")), str(form.get("reason", "")).strip()
        session = session_of(request)
        if form.get("confirm") != "yes":
            return _page("refused.html", session, 422,
                         message="not re-driven: tick the confirmation box first")
        letters, letter = await one_letter(letter_id)
        if letter is None:
            return _page("refused.html", session, 404,
                         message=f"no dead letter {letter_id!r} in dead.letters")
        try:
            done = await asyncio.to_thread(dead_letter_ops.redrive, settings.bootstrap_servers,
                                           letter, "console:operator", reason)
        except dead_letter_ops.RedriveError as exc:
            return _page("refused.html", session, 422, message=str(exc))
        raise web.HTTPSeeOther(f"{PREFIX}/events?" + urlencode(
            {"redriven": f"{done.dead_letter_id} to {done.topic}[{done.partition}]@{done.offset}"}))

    r = app.router
    r.add_get(f"{PREFIX}/login", login_form)
    r.add_post(f"{PREFIX}/login", login)
    r.add_post(f"{PREFIX}/logout", logout)
    r.add_get(f"{PREFIX}/static/console.js", script)
    r.add_get(f"{PREFIX}/", floor_page)
    r.add_get(f"{PREFIX}/floor/fragment", floor_fragment)
    r.add_get(f"{PREFIX}/floor/stream", floor_stream)
    r.add_get(f"{PREFIX}/complaint", complaint_form)
    r.add_post(f"{PREFIX}/complaint", complaint)
    r.add_get(f"{PREFIX}/report", report_download)
    r.add_get(f"{PREFIX}/player", player)
    r.add_get(f"{PREFIX}/player/statement", statement)
    r.add_get(f"{PREFIX}/events", events)
    r.add_get(f"{PREFIX}/dead-letters/redrive", redrive_confirm)
    r.add_post(f"{PREFIX}/dead-letters/redrive", redrive)
    add_stats_page(app, PREFIX, query, _page, session_of)
    add_risk_page(r, PREFIX, query, _page, session_of)  # /console/risk: opposite bettors
    async def to_floor(request: web.Request) -> web.Response:
        raise web.HTTPSeeOther(f"{PREFIX}/")

    r.add_get(PREFIX, to_floor)
