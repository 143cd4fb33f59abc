"""Who may use the console (`console`): the gate every console path passes (a live operator
session, the session's CSRF token on every POST, the security headers), the login and the
logout, and the console's script (the one thing served without a session)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware

from services.infra.auth import AuthError
from services.operator.console_pages import (
    PREFIX,
    SESSION_KEY,
    STATIC,
    Console,
    page,
    session_of,
)
from services.operator.console_session import COOKIE, CSRF_FIELD

# a script only from this origin (the console's own file), no framing, no plugins
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data:; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; "
       "form-action 'self'")
PUBLIC = frozenset({f"{PREFIX}/login", f"{PREFIX}/static/console.js"})
FRAGMENTS = (f"{PREFIX}/floor/", f"{PREFIX}/report", f"{PREFIX}/player/statement")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def is_console(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


def gate(console: Console) -> Middleware:
    """The console's middleware on the operator API's app."""

    @web.middleware
    async def gate(request: web.Request, handler: Handler) -> web.StreamResponse:
        """A live operator session for every console path but the login and the script
        (pages: redirect to the login; fragments, streams, downloads: 401); the session's
        CSRF token on every POST (403)."""
        if not is_console(request.path):
            return await handler(request)
        session = console.sessions.get(request.cookies.get(COOKIE))
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
                return page("refused.html", session, 403,
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

    return gate


async def login_form(console: Console, request: web.Request) -> web.Response:
    session = request.get(SESSION_KEY)
    if session is not None and session.operator:
        raise web.HTTPSeeOther(f"{PREFIX}/")
    session = session or console.sessions.new()
    response = page("login.html", session)
    console.set_cookie(response, session)
    return response


async def login(console: Console, request: web.Request) -> web.Response:
    form = await request.post()
    token = str(form.get("token", ""))
    try:  # exactly as the API's bearer auth: the operator's token, in constant time
        console.auth.require_operator(f"Bearer {token}")
    except AuthError as exc:
        return page("login.html", request[SESSION_KEY], 401,
                    error=f"not logged in: {exc.message} (the operator's credential, "
                          "CROUPIER_OPERATOR_TOKEN, is needed)")
    console.sessions.end(request[SESSION_KEY].sid)
    fresh = console.sessions.new(operator=True)  # a new id: none known before the login
    response = web.HTTPSeeOther(f"{PREFIX}/")
    console.set_cookie(response, fresh)
    raise response


async def logout(console: Console, request: web.Request) -> web.Response:
    console.sessions.end(session_of(request).sid)
    response = web.HTTPSeeOther(f"{PREFIX}/login")
    response.del_cookie(COOKIE, path=PREFIX)
    raise response


async def script(console: Console, request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC / "console.js", headers={"Content-Type": "text/javascript"})
