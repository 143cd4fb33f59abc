"""What every console page shares (`console`): its prefix, the page renderer, the session a
request carries, and `Console`, the settings, sessions and sources its handlers use."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web
from jinja2 import Environment, PackageLoader, StrictUndefined

from services.infra.auth import Authenticator
from services.infra.settings import Settings
from services.operator.complaints import COMPLAINT_WINDOW
from services.operator.console_floor import FloorCache, FloorView, Query, read_floor
from services.operator.console_session import COOKIE, CSRF_FIELD, Session, Sessions
from services.operator.money_text import money
from services.operator.report_render import REPORT_HELPERS
from services.operator.wallet_client import Wallet

PREFIX = "/console"
STATIC = Path(__file__).parent / "templates" / "console"
SESSION_KEY = web.RequestKey("console_session", Session)
MAX_HOURS = 24 * 90  # the furthest back a page of the log looks
HOURS_REFUSED = "hours must be a number of hours above 0, at most 2160"

_PAGES = Environment(loader=PackageLoader("services.operator", "templates"),
                     autoescape=True, undefined=StrictUndefined)
# cash: an amount in its currency (the console's own pages); money: the replay report's plain
# minor units, as in the report's file
_PAGES.globals.update(REPORT_HELPERS, cash=money, prefix=PREFIX, csrf_field=CSRF_FIELD,
                      window_hours=int(COMPLAINT_WINDOW.total_seconds() // 3600))


def page(template: str, session: Session | None, status: int = 200, **context) -> web.Response:
    html = _PAGES.get_template(f"console/{template}").render(
        session=session, **context)
    return web.Response(text=html, content_type="text/html", status=status)


def floor_html(view: FloorView) -> str:
    return _PAGES.get_template("console/_floor.html").render(view=view)


def hours_asked(request: web.Request) -> float | None:
    """The `hours` a page looks back (24 unless asked), or None when it is not a number of
    hours above 0, at most 90 days."""
    try:
        hours = float(request.query.get("hours", "24"))
    except ValueError:
        return None
    return hours if 0 < hours <= MAX_HOURS else None


def session_of(request: web.Request) -> Session:
    return request[SESSION_KEY]


@dataclass
class Console:
    """The console's settings, sessions and sources, one per operator API."""

    settings: Settings
    auth: Authenticator
    query: Query
    sessions: Sessions
    _wallet: Wallet | None = field(default=None, init=False)
    floor: FloorCache = field(init=False)

    def __post_init__(self) -> None:
        self.floor = FloorCache(lambda: read_floor(self.wallet(), self.query),
                                self.settings.console_refresh_seconds)

    def wallet(self) -> Wallet:
        if self._wallet is None:  # made on the server's own event loop
            url = self.settings.wallet_url or f"http://127.0.0.1:{self.settings.wallet_port}"
            self._wallet = Wallet(url, self.settings.operator_token)
        return self._wallet

    async def close(self, _app: web.Application) -> None:
        if self._wallet is not None:
            await self._wallet.close()

    def set_cookie(self, response: web.StreamResponse, session: Session) -> None:
        response.set_cookie(COOKIE, session.sid, path=PREFIX, httponly=True, samesite="Strict",
                            secure=self.settings.console_secure_cookie,
                            max_age=self.settings.console_session_minutes * 60)
