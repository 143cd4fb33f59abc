"""The console's events page (`console`): the significant-event log and the dead letters,
with the re-drive of one (confirmed, with a reason)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

from aiohttp import web

from services.infra.log_reader import LogReadError
from services.operator import dead_letter_ops
from services.operator.console_pages import (
    HOURS_REFUSED,
    PREFIX,
    Console,
    hours_asked,
    page,
    session_of,
)


async def events(console: Console, request: web.Request) -> web.Response:
    session, hours = session_of(request), hours_asked(request)
    if hours is None:
        return page("refused.html", session, 422, message=HOURS_REFUSED)
    problems: list[str] = []
    try:
        since = datetime.now(UTC) - timedelta(hours=hours)
        found = await console.query(lambda qs: qs.events(since))
    except Exception as exc:  # noqa: BLE001 - the dead letters are still worth showing
        found, problems = [], [f"significant events: {type(exc).__name__}: {exc}"]
    try:
        letters = await asyncio.to_thread(dead_letter_ops.read_dead_letters,
                                          console.settings.bootstrap_servers)
    except LogReadError as exc:
        letters, problems = dead_letter_ops.DeadLetters(), [*problems, f"dead letters: {exc}"]
    return page("events.html", session, events=list(reversed(found)), hours=hours,
                letters=letters, problems=problems, done=request.query.get("redriven"))


async def _one_letter(console: Console, letter_id: str):
    letters = await asyncio.to_thread(dead_letter_ops.read_dead_letters,
                                      console.settings.bootstrap_servers)
    return letters, letters.letters.get(letter_id)


async def redrive_confirm(console: Console, request: web.Request) -> web.Response:
    letter_id = request.query.get("id", "")
    letters, letter = await _one_letter(console, letter_id)
    if letter is None:
        return page("refused.html", session_of(request), 404,
                    message=f"no dead letter {letter_id!r} in dead.letters")
    return page("redrive.html", session_of(request), letter=letter,
                redrives=letters.redrives.get(letter_id, []))


async def redrive(console: Console, request: web.Request) -> web.Response:
    form = await request.post()
    letter_id, reason = str(form.get("id", "")), str(form.get("reason", "")).strip()
    session = session_of(request)
    if form.get("confirm") != "yes":
        return page("refused.html", session, 422,
                    message="not re-driven: tick the confirmation box first")
    letters, letter = await _one_letter(console, letter_id)
    if letter is None:
        return page("refused.html", session, 404,
                    message=f"no dead letter {letter_id!r} in dead.letters")
    try:
        done = await asyncio.to_thread(dead_letter_ops.redrive,
                                       console.settings.bootstrap_servers,
                                       letter, "console:operator", reason)
    except dead_letter_ops.RedriveError as exc:
        return page("refused.html", session, 422, message=str(exc))
    raise web.HTTPSeeOther(f"{PREFIX}/events?" + urlencode(
        {"redriven": f"{done.dead_letter_id} to {done.topic}[{done.partition}]@{done.offset}"}))
