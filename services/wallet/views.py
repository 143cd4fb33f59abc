"""The wallet's HTTP API (Faust web views). Views only read tables; every change
is a command to the accounts agent, whose answer the view waits for.

Every route about one player is answered by the worker that owns the player's
partition of the commands topic (its tables hold the account, and its agent resolves
the reply future): any other worker forwards the whole request there
(`services.infra.routing`), and answers 503 + Retry-After while nobody owns it
(a rebalance, or this worker's tables still recovering). Table routes are answered by
any worker: each one folds all of `table.events` itself."""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
import uuid
from typing import TYPE_CHECKING, TypeVar

import faust
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from services.infra import routing
from services.infra.auth import AuthError
from services.infra.consumer import settling
from services.infra.faust_app import bound_view
from services.infra.observability import health_problems
from services.wallet import money_metrics
from services.wallet.api_models import (
    CreateAccountRequest,
    MovementRequest,
    PlaceBetRequest,
    openapi,
)
from services.wallet.commands import (
    CreateAccount,
    Deposit,
    DoorRefusal,
    Envelope,
    PlaceBet,
    Withdraw,
)
from services.wallet.handlers import Answer, account_body, no_account
from services.wallet.ledger_fold import Lookups
from services.wallet.outbound_api import outbound_openapi
from services.wallet.rounds_view import (
    BetRefused,
    check_round_takes_bet,
    current_round_body,
    opened_seq,
    roads_body,
    round_rules,
    tables_body,
)
from shared.events.wallet_ledger import Account

if TYPE_CHECKING:
    from services.wallet.bootstrap import Wallet

log = logging.getLogger("croupier.wallet.http")
REPLY_TIMEOUT_S = 15.0
MAX_PAGE = 500


_Model = TypeVar("_Model", bound=BaseModel)


class Problem(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.answer = Answer.error(status, code, message)


async def parse(request, model: type[_Model]) -> _Model:
    raw = await request.read()
    try:  # one parse: pydantic's own JSON parser says when the body is not JSON at all
        return model.model_validate_json(raw or b"null")
    except ValidationError as exc:
        errors = exc.errors()
        not_json = next((e for e in errors if e["type"] == "json_invalid"), None)
        if not_json is not None:  # also "[[[[...]]]]" deeper than its recursion limit
            raise Problem(400, "malformed_body", f"body is not JSON: {not_json['msg']}"
                          ) from None
        fields = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}"
                           for e in errors)
        code = "bad_id" if any(_bad_id(e) for e in errors) else "malformed_body"
        raise Problem(422, code, fields) from exc


def _bad_id(error: ErrorDetails) -> bool:
    """An id field (`player_id`, `bet_id`, ...) that is a string but not an id
    (`shared.events.ids`: `..`, `a/b`, whitespace, control characters, too long)."""
    return (bool(error["loc"]) and str(error["loc"][-1]).endswith("_id")
            and error["type"] in ("string_pattern_mismatch", "string_too_short",
                                  "string_too_long"))


_REPLY_PREFIX = uuid.uuid4().hex[:16]  # this process's: no other life reuses its reply ids
_reply_numbers = itertools.count(1)


async def ask(w: Wallet, env: Envelope) -> Answer:
    reply_id = f"{_REPLY_PREFIX}{next(_reply_numbers):x}"  # (a uuid4 per request: 3 %)
    env = env.model_copy(update={"reply_id": reply_id})
    future = w.replies.expect(reply_id)
    try:
        await w.send_command(env)
        return await asyncio.wait_for(future, REPLY_TIMEOUT_S)
    except TimeoutError:
        raise Problem(504, "timeout", "the ledger did not answer in time; retrying with the "
                                      "same id is safe") from None
    finally:
        w.replies.forget(reply_id)


class Elsewhere(Exception):
    """The player's partition belongs to another worker: forward the request there."""

    def __init__(self, owner) -> None:
        super().__init__(str(owner))
        self.owner = owner


def here(w: Wallet, player_id: str) -> None:
    """Return if this worker answers for `player_id`; raise Elsewhere or NoOwner."""
    owner = routing.owner_of(w.app, w.commands_topic, player_id.encode())
    if owner is not None:
        raise Elsewhere(owner)
    if settling(w.app):
        raise routing.NoOwner("this worker's partitions are being (re)assigned")


def folded(w: Wallet, player_id: str) -> Lookups:
    """The player's state here: 503 (never 404) while this worker has not folded the
    ledger partition of the player (a restart, a rebalance, another worker holding it)."""
    look = w.store.lookups(player_id)
    if look is None:
        raise routing.NoOwner("this worker does not hold the account's partition yet")
    return look


_ROUTES: list[tuple[str, type[faust.web.View]]] = []  # (path, page): `register` adds them


def register(app: faust.App, service: Wallet) -> None:
    """The routes on the worker's app, bound to `service` (the bootstrap calls it)."""
    for path, page in _ROUTES:
        app.page(path)(bound_view(page, service))


def route(path: str):
    """A Faust page whose methods may raise Problem/AuthError and return an Answer."""

    def page_of(cls):
        class Page(faust.web.View):
            service: Wallet  # set by `register`

        for method in ("get", "post"):
            handler = getattr(cls, method, None)
            if handler is None:
                continue

            async def wrapped(self, request, _handler=handler, **params):
                try:
                    answer = await _handler(self.service, request, **params)
                except (Problem, AuthError) as exc:
                    answer = exc.answer if isinstance(exc, Problem) else Answer.error(
                        exc.status, exc.code, exc.message)
                except Elsewhere as exc:
                    return await routing.forward(self.service.app, exc.owner, request,
                                                 self.web)
                except routing.NoOwner as exc:
                    return routing.unavailable(self.web, str(exc))
                if answer.status == 503:  # "retry": the same request id is safe
                    return self.json(answer.body, status=503, headers={
                        "Retry-After": str(routing.RETRY_AFTER_S)})
                return self.json(answer.body, status=answer.status)

            setattr(Page, method, wrapped)
        Page.__name__ = cls.__name__
        _ROUTES.append((path, Page))
        return Page

    return page_of


def authorization(request) -> str | None:
    return request.headers.get("Authorization")


def account_or_404(w: Wallet, player_id: str, checked: bool = False):
    """The player's account, answered by the worker that owns it (`checked`: here() was
    already asked)."""
    if not checked:
        here(w, player_id)
    # 404 only from a worker that holds the player's partition, folded: right after a
    # restart the router may name this worker before it has folded the partition, and an
    # account that exists must then be "retry", never "unknown"
    account = folded(w, player_id).account(player_id)
    if account is None:
        raise Problem(*_error_args(no_account(player_id)))
    return account


def _error_args(answer: Answer) -> tuple[int, str, str]:
    return answer.status, answer.body["error"]["code"], answer.body["error"]["message"]


@route("/health")
class Health:
    @staticmethod
    async def get(w: Wallet, request):
        problems = health_problems(w.app)
        if not w.table_views.ready.is_set():
            problems.append("recovering: still reading table.events")
        return Answer(503 if problems else 200,
                      {"status": "ok" if not problems else "unavailable", "problems": problems})


@route("/openapi.json")
class OpenApi:
    @staticmethod
    async def get(w: Wallet, request):
        return Answer(200, openapi())


@route("/openapi/operator-wallet.json")
class OutboundOpenApi:
    """Seamless mode's outbound API: what the operator's wallet implements."""

    @staticmethod
    async def get(w: Wallet, request):
        return Answer(200, outbound_openapi())


@route("/accounts")
class Accounts:
    @staticmethod
    async def post(w: Wallet, request):
        w.auth.require_operator(authorization(request))
        body = await parse(request, CreateAccountRequest)
        here(w, body.player_id)
        return await ask(w, Envelope(command=CreateAccount(player_id=body.player_id,
                                                        currency=body.currency)))


@route("/accounts/{player_id}")
class AccountView:
    @staticmethod
    async def get(w: Wallet, request, player_id):
        w.auth.require_operator(authorization(request))
        return Answer(200, account_body(account_or_404(w, player_id)))


def _movement_route(path: str, command: type[Deposit] | type[Withdraw]) -> None:
    @route(path)
    class Movement:
        @staticmethod
        async def post(w: Wallet, request, player_id):
            w.auth.require_operator(authorization(request))
            here(w, player_id)
            body = await parse(request, MovementRequest)
            limit = w.settings.max_amount_minor_units
            if body.amount > limit:
                raise Problem(422, "amount_too_large",
                              f"the amount is above the limit of {limit} minor units "
                              "(CROUPIER_MAX_AMOUNT_MINOR_UNITS)")
            return await ask(w, Envelope(command=command(player_id=player_id,
                                                      **body.model_dump())))


_movement_route("/accounts/{player_id}/deposits", Deposit)
_movement_route("/accounts/{player_id}/withdrawals", Withdraw)


@route("/players/{player_id}/token")
class Token:
    @staticmethod
    async def post(w: Wallet, request, player_id):
        w.auth.require_operator(authorization(request))
        account_or_404(w, player_id)
        issued = w.auth.issue(player_id)
        return Answer(200, {"player_id": player_id, "token": issued.token,
                            "expires_at": issued.expires_at.isoformat()})


@route("/players/{player_id}/balance")
class Balance:
    @staticmethod
    async def get(w: Wallet, request, player_id):
        w.auth.require_player(authorization(request), player_id, operator_may=True)
        return Answer(200, account_body(account_or_404(w, player_id)))


@route("/players/{player_id}/transactions")
class Transactions:
    @staticmethod
    async def get(w: Wallet, request, player_id):
        w.auth.require_player(authorization(request), player_id, operator_may=True)
        account = account_or_404(w, player_id)
        try:
            limit = int(request.query.get("limit", 100))
            after = int(request.query.get("after", 0))
        except ValueError:
            raise Problem(422, "malformed_query", "limit and after must be integers") from None
        if not 1 <= limit <= MAX_PAGE or after < 0:
            raise Problem(422, "malformed_query", f"limit must be 1..{MAX_PAGE}, after >= 0")
        return Answer(200, history_page(folded(w, player_id), account, after, limit))


def history_page(look: Lookups, account: Account, after: int, limit: int) -> dict:
    """A page of the account's movements after seq `after` (a `TransactionsPage`). The state
    holds the last window's movements (CROUPIER_WALLET_STATE_WINDOW_HOURS): a page asked for
    before them starts at the oldest one held, and says that older ones are in the archive."""
    oldest = look.oldest_held_seq(account.player_id)
    first = max(after + 1, oldest)
    last = min(account.tx_count, first - 1 + limit)
    items = [tx.model_dump(mode="json") for s in range(first, last + 1)
             if (tx := look.tx_at(account.player_id, s)) is not None]
    return {"items": items, "next_after": last if last < account.tx_count else None,
            "oldest_held_seq": oldest, "older_in_archive": oldest > 1}


@route("/players/{player_id}/bets")
class Bets:
    @staticmethod
    async def post(w: Wallet, request, player_id):
        w.auth.require_player(authorization(request), player_id)
        here(w, player_id)  # before reading the body: the owner reads it
        body = await parse(request, PlaceBetRequest)
        account = account_or_404(w, player_id, checked=True)
        if not w.table_views.ready.is_set():
            raise routing.NoOwner("this worker is still reading table.events")
        # The door's verdict travels with the command: it binds only a bet id the ledger
        # never placed, so a resent bet gets its first attempt's answer even while that
        # attempt is still on its way through the log (or was placed by another worker).
        view = w.table_views.get(body.table_id)
        rules: dict = {}
        try:
            check_round_takes_bet(view, table_id=body.table_id,
                                  round_id=body.round_id, bet=body.bet, position=body.position,
                                  stake=body.stake, currency=account.currency,
                                  now=w.clock.now())
            spot_max, needs_main = round_rules(view, body.round_id, body.bet,
                                               account.currency)
            rules = {"spot_max": spot_max, "needs_main_bet": needs_main,
                     "opened_seq": opened_seq(view, body.round_id)}
        except BetRefused as exc:
            rules = {"door_refusal": DoorRefusal(status=exc.status, code=exc.code,
                                                 message=exc.message)}
        answer = await ask(w, Envelope(command=PlaceBet(player_id=player_id, **body.model_dump(),
                                                     **rules)))
        code = answer.body.get("error", {}).get("code") if answer.status >= 400 else None
        if code in (*money_metrics.DOOR_REASONS, "spot_maximum", "needs_main_bet"):
            money_metrics.refused_at_the_door(code)
        return answer


def asked_currency(request) -> str | None:
    """`?currency=JPY`: the asking player's currency, to see the tables' limits and chips in
    (None: not asked, every offered currency's)."""
    currency = request.query.get("currency")
    if currency is not None and not re.fullmatch(r"[A-Z]{3}", currency):
        raise Problem(422, "malformed_query",
                      f"currency must be an ISO 4217 code of 3 capital letters, got {currency!r}")
    return currency


@route("/tables")
class TablesList:
    """Every table the worker's view of `table.events` holds (the operator's floor)."""

    @staticmethod
    async def get(w: Wallet, request):
        if not w.table_views.ready.is_set():
            raise routing.NoOwner("this worker is still reading table.events")
        return Answer(200, tables_body(w.table_views.views, asked_currency(request)))


@route("/tables/{table_id}/current-round")
class CurrentRound:
    @staticmethod
    async def get(w: Wallet, request, table_id):
        view = w.table_views.get(table_id)
        if view is None:
            raise Problem(404, "unknown_table", f"unknown table {table_id!r}")
        body = current_round_body(view, asked_currency(request))
        if body is None:
            raise Problem(404, "unknown_round", f"no round opened yet on table {table_id!r}")
        return Answer(200, body)


@route("/tables/{table_id}/roads")
class Roads:
    """The roads of the table's current shoe, or of `?shoe=`, from the view every worker folds
    of `table.events` (shared.shoe_history; docs/decisions/roads.md)."""

    @staticmethod
    async def get(w: Wallet, request, table_id):
        if not w.table_views.ready.is_set():  # roads of half the events are wrong roads
            raise routing.NoOwner("this worker is still reading table.events")
        try:
            return Answer(200, roads_body(w.table_views.get(table_id), table_id,
                                          request.query.get("shoe")))
        except BetRefused as exc:
            raise Problem(exc.status, exc.code, exc.message) from None
