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

from collections.abc import Awaitable, Callable
from functools import partial

from aiohttp import web

from services.infra.auth import Authenticator
from services.infra.settings import Settings
from services.operator import (
    console_access,
    console_complaint,
    console_events,
    console_floor_pages,
    console_player,
)
from services.operator.console_access import is_console as is_console  # re-exported
from services.operator.console_floor import Query
from services.operator.console_pages import PREFIX, Console, page, session_of
from services.operator.console_session import Sessions
from services.operator.console_stats import add_stats_page
from services.operator.risk_views import add_risk_page

Handler = Callable[[Console, web.Request], Awaitable[web.StreamResponse]]
# each console page and action: (method, path under PREFIX, its handler)
ROUTES: tuple[tuple[str, str, Handler], ...] = (
    ("GET", "/login", console_access.login_form),
    ("POST", "/login", console_access.login),
    ("POST", "/logout", console_access.logout),
    ("GET", "/static/console.js", console_access.script),
    ("GET", "/", console_floor_pages.floor_page),
    ("GET", "/floor/fragment", console_floor_pages.floor_fragment),
    ("GET", "/floor/stream", console_floor_pages.floor_stream),
    ("GET", "/complaint", console_complaint.complaint_form),
    ("POST", "/complaint", console_complaint.complaint),
    ("GET", "/report", console_complaint.report_download),
    ("GET", "/player", console_player.player),
    ("GET", "/player/statement", console_player.statement),
    ("GET", "/events", console_events.events),
    ("GET", "/dead-letters/redrive", console_events.redrive_confirm),
    ("POST", "/dead-letters/redrive", console_events.redrive),
)


def add_console(app: web.Application, settings: Settings, auth: Authenticator,
                query: Query) -> None:
    """The console's routes and its session middleware on the operator API's `app`."""
    console = Console(settings, auth, query,
                      Sessions(settings.console_session_minutes * 60.0))
    app.on_cleanup.append(console.close)
    app.middlewares.append(console_access.gate(console))
    r = app.router
    for method, path, handler in ROUTES:
        add = r.add_get if method == "GET" else r.add_post  # a GET answers HEAD too
        add(f"{PREFIX}{path}", partial(handler, console))
    add_stats_page(app, PREFIX, query, page, session_of)
    add_risk_page(r, PREFIX, query, page, session_of)  # /console/risk: opposite bettors
    r.add_get(PREFIX, partial(console_floor_pages.to_floor, console))
