"""The fail-over retry our clients share (`services/infra/http_retry.py`), through aiohttp
against a real local HTTP server: a 503 is sent again until the real answer comes, any
other answer is returned at once, and no answer at all is sent again until the deadline."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from aiohttp import web

from services.infra.http_retry import read_reply, with_retry
from tests.conftest import free_port


async def _serve(answers: list[int]) -> tuple[web.AppRunner, str, list[int]]:
    seen: list[int] = []

    async def handle(request: web.Request) -> web.Response:
        status = answers[min(len(seen), len(answers) - 1)]
        seen.append(status)
        return web.json_response({"n": len(seen)}, status=status,
                                 headers={"Retry-After": "0"} if status == 503 else None)

    runner, url = await _serve_with(handle)
    return runner, url, seen


async def _serve_with(handle) -> tuple[web.AppRunner, str]:
    """A real local server answering POST /bets with `handle`."""
    app = web.Application()
    app.router.add_post("/bets", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, f"http://127.0.0.1:{port}"


def test_a_fail_over_answer_is_sent_again_until_the_real_one():
    async def run():
        runner, url, seen = await _serve([503, 503, 201])
        try:
            async with aiohttp.ClientSession(base_url=url) as session:
                reply, retries = await with_retry(
                    lambda: read_reply(session, "POST", "/bets", json={"bet_id": "b1"}))
        finally:
            await runner.cleanup()
        return reply, retries, seen

    reply, retries, seen = asyncio.run(run())
    assert (reply.status_code, retries, seen) == (201, 2, [503, 503, 201])
    assert reply.json() == {"n": 3}


def test_a_refusal_is_returned_at_once():
    async def run():
        runner, url, seen = await _serve([409])
        try:
            async with aiohttp.ClientSession(base_url=url) as session:
                return await with_retry(lambda: read_reply(session, "POST", "/bets")), seen
        finally:
            await runner.cleanup()

    (reply, retries), seen = asyncio.run(run())
    assert (reply.status_code, retries, seen) == (409, 0, [409])


def test_no_answer_at_all_is_sent_again_then_raised_at_the_deadline():
    calls = []

    async def run():
        async with aiohttp.ClientSession(base_url=f"http://127.0.0.1:{free_port()}") as session:
            async def call():
                calls.append(1)
                return await read_reply(session, "POST", "/bets")
            await with_retry(call, retry_for_s=0.5)

    with pytest.raises(aiohttp.ClientConnectionError):
        asyncio.run(run())
    assert len(calls) >= 2  # tried again before giving up


def test_an_answer_names_the_request_it_answers():
    async def run():
        runner, url, _ = await _serve([201])
        try:
            async with aiohttp.ClientSession(base_url=url) as session:
                return await read_reply(session, "POST", "/bets"), url
        finally:
            await runner.cleanup()

    reply, url = asyncio.run(run())
    assert (reply.method, reply.url) == ("POST", f"{url}/bets")


def test_a_504_that_names_the_bets_own_outcome_is_returned_at_once():
    """Seamless mode: a debit the operator's wallet never answered in time is the bet's
    outcome (the same bet id is answered the same, forever): not sent again for 30 s."""
    async def run():
        seen: list[int] = []

        async def handle(request: web.Request) -> web.Response:
            seen.append(504)
            return web.json_response({"error": {"code": "operator_wallet_timeout",
                                                "message": "no answer in time"}}, status=504)

        runner, url = await _serve_with(handle)
        try:
            async with aiohttp.ClientSession(base_url=url) as session:
                return await with_retry(lambda: read_reply(session, "POST", "/bets")), seen
        finally:
            await runner.cleanup()

    (reply, retries), seen = asyncio.run(run())
    assert (reply.status_code, retries, seen) == (504, 0, [504])


def test_a_slow_answer_cut_by_a_kill_still_gets_the_whole_fail_over_budget():
    """The worker took longer than the budget to answer (it waits for a decision), then was
    killed mid-request: the fail-over starts at that failure, so the request is sent again
    and answered (counting the budget from the first send gave up at once, and a table
    simulator's whole session ended on one slow input cut by a kill)."""
    async def run():
        seen: list[str] = []

        async def handle(request: web.Request) -> web.Response:
            if not seen:
                seen.append("cut")
                await asyncio.sleep(0.8)  # longer than the budget below
                assert request.transport is not None
                request.transport.close()  # the worker is gone: no answer at all
                return web.Response(status=500)  # never reaches the client
            seen.append("201")
            return web.json_response({"n": len(seen)}, status=201)

        runner, url = await _serve_with(handle)
        try:
            async with aiohttp.ClientSession(base_url=url) as session:
                return await with_retry(lambda: read_reply(session, "POST", "/bets"),
                                        retry_for_s=0.5), seen
        finally:
            await runner.cleanup()

    (reply, retries), seen = asyncio.run(run())
    assert (reply.status_code, retries, seen) == (201, 1, ["cut", "201"])
