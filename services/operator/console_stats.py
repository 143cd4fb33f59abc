"""The console's Statistics page (/console/stats): each dealer's and each table's figures
over the rounds opened in the last hours, as `croupier stats` and `GET /stats` give them
(`services.archive.stats`). A table whose hold is 3 or more standard deviations
from its theory is marked."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

from services.operator.console_floor import Query
from services.operator.console_pages import HOURS_REFUSED, hours_asked

MARK_Z = 3.0  # |z| at least this: the table's row is marked


def add_stats_page(app: web.Application, prefix: str, query: Query,
                   page: Callable[..., web.Response], session_of: Callable[[web.Request], Any]
                   ) -> None:
    """GET {prefix}/stats[?hours=24] on `app`, drawn by `page` (the console's renderer)."""

    async def stats(request: web.Request) -> web.Response:
        session = session_of(request)
        hours = hours_asked(request)
        if hours is None:
            return page("refused.html", session, 422, message=HOURS_REFUSED)
        since = datetime.now(UTC) - timedelta(hours=hours)
        problems = []
        try:
            found = await query(lambda qs: qs.stats(since))
        except Exception as exc:  # noqa: BLE001 - the page says what failed
            found, problems = {"dealers": [], "tables": []}, [f"{type(exc).__name__}: {exc}"]
        return page("stats.html", session, hours=hours, dealers=found["dealers"],
                    tables=found["tables"], problems=problems, mark_z=MARK_Z)

    app.router.add_get(f"{prefix}/stats", stats)
