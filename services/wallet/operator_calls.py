"""Seamless mode: the caller that delivers what the ledger owes the operator's wallet.

The ledger decides every call (`services.wallet.seamless`) and keeps it pending
until its answer is written over it; this caller only delivers. It is told of each new
pending call once its entry is in the log (`start`, from the accounts agent's answers) and
of every pending call a partition holds whenever the worker recovers that partition
(`resume`, from `OwnLog.on_recovered`), so what a dead worker owed is delivered by the
next owner. Each answer goes back to the commands topic as an `OperatorAnswered` command,
keyed by the player, where the accounts agent records it.

- A debit is delivered once and waited on `operator_wallet_debit_timeout_seconds`: no
  definitive answer by then (a timeout, a 5xx, a dropped connection) is `no_answer`, and
  the ledger refuses the bet and owes a rollback. A debit found pending at a recovery was
  asked by a worker that stopped before its answer was recorded: `no_answer` at once.
- A credit or a rollback is delivered again with backoff (0.2 s doubling up to
  `operator_wallet_retry_max_seconds`) until a definitive answer about the money, while
  this worker owns the player (`bad_signature` and `bad_request` say the operator did not
  take the call up: it stays owed and is asked again, logged as an error); a call that
  undoes or pays another (`reference_transaction_id`) waits for that one's answer first,
  so the operator never sees a rollback before what it undoes. A fault of the caller's own
  (an exception, not an answer) drives a credit or rollback again after backoff, and
  answers a debit `no_answer` (refused to its player, rolled back).
- Every delivery of a call carries the same body (its bytes are the request's, from the
  log) and the same signature: the operator answers a repeat as its first delivery.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import aiohttp
from yarl import URL

from services.infra import metrics
from services.infra.clock import Clock
from services.infra.own_log import PartitionState
from services.wallet.commands import OperatorAnswered
from services.wallet.ledger_fold import pending_calls
from shared.events.operator_wallet import (
    CALL_KINDS,
    OperatorAnswer,
    OperatorCall,
    WalletRequest,
    WalletResponse,
    signature_headers,
)

log = logging.getLogger("croupier.wallet.operator")
FIRST_BACKOFF_S = 0.2


@dataclass(frozen=True)
class CallerSettings:
    url: str
    key_id: str
    secret: bytes
    debit_timeout_s: float = 3.0
    call_timeout_s: float = 5.0
    retry_max_s: float = 30.0

    @classmethod
    def from_settings(cls, settings) -> CallerSettings:
        if not settings.operator_wallet_url:
            raise SystemExit("wallet refuses to start: CROUPIER_WALLET_MODE=seamless needs "
                             "CROUPIER_OPERATOR_WALLET_URL, the operator's wallet API")
        return cls(url=settings.operator_wallet_url.rstrip("/"),
                   key_id=settings.operator_wallet_key_id,
                   secret=settings.operator_wallet_secret.encode(),
                   debit_timeout_s=settings.operator_wallet_debit_timeout_seconds,
                   call_timeout_s=settings.operator_wallet_call_timeout_seconds,
                   retry_max_s=settings.operator_wallet_retry_max_seconds)


class OperatorCaller:
    """Delivers pending calls; `send` puts each answer on the commands topic."""

    def __init__(self, config: CallerSettings, send: Callable[[OperatorAnswered], Awaitable[None]],
                 clock: Clock, owns: Callable[[str], bool],
                 ) -> None:
        self.config = config
        self.send = send
        self.clock = clock
        self.owns = owns  # does this worker still own the player's partition?
        # aiohttp, made in the running loop: a fraction of httpx's CPU a request, and the
        # wallet makes one for every bet (docs/decisions/seamless.md)
        self._session: aiohttp.ClientSession | None = None
        self.running: dict[tuple[str, str], asyncio.Task[None]] = {}
        # each call's URL parsed once, its metrics' children looked up once
        self._urls = {kind: URL(f"{config.url}/{kind}") for kind in CALL_KINDS}
        self._seconds = {kind: metrics.OPERATOR_WALLET_SECONDS.labels(kind)
                         for kind in CALL_KINDS}
        self._calls: dict[tuple[str, str], Any] = {}

    def start_all(self, calls: list[OperatorCall]) -> None:
        for call in calls:
            self.start(call)

    def start(self, call: OperatorCall) -> None:
        """Deliver a call the log now owes (once per call while it runs here)."""
        key = (call.request.player_id, call.request.transaction_id)
        if key in self.running:
            return
        self._run(key, self._drive(call))

    def _run(self, key: tuple[str, str], work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self.running[key] = task

        def finished(_task: asyncio.Task[None]) -> None:
            if self.running.get(key) is task:
                del self.running[key]
        task.add_done_callback(finished)

    def resume(self, state: PartitionState) -> None:
        """A partition caught up with the log: deliver every call it still owes (oldest
        first, so what a call depends on is started before it)."""
        owed = sorted(pending_calls(state.kv), key=lambda c: c.request.requested_at)
        for call in owed:
            key = (call.request.player_id, call.request.transaction_id)
            if key in self.running:
                continue
            if call.request.kind == "debit":  # its answer, if any came, died with its asker
                self._lost_debit(call)
            else:
                self.start(call)

    def _lost_debit(self, call: OperatorCall) -> None:
        key = (call.request.player_id, call.request.transaction_id)
        answer = OperatorAnswer(outcome="no_answer", answered_at=self.clock.now(), message=(
            "the worker that asked for it stopped before its answer was recorded"))
        self._run(key, self._answered(call.request, answer))

    async def _drive(self, call: OperatorCall) -> None:
        request = call.request
        pause = FIRST_BACKOFF_S
        while True:
            try:
                await self._after_reference(request)
                answer: OperatorAnswer | None
                if request.kind == "debit":
                    answer = await self.deliver(request, self.config.debit_timeout_s)
                else:
                    answer = await self._until_definitive(request)
                if answer is None:
                    return  # no longer ours: the partition's owner delivers it
                await self._answered(request, answer)
                return
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 - a fault of ours, not an answer
                log.exception("call %s of %r failed; it stays owed", request.transaction_id,
                              request.player_id)
                if request.kind == "debit":  # its player waits: refused, rolled back
                    answer = OperatorAnswer(outcome="no_answer", answered_at=self.clock.now(),
                                            message=f"{type(error).__name__}: {error}")
                    await self._answered(request, answer)
                    return
            # a credit or rollback is driven again while this worker owns its player (it
            # is owed in the log either way: a recovery of the partition drives it too)
            await asyncio.sleep(pause)
            if not self.owns(request.player_id):
                return
            pause = min(2 * pause, self.config.retry_max_s)

    async def _after_reference(self, request: WalletRequest) -> None:
        """Wait for the call this one undoes or pays, if it is still being delivered."""
        if request.reference_transaction_id is None:
            return
        ahead = self.running.get((request.player_id, request.reference_transaction_id))
        if ahead is not None:
            await asyncio.wait({ahead})

    async def _until_definitive(self, request: WalletRequest) -> OperatorAnswer | None:
        pause = FIRST_BACKOFF_S
        attempts = 0
        while True:
            attempts += 1
            answer = await self.deliver(request, self.config.call_timeout_s)
            if answer.settles_owed_call:
                return answer.model_copy(update={"attempts": attempts})
            metrics.OPERATOR_WALLET_RETRIES.labels(request.kind).inc()
            if answer.definitive:  # refused unread: still owed (a key, a body to mend)
                log.error("%s of %r: the operator did not take it up (%s: %s); it stays "
                          "owed, again in %.1f s", request.transaction_id, request.player_id,
                          answer.error_code, answer.message, pause)
            else:
                log.warning("%s of %r: no answer (%s); again in %.1f s",
                            request.transaction_id, request.player_id, answer.message, pause)
            await asyncio.sleep(pause)
            if not self.owns(request.player_id):
                return None
            pause = min(2 * pause, self.config.retry_max_s)

    async def deliver(self, request: WalletRequest, timeout_s: float) -> OperatorAnswer:
        """One delivery: the operator's yes or no, or no answer."""
        body = request.body()
        headers = signature_headers(body, self.config.key_id, self.config.secret)
        started = time.monotonic()
        try:  # the whole delivery within the timeout, the body read included (a timeout
            # scope, not wait_for: no task of its own for every call)
            async with asyncio.timeout(timeout_s):
                async with self.session.post(self._urls[request.kind], data=body,
                                             headers=headers) as response:
                    status, content = response.status, await response.read()
        except (aiohttp.ClientError, TimeoutError) as error:
            return self._no_answer(request, f"{type(error).__name__}: {error}"
                                   if str(error) else f"no answer in {timeout_s:g} s")
        finally:
            self._seconds[request.kind].observe(time.monotonic() - started)
        try:
            parsed = WalletResponse.model_validate_json(content)
        except ValueError:
            parsed = None
        now = self.clock.now()
        if status == 200 and parsed is not None and parsed.status == "ok":
            self._count(request.kind, "ok")
            return OperatorAnswer(outcome="ok", http_status=200, balance=parsed.balance,
                                  operator_transaction_id=parsed.operator_transaction_id,
                                  answered_at=now)
        if 400 <= status < 500 and parsed is not None \
                and parsed.status == "error" and parsed.error_code is not None:
            self._count(request.kind, "refused")
            return OperatorAnswer(outcome="refused", http_status=status,
                                  error_code=parsed.error_code, message=parsed.message,
                                  balance=parsed.balance, answered_at=now)
        return self._no_answer(request, f"HTTP {status}: "
                                        f"{content.decode(errors='replace')[:200]!r}")

    def _count(self, kind: str, outcome: str) -> None:
        counter = self._calls.get((kind, outcome))
        if counter is None:
            counter = self._calls[(kind, outcome)] = metrics.OPERATOR_WALLET_CALLS.labels(
                kind, outcome)
        counter.inc()

    def _no_answer(self, request: WalletRequest, why: str) -> OperatorAnswer:
        self._count(request.kind, "no_answer")
        return OperatorAnswer(outcome="no_answer", message=why, answered_at=self.clock.now())

    async def _answered(self, request: WalletRequest, answer: OperatorAnswer) -> None:
        """Put the answer where the ledger records it (again until the broker takes it:
        until then only this worker knows it, and the call stays owed in the log)."""
        command = OperatorAnswered(player_id=request.player_id,
                                   transaction_id=request.transaction_id, answer=answer)
        pause = FIRST_BACKOFF_S
        while True:
            try:
                await self.send(command)
                return
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 - the broker, for a moment
                log.warning("answer of %s could not be sent (%r); again in %.1f s",
                            request.transaction_id, error, pause)
                await asyncio.sleep(pause)
                pause = min(2 * pause, self.config.retry_max_s)

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            # no timeouts of aiohttp's own: every delivery runs in a timeout scope
            # (`deliver`), and aiohttp's would be one more timer per call
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=200),
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=None))
        return self._session

    async def close(self) -> None:
        for task in list(self.running.values()):
            task.cancel()
        if self._session is not None:
            await self._session.close()
