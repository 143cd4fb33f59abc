"""The seamless wallet's caller, against a double of the operator's HTTP API (a scripted
aiohttp server on this machine: a unit test of the delivery rules; the live tests run the
reference operator wallet): a debit is delivered once and timed out; a credit or rollback is
delivered again until a definitive answer; a rollback waits for what it undoes; a debit
found owed at a recovery is answered `no_answer` at once; every request is signed."""

from __future__ import annotations

import asyncio
import functools
from datetime import UTC, datetime

from aiohttp import web

from services.infra.clock import SystemClock
from services.infra.own_log import PartitionState
from services.wallet.ledger_fold import call_key
from services.wallet.operator_calls import CallerSettings, OperatorCaller
from shared.events.operator_wallet import (
    KEY_ID_HEADER,
    SIGNATURE_HEADER,
    OperatorCall,
    WalletRequest,
    WalletResponse,
    verify,
)
from tests.conftest import free_port

AT = datetime(2026, 12, 3, tzinfo=UTC)


def run(test):
    """A coroutine test, run on a loop of its own."""
    @functools.wraps(test)
    def wrapper():
        asyncio.run(test())
    return wrapper
KEYS = {"k1": b"secret"}


def request(kind, txid, ref=None, amount=100) -> WalletRequest:
    return WalletRequest(transaction_id=txid, kind=kind, player_id="p1", amount=amount,
                         currency="IDR", table_id="T1", round_id="R1", bet_id="b1",
                         session_token="s" if kind == "debit" else None,
                         reference_transaction_id=ref, requested_at=AT)


class Operator:
    """The double: answers each delivery by a script, records what it was sent."""

    def __init__(self, script) -> None:
        self.script = script  # (request, delivery n) -> "ok" | "500" | "slow" | error code
        self.seen: list[tuple[str, str]] = []
        self.deliveries: dict[str, int] = {}
        self.url = ""
        self.runner: web.AppRunner | None = None

    async def __aenter__(self) -> Operator:
        app = web.Application()
        app.router.add_post("/{kind}", self.handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        port = free_port()
        await web.TCPSite(self.runner, "127.0.0.1", port).start()
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc) -> None:
        assert self.runner is not None
        await self.runner.cleanup()

    async def handle(self, http: web.Request) -> web.Response:
        body = await http.read()
        assert verify(body, http.headers.get(KEY_ID_HEADER), http.headers.get(SIGNATURE_HEADER),
                      KEYS) is None, "every request is signed"
        sent = WalletRequest.model_validate_json(body)
        n = self.deliveries[sent.transaction_id] = self.deliveries.get(sent.transaction_id, 0) + 1
        self.seen.append((sent.transaction_id, http.path))
        what = self.script(sent, n)
        if what == "slow":  # answers, but after the caller stopped waiting
            await asyncio.sleep(1)
            what = "ok"
        if what == "500":
            return web.Response(status=500, text="down")
        if what == "ok":
            return web.Response(status=200, content_type="application/json", text=WalletResponse(
                status="ok", transaction_id=sent.transaction_id, balance=900).model_dump_json())
        return web.Response(status=404 if what == "transaction_not_found" else 402,
                            content_type="application/json", text=WalletResponse(
                                status="error", transaction_id=sent.transaction_id,
                                error_code=what).model_dump_json())


def caller(operator: Operator, sent: list, owns=lambda _p: True) -> OperatorCaller:
    async def send(answered):
        sent.append((answered.transaction_id, answered.answer))

    config = CallerSettings(url=operator.url, key_id="k1", secret=KEYS["k1"],
                            debit_timeout_s=0.2, call_timeout_s=0.2, retry_max_s=0.05)
    return OperatorCaller(config, send, SystemClock(), owns)


async def serve(script) -> Operator:
    return await Operator(script).__aenter__()


async def settle(c: OperatorCaller, op: Operator) -> None:
    """Every call delivered and answered; then the caller and the double closed."""
    while c.running:
        await asyncio.wait(set(c.running.values()))
    await c.close()
    await op.__aexit__()


@run
async def test_a_debit_is_delivered_once_and_a_slow_one_is_no_answer():
    sent: list = []
    op = await serve(lambda r, n: "slow")
    c = caller(op, sent)
    c.start(OperatorCall(request=request("debit", "debit:b1")))
    await settle(c, op)
    assert op.deliveries == {"debit:b1": 1}
    assert [(t, a.outcome) for t, a in sent] == [("debit:b1", "no_answer")]


@run
async def test_a_definitive_no_is_recorded_as_refused():
    sent: list = []
    op = await serve(lambda r, n: "insufficient_funds")
    c = caller(op, sent)
    c.start(OperatorCall(request=request("debit", "debit:b1")))
    await settle(c, op)
    assert [(t, a.outcome, a.error_code) for t, a in sent] == [
        ("debit:b1", "refused", "insufficient_funds")]


@run
async def test_a_credit_is_delivered_again_until_it_is_answered():
    sent: list = []
    op = await serve(lambda r, n: "500" if n < 3 else ("slow" if n == 3 else "ok"))
    c = caller(op, sent)
    c.start(OperatorCall(request=request("credit", "credit:s1", ref="debit:b1")))
    await settle(c, op)
    assert op.deliveries == {"credit:s1": 4}
    assert [(t, a.outcome, a.attempts) for t, a in sent] == [("credit:s1", "ok", 4)]


@run
async def test_a_call_for_a_player_this_worker_lost_is_left_to_its_owner():
    sent: list = []
    op = await serve(lambda r, n: "500")
    c = caller(op, sent, owns=lambda _p: False)
    c.start(OperatorCall(request=request("rollback", "rollback:debit:b1", ref="debit:b1")))
    await settle(c, op)
    assert sent == []


@run
async def test_a_rollback_waits_for_the_credit_it_undoes():
    sent: list = []
    op = await serve(lambda r, n: "500" if r.kind == "credit" and n < 3 else "ok")
    c = caller(op, sent)
    c.start(OperatorCall(request=request("credit", "credit:s1", ref="debit:b1")))
    c.start(OperatorCall(request=request("rollback", "rollback:credit:s1", ref="credit:s1")))
    await settle(c, op)
    assert [t for t, _ in op.seen] == ["credit:s1"] * 3 + ["rollback:credit:s1"]


@run
async def test_a_recovery_answers_an_owed_debit_no_answer_and_delivers_the_rest():
    sent: list = []
    op = await serve(lambda r, n: "ok")
    c = caller(op, sent)
    state = PartitionState(0)
    for call in (OperatorCall(request=request("debit", "debit:b9")),
                 OperatorCall(request=request("credit", "credit:s1", ref="debit:b1"))):
        state.kv[call_key("p1", call.request.transaction_id)] = call
    c.resume(state)
    await settle(c, op)
    assert op.deliveries == {"credit:s1": 1}, "the owed debit is not asked again"
    assert sorted((t, a.outcome) for t, a in sent) == [("credit:s1", "ok"),
                                                       ("debit:b9", "no_answer")]


@run
async def test_a_credit_refused_unread_is_still_owed_and_asked_again():
    """bad_signature (a key rotated in the wrong order) or bad_request: the operator did
    not take the credit up, nothing moved; it is asked again until it is answered. A debit
    refused so is refused (its player is waiting)."""
    sent: list = []
    op = await serve(lambda r, n: "ok" if r.kind == "credit" and n == 3 else
                     ("bad_signature" if n == 1 else "bad_request"))
    c = caller(op, sent)
    c.start(OperatorCall(request=request("credit", "credit:s1", ref="debit:b1")))
    c.start(OperatorCall(request=request("debit", "debit:b2")))
    await settle(c, op)
    assert op.deliveries == {"credit:s1": 3, "debit:b2": 1}
    assert sorted((t, a.outcome, a.error_code) for t, a in sent) == [
        ("credit:s1", "ok", None), ("debit:b2", "refused", "bad_signature")]
    assert dict(sent)["credit:s1"].attempts == 3


@run
async def test_a_fault_of_the_callers_own_drives_a_credit_again_and_ends_a_debit():
    """An exception that is no answer (here the first two deliveries of each call raise):
    the credit is driven again after backoff and delivered; the debit is answered
    no_answer at once (refused to its player, rolled back), never left pending."""
    sent: list = []
    op = await serve(lambda r, n: "ok")
    c = caller(op, sent)
    real, faults = c.deliver, {"credit:s1": 2, "debit:b2": 1}

    async def faulty(req, timeout_s):
        if faults.get(req.transaction_id, 0) > 0:
            faults[req.transaction_id] -= 1
            raise RuntimeError("a fault of the caller's own")
        return await real(req, timeout_s)

    c.deliver = faulty  # type: ignore[method-assign]
    c.start(OperatorCall(request=request("credit", "credit:s1", ref="debit:b1")))
    c.start(OperatorCall(request=request("debit", "debit:b2")))
    await settle(c, op)
    assert op.deliveries == {"credit:s1": 1}
    assert sorted((t, a.outcome) for t, a in sent) == [("credit:s1", "ok"),
                                                       ("debit:b2", "no_answer")]
