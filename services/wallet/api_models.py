"""The wallet's HTTP contract: request and response bodies, and the OpenAPI document
generated from them (pydantic's JSON Schema), so the document cannot drift from
what the views validate."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from services.wallet.commands import Amount
from shared.bets import Position
from shared.currency import check_currency
from shared.events.ids import BetId, PlayerId, RequestId, RoundId, TableId
from shared.events.wallet_events import WalletTransaction
from shared.models import FrozenModel
from shared.shoe_history import ShoeRoads


class CreateAccountRequest(FrozenModel):
    player_id: PlayerId
    currency: str = Field(min_length=3, max_length=3, pattern=r"^[A-Z]{3}$", description=(
        "An ISO 4217 code the platform knows (shared/currency.py): its minor units say "
        "what one unit of every amount is."))

    @field_validator("currency")
    @classmethod
    def _known(cls, code: str) -> str:
        return check_currency(code)


class MovementRequest(FrozenModel):
    request_id: RequestId = Field(description="Idempotency key chosen by the operator.")
    amount: Amount


class PlaceBetRequest(FrozenModel):
    bet_id: BetId = Field(description="Client-chosen idempotency key (use a UUID).")
    table_id: TableId
    round_id: RoundId
    bet: str = Field(min_length=1, max_length=64)
    position: Position | None = None
    stake: Amount
    operator_session: str | None = Field(default=None, min_length=1, max_length=512,
                                         description=(
        "Seamless mode (required there): the player's session token at the operator, "
        "sent with the bet's debit and checked by the operator's wallet."))


class AccountResponse(FrozenModel):
    player_id: str
    currency: str
    balance: int = Field(description="Minor units. Seamless mode: the balance the "
                                     "operator's wallet reported last (see README).")
    tx_count: int
    net_at_tables: int | None = Field(default=None, description=(
        "Seamless mode: croupier's net of the player's movements at its tables."))


class MovementResponse(FrozenModel):
    transaction: WalletTransaction
    balance: int


class PlacedBet(FrozenModel):
    bet_id: str
    table_id: str
    round_id: str
    bet: str
    position: Position | None = None
    stake: int
    placed_at: str


class PlaceBetResponse(FrozenModel):
    bet: PlacedBet
    debit_tx_id: str
    balance_after: int
    currency: str


class TransactionsPage(FrozenModel):
    items: list[WalletTransaction]
    next_after: int | None = Field(description="Pass as `after` for the next page; "
                                                "null at the end.")
    oldest_held_seq: int = Field(description=(
        "The oldest movement the wallet still holds: it keeps a window of history "
        "(CROUPIER_WALLET_STATE_WINDOW_HOURS, 30 days by default); a page asked for before "
        "it starts there. tx_count + 1 when it holds none."))
    older_in_archive: bool = Field(description=(
        "Older movements expired from the wallet: the archive of wallet.transactions "
        "holds the player's whole history."))


class TokenResponse(FrozenModel):
    player_id: str
    token: str
    expires_at: datetime = Field(description="Ask for a new token before this time.")


class OfferedBet(FrozenModel):
    min_stake: int | None = Field(description=(
        "In minor units of the asked currency (`?currency=`), or of any currency at a table "
        "with one set of limits; null when the body holds several currencies' limits (see "
        "`limits`) or the table does not offer the asked one."))
    max_stake: int | None = Field(description="As min_stake; also the table maximum on one "
                                              "spot in one round (seed 002).")
    positions: list[Position]


class StakeLimitsBody(FrozenModel):
    min_stake: int
    max_stake: int


class CurrencyLimitsBody(FrozenModel):
    """A table's limits and chips in one currency, in that currency's minor units."""

    currency: str | None = Field(description=(
        "ISO 4217 code; null: a table taking any currency with the same limits."))
    chips: list[int] = Field(description="The chip denominations, ascending (empty: the "
                                         "table's profile names none).")
    bets: dict[str, StakeLimitsBody]


class TableRestriction(FrozenModel):
    """A limit on who may place some of the table's bets, which the table shows as a sign."""

    code: Literal["tiger_needs_main_bet"] = Field(description=(
        "tiger_needs_main_bet: the Tiger wagers in `bets` are taken only from a player who "
        "already has one of `requires_one_of` in the round (refused `needs_main_bet` "
        "otherwise)"))
    bets: list[str] = Field(description="The bets the restriction applies to.")
    requires_one_of: list[str] = Field(description="A bet of the player's in the round, "
                                                   "placed first, that lifts it.")
    sign: str = Field(description="The sign to display at the table while it applies.")
    source: str = Field(description="The operator sheet and clause it comes from.")


class CurrentRound(FrozenModel):
    table_id: str
    round_id: str
    status: str
    profile: str
    game: str
    betting_closes_at: str
    bets: dict[str, OfferedBet]
    currencies: list[str] | None = Field(default=None, description=(
        "The currencies a player may bet in here; null: any (one set of limits). A bet in "
        "another is refused currency_not_offered."))
    limits: list[CurrencyLimitsBody] = Field(default_factory=list, description=(
        "Limits and chips in the asking player's currency (`?currency=`; empty when the "
        "table does not offer it), or in every currency offered when none is asked."))
    restrictions: list[TableRestriction] = Field(default_factory=list, description=(
        "Seed 002: \"the casino may limit the placement of any or all of the Tiger wagers "
        "to those players who also have a Baccarat wager on the Player's Hand, Banker's "
        "Hand or Tie and will display a sign at the table when this applies\". Empty when "
        "nothing is restricted."))


class TableSummary(FrozenModel):
    table_id: str
    current_round: str | None = Field(description="The table's newest round (null: none yet).")
    round_status: str | None = Field(description="open, closed, completed, voided or annulled "
                                                 "(the round's phase in the wallet's words).")
    profile: str | None
    shoe_id: str | None = Field(description="The shoe in play, or the last one.")
    flagged: str | None = Field(description="Why no bet is taken (a table event refused as "
                                            "forged, altered, unsigned or out of order).")
    currencies: list[str] | None = Field(default=None, description=(
        "The currencies the newest round's profile offers; null: any."))
    limits: list[CurrencyLimitsBody] = Field(default_factory=list, description=(
        "The newest round's limits and chips in `?currency=` (empty: not offered), or in "
        "every currency offered."))


class Tables(FrozenModel):
    tables: list[TableSummary]


class ErrorDetail(FrozenModel):
    code: str = Field(description="Machine-readable: unknown_round, round_closed, "
                                  "bet_not_offered, bad_position, below_minimum, "
                                  "above_maximum, spot_maximum, needs_main_bet, "
                                  "currency_not_offered, "
                                  "insufficient_funds, malformed_body, ...")
    message: str


class ErrorResponse(FrozenModel):
    error: ErrorDetail


class Health(FrozenModel):
    status: str


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    summary: str
    auth: str  # "none", "player", "operator", "player-or-operator"
    ok: int
    response: type[BaseModel]
    request: type[BaseModel] | None = None
    query: tuple[str, ...] = ()  # integer query parameters
    text_query: tuple[str, ...] = ()  # string query parameters


ROUTES: tuple[Route, ...] = (
    Route("get", "/health", "Liveness", "none", 200, Health),
    Route("post", "/accounts", "Create an account", "operator", 201, AccountResponse,
          CreateAccountRequest),
    Route("get", "/accounts/{player_id}", "Read an account", "operator", 200, AccountResponse),
    Route("post", "/accounts/{player_id}/deposits", "Deposit", "operator", 201,
          MovementResponse, MovementRequest),
    Route("post", "/accounts/{player_id}/withdrawals", "Withdraw", "operator", 201,
          MovementResponse, MovementRequest),
    Route("post", "/players/{player_id}/token", "Issue a player's bearer token", "operator",
          200, TokenResponse),
    Route("get", "/players/{player_id}/balance", "Read the balance", "player-or-operator",
          200, AccountResponse),
    Route("get", "/players/{player_id}/transactions", "Transaction history, paged",
          "player-or-operator", 200, TransactionsPage, query=("limit", "after")),
    Route("post", "/players/{player_id}/bets", "Place a bet (debits the stake)", "player", 201,
          PlaceBetResponse, PlaceBetRequest),
    Route("get", "/tables", "Every table the wallet's view holds, with its newest round and "
          "its limits and chips in ?currency= (the player's; all offered when absent)",
          "none", 200, Tables, text_query=("currency",)),
    Route("get", "/tables/{table_id}/current-round", "The open round and what it offers, "
          "limits and chips in ?currency= (the player's; all offered when absent)",
          "none", 200, CurrentRound, text_query=("currency",)),
    Route("get", "/tables/{table_id}/roads", "The roads of the current shoe, or of ?shoe= "
          "(a shoe id, or shoes back from the current: 0, 1, ...)", "none", 200, ShoeRoads,
          text_query=("shoe",)),
)

_ERRORS = {"400": "malformed JSON", "401": "missing or invalid credentials",
           "402": "insufficient funds", "403": "not allowed for this caller",
           "404": "unknown account, table or round",
           "409": "round closed or conflicting idempotency key",
           "422": "invalid body or bet (not offered, bad position, limits, the "
                  "table maximum per spot, a Tiger wager without a main bet, the "
                  "player's currency not offered)"}


def schema_ref(model: type[BaseModel], schemas: dict) -> dict:
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    schemas.update(schema.pop("$defs", {}))
    schemas[model.__name__] = schema
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def json_content(ref: dict, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": ref}}}


def openapi() -> dict:
    schemas: dict = {}
    paths: dict = {}
    error = schema_ref(ErrorResponse, schemas)
    for route in ROUTES:
        op: dict = {"summary": route.summary,
                    "responses": {str(route.ok): json_content(
                        schema_ref(route.response, schemas), "OK")}}
        if route.auth != "none":
            op["security"] = [{"bearer": []}]
            op["description"] = f"Authorization: {route.auth} bearer token."
            op["responses"].update({code: json_content(error, text)
                                    for code, text in _ERRORS.items()})
        params = [{"name": name.strip("{}"), "in": "path", "required": True,
                   "schema": {"type": "string"}}
                  for name in route.path.split("/") if name.startswith("{")]
        params += [{"name": q, "in": "query", "required": False, "schema": {"type": kind}}
                   for queries, kind in ((route.query, "integer"), (route.text_query, "string"))
                   for q in queries]
        if params:
            op["parameters"] = params
        if route.request is not None:
            op["requestBody"] = {"required": True, "content": {
                "application/json": {"schema": schema_ref(route.request, schemas)}}}
        paths.setdefault(route.path, {})[route.method] = op
    return {"openapi": "3.1.0",
            "info": {"title": "croupier wallet", "version": "1"},
            "paths": paths,
            "components": {"schemas": schemas,
                           "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}}}
