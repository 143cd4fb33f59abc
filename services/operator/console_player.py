"""The console's player page (`console`): balance, transactions, recall, and the statement
to download."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

from services.operator.console_pages import Console, page, session_of
from services.operator.replay_service import parse_time
from services.operator.wallet_client import WalletError


async def player(console: Console, request: web.Request) -> web.Response:
    player_id = request.query.get("player_id", "").strip()
    session = session_of(request)
    now = datetime.now(UTC)
    context: dict[str, Any] = {"player_id": player_id, "account": None, "transactions": [],
                               "recall": [], "problems": [],
                               "statement_from": (now - timedelta(days=1)).strftime(
                                   "%Y-%m-%dT%H:%M"),
                               "statement_to": now.strftime("%Y-%m-%dT%H:%M")}
    if not player_id:
        return page("player.html", session, **context)
    problems = context["problems"]
    try:
        context["account"] = await console.wallet().balance(player_id)
        context["transactions"] = list(reversed(
            (await console.wallet().transactions(player_id))["items"]))
    except WalletError as exc:
        problems.append(f"wallet: {exc}")
    try:
        context["recall"] = (await console.query(lambda qs: qs.recall(player_id, 10)))["rounds"]
    except ValueError as exc:
        problems.append(f"recall: {exc}")
    status = 404 if context["account"] is None and not context["recall"] else 200
    return page("player.html", session, status, **context)


async def statement(console: Console, request: web.Request) -> web.Response:
    from services.archive.queries import STATEMENT_COLUMNS, to_csv

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
        found = await console.query(lambda qs: qs.statement(player_id, since, until))
    except ValueError as exc:
        return web.json_response({"error": {"code": "bad_request", "message": str(exc)}},
                                 status=422)
    name = f"statement-{player_id}-{since:%Y%m%dT%H%M}-{until:%Y%m%dT%H%M}.{fmt}"
    text = to_csv(found["movements"], STATEMENT_COLUMNS) if fmt == "csv" else \
        json.dumps(found, indent=2, default=str)
    return web.Response(text=text, content_type="text/csv" if fmt == "csv" else
                        "application/json",
                        headers={"Content-Disposition": f'attachment; filename="{name}"'})
