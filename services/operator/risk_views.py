"""Opposite betting on the operator API and the console (the CLI: `croupier risk opposite`):
the same answer, `ArchiveQueries.opposite_pairs`, over the archive and the log's tail.

GET /risk/opposite[?from=T&to=T&min_rounds=3]   JSON {"pairs": [...]}; 422 for a bad request
GET /console/risk[?hours=24&min_rounds=3]       the console's page: the pairs of the last
                                                `hours` hours, the most opposed stake first
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

from services.operator.replay_service import parse_time

Query = Callable[[Callable[[Any], Any]], Awaitable[Any]]
DEFAULT_MIN_ROUNDS = 3
MAX_HOURS = 24 * 90


def _min_rounds(q: Mapping[str, str]) -> int:
    text = q.get("min_rounds", str(DEFAULT_MIN_ROUNDS))
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"min_rounds must be a whole number of rounds, got {text!r}") from None
    if value < 1:
        raise ValueError(f"min_rounds must be at least 1, got {value}")
    return value


def opposite_handler(query: Query) -> Callable[[web.Request], Awaitable[web.Response]]:
    """The operator API's GET /risk/opposite."""
    async def opposite(request: web.Request) -> web.Response:
        q = request.query
        try:
            since = parse_time(q["from"]) if q.get("from") else None
            until = parse_time(q["to"]) if q.get("to") else None
            min_rounds = _min_rounds(q)
            found = await query(lambda qs: qs.opposite_pairs(since, until, min_rounds))
        except ValueError as exc:
            return web.json_response({"error": {"code": "bad_request", "message": str(exc)}},
                                     status=422)
        return web.json_response(found)
    return opposite


def add_risk_page(router: web.UrlDispatcher, prefix: str, query: Query,
                  page: Callable[..., web.Response],
                  session_of: Callable[[web.Request], Any]) -> None:
    """The console's page of opposite bettors (`page(template, session, status, **context)`
    renders a console template)."""
    async def risk(request: web.Request) -> web.Response:
        session = session_of(request)
        try:
            hours = float(request.query.get("hours", "24"))
        except ValueError:
            hours = -1.0
        if not 0 < hours <= MAX_HOURS:
            return page("refused.html", session, 422,
                        message=f"hours must be a number of hours above 0, at most {MAX_HOURS}")
        try:
            min_rounds = _min_rounds(request.query)
        except ValueError as exc:
            return page("refused.html", session, 422, message=str(exc))
        until = datetime.now(UTC)
        since = until - timedelta(hours=hours)
        problems = []
        try:
            found = await query(lambda qs: qs.opposite_pairs(since, until, min_rounds))
        except Exception as exc:  # noqa: BLE001 - the page says what failed
            found, problems = {"pairs": []}, [f"opposite betting: {type(exc).__name__}: {exc}"]
        return page("risk.html", session, 200, pairs=found["pairs"], hours=hours,
                    min_rounds=min_rounds, problems=problems)

    router.add_get(f"{prefix}/risk", risk)
