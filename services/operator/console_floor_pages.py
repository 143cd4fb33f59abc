"""The console's floor (`console`): every table, live — the page, the same HTML once (a
fragment), and server-sent events while the page is open and its session lives."""

from __future__ import annotations

import asyncio

from aiohttp import web

from services.operator.console_pages import (
    PREFIX,
    Console,
    floor_html,
    page,
    session_of,
)


async def floor_page(console: Console, request: web.Request) -> web.Response:
    view = await console.floor.get()
    return page("floor.html", session_of(request), floor_html=floor_html(view),
                refresh_ms=int(console.settings.console_refresh_seconds * 1000))


async def floor_fragment(console: Console, request: web.Request) -> web.Response:
    return web.Response(text=floor_html(await console.floor.get()), content_type="text/html")


async def floor_stream(console: Console, request: web.Request) -> web.StreamResponse:
    """Server-sent events: the floor's HTML (event `floor`) each time it changes, while
    the page is open and its session lives."""
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           "Cache-Control": "no-store",
                                           "X-Accel-Buffering": "no"})
    await response.prepare(request)
    sid = session_of(request).sid
    sent = None
    try:
        while console.sessions.get(sid) is not None:
            html = floor_html(await console.floor.get())
            if html != sent:
                data = "".join(f"data: {line}\n" for line in html.splitlines())
                await response.write(f"event: floor\n{data}\n".encode())
                sent = html
            else:
                await response.write(b": still here\n\n")
            await asyncio.sleep(console.settings.console_refresh_seconds)
        await response.write(b"event: expired\ndata: log in again\n\n")
    except ConnectionResetError:  # the page went away (a cancelled task propagates)
        pass
    return response


async def to_floor(console: Console, request: web.Request) -> web.Response:
    raise web.HTTPSeeOther(f"{PREFIX}/")
