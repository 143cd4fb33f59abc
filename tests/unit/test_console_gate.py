"""The console's gate, without a broker: nothing readable without an operator session (a
page redirects to the login, a fragment or stream answers 401), the login checks the
operator's credential as the bearer auth does and gives a new HttpOnly, SameSite=Strict
session cookie, and a POST without the session's CSRF token is refused."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime

from aiohttp.test_utils import TestClient, TestServer

from services.infra.settings import Settings
from services.operator import complaint_filing
from services.operator.console_session import COOKIE, Sessions
from services.operator.http_api import make_app

SETTINGS = Settings(env="development", operator_token="op-token-for-tests",
                    wallet_url="http://127.0.0.1:9")  # no wallet: the gate needs none


def csrf_of(html: str) -> str:
    return re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)


async def _walk() -> None:
    async with TestClient(TestServer(make_app(SETTINGS))) as client:
        page = await client.get("/console/", allow_redirects=False)
        assert page.status == 303 and page.headers["Location"] == "/console/login"
        for path in ("/console/floor/fragment", "/console/floor/stream",
                     "/console/report?format=json"):
            refused = await client.get(path, allow_redirects=False)
            assert refused.status == 401, path
            assert (await refused.json())["error"]["code"] == "unauthenticated"
        form = await client.get("/console/login")
        anonymous = form.cookies[COOKIE]
        assert anonymous["httponly"] and anonymous["samesite"] == "Strict"
        token = csrf_of(await form.text())
        # a login without the form's CSRF token is refused, whatever the credential
        no_csrf = await client.post("/console/login", data={"token": "op-token-for-tests"},
                                    allow_redirects=False)
        assert no_csrf.status == 403 and "CSRF" in await no_csrf.text()
        wrong = await client.post("/console/login", data={"token": "not-it", "csrf_token": token},
                                  allow_redirects=False)
        assert wrong.status == 401 and "invalid bearer token" in await wrong.text()
        ok = await client.post("/console/login", allow_redirects=False,
                               data={"token": "op-token-for-tests", "csrf_token": token})
        assert ok.status == 303 and ok.headers["Location"] == "/console/"
        assert ok.cookies[COOKIE].value != anonymous.value  # a new id on login
        page = await client.get("/console/complaint")
        assert page.status == 200 and "24 hours" in await page.text()
        assert "script-src 'self'" in page.headers["Content-Security-Policy"]
        csrf = csrf_of(await page.text())
        assert csrf != token  # the logged-in session's own
        forged = await client.post("/console/complaint", data={"player_id": "p1"})
        assert forged.status == 403
        incomplete = await client.post("/console/complaint",
                                       data={"player_id": "p1", "csrf_token": csrf})
        assert incomplete.status == 422
        assert "it must name played at, dealer, table id, round id" in await incomplete.text()
        # a late complaint: filing refuses it (complaints.check_window), the page says why
        late = await client.post("/console/complaint", data={
            "csrf_token": csrf, "player_id": "p1", "played_at": "2026-11-01T10:00:00Z",
            "dealer": "Ana", "table_id": "T1", "round_id": "R1"})
        assert late.status == 422 and "outside the 24-hour evidence window" in await late.text()
        # the API's own routes still want the bearer token, not the cookie
        assert (await client.get("/events")).status == 401
        out = await client.post("/console/logout", data={"csrf_token": csrf},
                                allow_redirects=False)
        assert out.status == 303
        assert (await client.get("/console/floor/fragment")).status == 401


def test_the_console_is_closed_without_a_session_and_every_post_needs_its_csrf_token(
        monkeypatch):
    def recorded(*_args):
        raise AssertionError("a refused complaint must not be recorded")

    # the round opened a month before the console's clock files the complaint
    monkeypatch.setattr(complaint_filing, "round_opened_at",
                        lambda *_: datetime(2026, 11, 1, 10, tzinfo=UTC))
    monkeypatch.setattr(complaint_filing, "record_action", recorded)
    asyncio.run(_walk())


def test_a_session_expires_after_its_time_unused_and_each_use_extends_it():
    clock = [0.0]
    sessions = Sessions(60, now=lambda: clock[0])
    s = sessions.new(operator=True)
    clock[0] = 59
    assert sessions.get(s.sid) is s
    clock[0] = 118
    assert sessions.get(s.sid) is s
    clock[0] = 179
    assert sessions.get(s.sid) is None and sessions.get(s.sid) is None
    assert not s.csrf_ok(None) and not s.csrf_ok("") and s.csrf_ok(s.csrf)
