"""The OpenAPI document of the seamless wallet's outbound API: what an operator's wallet
implements for croupier to call (`shared.events.operator_wallet` is the contract;
this only describes it, from the same models, like the wallet's own `openapi()`).

Served by the wallet at `GET /openapi/operator-wallet.json` and written to
`docs/operator-wallet-openapi.json` (`croupier schemas` writes it, `--check` checks it).
"""

from __future__ import annotations

from services.wallet.api_models import json_content, schema_ref
from shared.events.operator_wallet import (
    ERROR_CODES,
    KEY_ID_HEADER,
    SIGNATURE_HEADER,
    TransactionsPage,
    WalletRequest,
    WalletResponse,
)

_CALLS = {
    "debit": "Debit a bet's stake. The session token is checked here, and only here. "
             "Answered within croupier's debit timeout (default 3 s), or croupier refuses "
             "the bet to the player and rolls the debit back.",
    "credit": "Credit a settlement (wins, pushes; 0 for a lost bet where the operator "
              "expects a credit per bet). Never refused for the session; asked again with "
              "backoff until a definitive answer (and while it is refused bad_signature "
              "or bad_request: nothing moved, it is still owed).",
    "rollback": "Undo the transaction `reference_transaction_id` names: a debit (a bet "
                "rejected, voided, or whose debit was never answered) or a credit (a "
                "settlement reversed by a correction or an annulment). An unknown "
                "transaction is answered per the operator's rule: 200, or 404 "
                "transaction_not_found; either way a debit with that id arriving later "
                "must be refused transaction_rolled_back. Asked again like a credit.",
}
_SIGNED: list[dict[str, list[str]]] = [{"keyId": [], "signature": []}]


def outbound_openapi() -> dict:
    schemas: dict = {}
    request, response = schema_ref(WalletRequest, schemas), schema_ref(WalletResponse, schemas)
    errors = {str(status): json_content(response, "A definitive no: " + ", ".join(
        sorted(code for code, s in ERROR_CODES.items() if s == status)))
        for status in sorted(set(ERROR_CODES.values()))}
    paths: dict = {}
    for kind, description in _CALLS.items():
        paths[f"/{kind}"] = {"post": {
            "summary": kind.capitalize(), "description": description, "security": _SIGNED,
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": request}}},
            "responses": {"200": json_content(response, "A yes: `status: ok`, the balance "
                                                        "after."),
                          **errors,
                          "5XX": {"description": "No answer: asked again (credit, "
                                                 "rollback) or rolled back (debit)."}}}}
    paths["/transactions"] = {"get": {
        "summary": "The operator's transactions, oldest first (reconciliation)",
        "description": "Signed over the raw query string's bytes.", "security": _SIGNED,
        "parameters": [{"name": name, "in": "query", "required": False,
                        "schema": {"type": kind}}
                       for name, kind in (("after", "integer"), ("limit", "integer"),
                                          ("player_id", "string"))],
        "responses": {"200": json_content(schema_ref(TransactionsPage, schemas), "A page")}}}
    return {"openapi": "3.1.0",
            "info": {"title": "croupier seamless wallet: the operator's wallet API",
                     "version": "1", "description": (
                         "croupier calls these; every request is signed: "
                         f"`{SIGNATURE_HEADER}` is the hex HMAC-SHA256 of the exact body "
                         f"under the shared secret `{KEY_ID_HEADER}` names (hold the old "
                         "and the new key while keys rotate). A repeated transaction_id "
                         "(with the player id) is answered as its first delivery.")},
            "paths": paths,
            "components": {"schemas": schemas, "securitySchemes": {
                "keyId": {"type": "apiKey", "in": "header", "name": KEY_ID_HEADER},
                "signature": {"type": "apiKey", "in": "header", "name": SIGNATURE_HEADER}}}}
