"""The reference operator wallet's HTTP API (aiohttp): the signed calls, the signed
transactions report, the admin API and the fault injection around them.

POST /debit | /credit | /rollback   a signed `WalletRequest` -> `WalletResponse`
GET  /transactions?after=N&limit=N[&player_id=P]   signed over the raw query string ->
                                    `TransactionsPage`
GET  /health, GET /metrics          (no credentials)
/admin/... (bearer token)           PUT|GET /admin/players/{id}, POST
                                    /admin/players/{id}/sessions, DELETE /admin/sessions/{token},
                                    GET|PUT /admin/faults
Each signed call is checked in order: the signature (401 bad_signature), the body (400
bad_request: not a `WalletRequest`, or a kind other than the path's), then the faults are
rolled and the store applies it (`services.simulators.operator_wallet.store`).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import secrets
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, generate_latest
from pydantic import BaseModel, ValidationError

from services.infra.settings import Settings
from services.simulators.operator_wallet.admin import (
    DEV_ADMIN_TOKEN,
    PlayerUpdate,
    PlayerView,
    SessionRequest,
    SessionView,
)
from services.simulators.operator_wallet.faults import Dice, Faults
from services.simulators.operator_wallet.rules import Player, RollbackUnknown
from services.simulators.operator_wallet.store import UnknownPlayer, WalletStore, error_response
from shared.events.operator_wallet import (
    KEY_ID_HEADER,
    SIGNATURE_HEADER,
    CallKind,
    WalletRequest,
    WalletResponse,
    verify,
)

log = logging.getLogger("croupier.operator_wallet")
# croupier's development defaults of `operator_wallet_key_id` and `operator_wallet_secret`,
# so the demo's croupier and this wallet agree with no configuration
DEV_KEY_ID: str = Settings.model_fields["operator_wallet_key_id"].default
DEV_SECRET: str = Settings.model_fields["operator_wallet_secret"].default
MAX_PAGE = 1_000
T = TypeVar("T")
Answer = tuple[int, WalletResponse]


@dataclass
class WalletConfig:
    """What the process is started with (CLI flags or `OPERATOR_WALLET_*`)."""

    keys: dict[str, bytes] = field(default_factory=lambda: {DEV_KEY_ID: DEV_SECRET.encode()})
    rollback_unknown: RollbackUnknown = "not_found"
    admin_token: str = DEV_ADMIN_TOKEN
    faults: Faults = field(default_factory=Faults)
    threads: int = 4  # database threads for the report and the admin API


def _json(model: BaseModel, status: int = 200) -> web.Response:
    return web.json_response(text=model.model_dump_json(exclude_none=True), status=status)


def _refusal(status: int, transaction_id: str, code: str, message: str) -> web.Response:
    return _json(error_response(transaction_id, code, message), status)


def _admin_problem(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error": {"code": code, "message": message}}, status=status)


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "body"
    return f"{where}: {err['msg']}"


def _claimed_id(body: bytes) -> str:
    """The transaction id a refused body claims, if it has one (to echo in the answer)."""
    try:
        value = json.loads(body).get("transaction_id")
    except (ValueError, AttributeError):
        return ""
    return value if isinstance(value, str) else ""


def _view(player: Player) -> PlayerView:
    return PlayerView(player_id=player.player_id, currency=player.currency,
                      balance=player.balance, blocked=player.blocked)


class GroupCommit:
    """The one writer of the calls: those that arrive while a commit runs wait for the next,
    and share it (`WalletStore.call_many`). Each is answered after the commit holding it."""

    MAX_BATCH = 256

    def __init__(self, store: WalletStore, rollback_unknown: RollbackUnknown) -> None:
        self.store = store
        self.rollback_unknown = rollback_unknown
        self.writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="operator-wallet-writer")
        self.queue: asyncio.Queue[tuple[WalletRequest, asyncio.Future[Answer]]] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
        self.writer.shutdown(wait=True)

    async def call(self, request: WalletRequest) -> Answer:
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self.queue.put_nowait((request, future))
        return await future

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = [await self.queue.get()]
            while len(batch) < self.MAX_BATCH and not self.queue.empty():
                batch.append(self.queue.get_nowait())
            requests = [request for request, _ in batch]
            try:
                answers = await loop.run_in_executor(self.writer, functools.partial(
                    self.store.call_many, requests, self.rollback_unknown))
            except Exception as exc:  # the whole commit failed: none of them is written
                log.exception("a commit of %d calls failed", len(batch))
                answers = [exc] * len(batch)
            for (_, future), answer in zip(batch, answers, strict=True):
                if future.done():
                    continue
                if isinstance(answer, BaseException):
                    future.set_exception(answer)
                else:
                    future.set_result(answer)


class OperatorWallet:
    """The application: the store, its threads, the dice and the call counters."""

    def __init__(self, store: WalletStore, config: WalletConfig) -> None:
        self.store = store
        self.config = config
        self.dice = Dice(config.faults)
        self.writes = GroupCommit(store, config.rollback_unknown)
        self.pool = ThreadPoolExecutor(max_workers=config.threads,
                                       thread_name_prefix="operator-wallet-db")
        self.registry = CollectorRegistry()
        self.calls = Counter("operator_wallet_calls_total", (
            "Signed calls by kind and outcome: ok, an error code, or an injected fault "
            "(fault_500, fault_drop, fault_late, fault_duplicate); duplicate_mismatch: two "
            "deliveries answered differently, which must never be seen)."),
            ["kind", "outcome"], registry=self.registry)

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.pool, functools.partial(fn, *args, **kwargs))

    # --- the signed calls

    async def call(self, request: web.Request) -> web.StreamResponse:
        kind: CallKind = request.match_info["kind"]  # type: ignore[assignment]
        body = await request.read()
        why = verify(body, request.headers.get(KEY_ID_HEADER),
                     request.headers.get(SIGNATURE_HEADER), self.config.keys)
        if why is not None:
            self.calls.labels(kind, "bad_signature").inc()
            return _refusal(401, _claimed_id(body), "bad_signature", why)
        try:
            call = WalletRequest.model_validate_json(body)
        except ValidationError as exc:
            self.calls.labels(kind, "bad_request").inc()
            return _refusal(400, _claimed_id(body), "bad_request", _first_error(exc))
        if call.kind != kind:
            self.calls.labels(kind, "bad_request").inc()
            return _refusal(400, call.transaction_id, "bad_request",
                            f"a {call.kind} body posted to /{kind}")
        return await self._faulty(request, call)

    async def _faulty(self, request: web.Request, call: WalletRequest) -> web.StreamResponse:
        faults = self.dice.faults
        roll = self.dice.roll(call.kind)
        if faults.latency_ms:
            await asyncio.sleep(faults.latency_ms / 1000)
        if roll.error:
            self.calls.labels(call.kind, "fault_500").inc()
            return web.json_response({"error": "injected fault: a 500 before the write"},
                                     status=500)
        deliveries = 2 if roll.duplicate else 1
        if roll.duplicate:
            self.calls.labels(call.kind, "fault_duplicate").inc()
        answers = await asyncio.gather(*(self.writes.call(call) for _ in range(deliveries)))
        status, response = answers[0]
        if any(answer != answers[0] for answer in answers):  # idempotency broken: say so
            log.error("deliveries of %s answered differently: %s", call.transaction_id, answers)
            self.calls.labels(call.kind, "duplicate_mismatch").inc()
        self.calls.labels(call.kind, response.error_code or "ok").inc()
        if roll.drop and request.transport is not None:
            self.calls.labels(call.kind, "fault_drop").inc()
            request.transport.abort()  # written, never answered
            return web.Response(status=204)
        if roll.late:
            self.calls.labels(call.kind, "fault_late").inc()
            await asyncio.sleep(faults.late_ms / 1000)
        return _json(response, status)

    async def transactions(self, request: web.Request) -> web.Response:
        query = request.rel_url.raw_query_string
        why = verify(query.encode(), request.headers.get(KEY_ID_HEADER),
                     request.headers.get(SIGNATURE_HEADER), self.config.keys)
        if why is not None:
            return _refusal(401, "", "bad_signature", why)
        q = request.rel_url.query
        unknown = sorted(set(q) - {"after", "limit", "player_id"})
        if unknown:
            return _refusal(400, "", "bad_request", f"unknown parameter(s) {unknown}")
        try:
            after, limit = int(q.get("after", "0")), int(q.get("limit", "100"))
        except ValueError:
            return _refusal(400, "", "bad_request", "after and limit are integers")
        if after < 0 or not 1 <= limit <= MAX_PAGE:
            return _refusal(400, "", "bad_request",
                            f"after is >= 0 and limit in 1..{MAX_PAGE}")
        page = await self._run(self.store.transactions, after, limit, q.get("player_id"))
        return _json(page)

    # --- the admin API

    async def put_player(self, request: web.Request) -> web.Response:
        update = await _admin_body(request, PlayerUpdate)
        try:
            player = await self._run(self.store.put_player, request.match_info["player_id"],
                                     update.currency, update.balance, update.blocked)
        except ValueError as exc:
            return _admin_problem(422, "bad_player", str(exc))
        return _json(_view(player))

    async def get_player(self, request: web.Request) -> web.Response:
        player_id = request.match_info["player_id"]
        player = await self._run(self.store.player, player_id)
        if player is None:
            return _admin_problem(404, "unknown_player", f"no player {player_id!r}")
        return _json(_view(player))

    async def issue_session(self, request: web.Request) -> web.Response:
        wanted = await _admin_body(request, SessionRequest)
        token = wanted.token or secrets.token_urlsafe(24)
        try:
            session = await self._run(self.store.issue_session, request.match_info["player_id"],
                                      wanted.ttl_seconds, token)
        except UnknownPlayer as exc:
            return _admin_problem(404, "unknown_player", str(exc))
        return _json(SessionView(token=session.token, player_id=session.player_id,
                                 expires_at=session.expires_at), 201)

    async def expire_session(self, request: web.Request) -> web.Response:
        token = request.match_info["token"]
        if not await self._run(self.store.expire_session, token):
            return _admin_problem(404, "unknown_session", "no such session token")
        return web.Response(status=204)

    async def get_faults(self, request: web.Request) -> web.Response:
        return _json(self.dice.faults)

    async def put_faults(self, request: web.Request) -> web.Response:
        self.dice = Dice(await _admin_body(request, Faults))
        log.info("faults now %s", self.dice.faults.model_dump_json())
        return _json(self.dice.faults)

    # --- the rest

    async def health(self, request: web.Request) -> web.Response:
        return web.json_response({"service": "operator-wallet", "ok": True})

    async def metrics(self, request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(self.registry),
                            headers={"Content-Type": CONTENT_TYPE_LATEST})


M = TypeVar("M", bound=BaseModel)


class _BadAdminBody(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


async def _admin_body(request: web.Request, model: type[M]) -> M:
    raw = await request.read()
    try:
        return model.model_validate_json(raw or b"{}")
    except ValidationError as exc:
        raise _BadAdminBody(_first_error(exc)) from exc


WALLET = web.AppKey("wallet", OperatorWallet)


def make_app(store: WalletStore, config: WalletConfig) -> web.Application:
    wallet = OperatorWallet(store, config)

    @web.middleware
    async def admin_only(request: web.Request,
                         handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                         ) -> web.StreamResponse:
        """The admin routes want `Authorization: Bearer <admin token>`; a bad body is a 400."""
        if request.path.startswith("/admin/"):
            given = request.headers.get("Authorization", "")
            if not secrets.compare_digest(given.encode(),
                                          f"Bearer {config.admin_token}".encode()):
                return _admin_problem(401, "unauthorized", "the admin API wants the admin "
                                                           "bearer token")
            try:
                return await handler(request)
            except _BadAdminBody as exc:
                return _admin_problem(400, "bad_request", exc.message)
        return await handler(request)

    async def open_writes(app: web.Application) -> None:
        wallet.writes.start()

    async def close(app: web.Application) -> None:
        await wallet.writes.stop()
        wallet.pool.shutdown(wait=True)

    app = web.Application(middlewares=[admin_only])
    app[WALLET] = wallet
    app.on_startup.append(open_writes)
    app.on_cleanup.append(close)
    app.router.add_post("/{kind:debit|credit|rollback}", wallet.call)
    app.router.add_get("/transactions", wallet.transactions)
    app.router.add_get("/health", wallet.health)
    app.router.add_get("/metrics", wallet.metrics)
    app.router.add_put("/admin/players/{player_id}", wallet.put_player)
    app.router.add_get("/admin/players/{player_id}", wallet.get_player)
    app.router.add_post("/admin/players/{player_id}/sessions", wallet.issue_session)
    app.router.add_delete("/admin/sessions/{token}", wallet.expire_session)
    app.router.add_get("/admin/faults", wallet.get_faults)
    app.router.add_put("/admin/faults", wallet.put_faults)
    return app


def serve(db: Path, port: int, config: WalletConfig, host: str = "127.0.0.1") -> None:
    """Run until SIGTERM/SIGINT on `host:port` over the database at `db`."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    store = WalletStore(db)
    log.info("operator wallet on %s:%s, db %s, key ids %s, rollback_unknown %s, faults %s",
             host, port, db, sorted(config.keys), config.rollback_unknown,
             config.faults.model_dump_json())
    web.run_app(make_app(store, config), host=host, port=port, print=None,
                access_log=None)
