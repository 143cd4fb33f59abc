"""A small client of the reference operator wallet (httpx, blocking): its admin API, the
signed calls and the signed transactions report, for the tests, the demo and
reconciliation. It signs exactly as croupier's caller must
(`shared.events.operator_wallet.signature_headers`)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import httpx

from services.simulators.operator_wallet.admin import (
    DEV_ADMIN_TOKEN,
    PlayerUpdate,
    PlayerView,
    SessionRequest,
    SessionView,
)
from services.simulators.operator_wallet.faults import Faults
from services.simulators.operator_wallet.server import DEV_KEY_ID, DEV_SECRET
from shared.events.operator_wallet import (
    OperatorTransaction,
    TransactionsPage,
    WalletRequest,
    WalletResponse,
    signature_headers,
)


class OperatorWalletError(RuntimeError):
    """An admin or report call the wallet did not answer with success."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"operator wallet answered {status}: {body}")
        self.status = status
        self.body = body


class OperatorWalletClient:
    """`base_url` is the wallet's (`http://127.0.0.1:8110`); the key signs calls and reports."""

    def __init__(self, base_url: str, *, admin_token: str = DEV_ADMIN_TOKEN,
                 key_id: str = DEV_KEY_ID, key: bytes | str = DEV_SECRET,
                 timeout: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.key_id = key_id
        self.key = key.encode() if isinstance(key, str) else key
        self._admin = {"Authorization": f"Bearer {admin_token}"}
        self.http = httpx.Client(base_url=self.base_url, timeout=timeout)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> OperatorWalletClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- admin

    def _admin_call(self, method: str, path: str, body: Any = None) -> httpx.Response:
        response = self.http.request(method, path, headers=self._admin, content=body)
        if response.status_code >= 300:
            raise OperatorWalletError(response.status_code, response.text)
        return response

    def put_player(self, player_id: str, currency: str | None = None, balance: int | None = None,
                   blocked: bool | None = None) -> PlayerView:
        """Create a player (with a currency) or change one; a None field is kept."""
        update = PlayerUpdate(currency=currency, balance=balance, blocked=blocked)
        return PlayerView.model_validate_json(self._admin_call(
            "PUT", f"/admin/players/{player_id}", update.model_dump_json(exclude_none=True)).text)

    def player(self, player_id: str) -> PlayerView:
        return PlayerView.model_validate_json(
            self._admin_call("GET", f"/admin/players/{player_id}").text)

    def balance(self, player_id: str) -> int:
        return self.player(player_id).balance

    def issue_session(self, player_id: str, ttl_seconds: float = 3600.0,
                      token: str | None = None) -> str:
        """A session token for the player, valid `ttl_seconds`."""
        wanted = SessionRequest(ttl_seconds=ttl_seconds, token=token)
        return SessionView.model_validate_json(self._admin_call(
            "POST", f"/admin/players/{player_id}/sessions",
            wanted.model_dump_json(exclude_none=True)).text).token

    def expire_session(self, token: str) -> None:
        self._admin_call("DELETE", f"/admin/sessions/{token}")

    def faults(self) -> Faults:
        return Faults.model_validate_json(self._admin_call("GET", "/admin/faults").text)

    def set_faults(self, faults: Faults | None = None, **fields: Any) -> Faults:
        """Replace the faults (and reseed the dice): a `Faults`, or its fields (the rest
        at their defaults: `set_faults()` turns every fault off)."""
        chosen = faults or Faults.model_validate(fields)
        return Faults.model_validate_json(
            self._admin_call("PUT", "/admin/faults", chosen.model_dump_json()).text)

    # --- the signed calls and the report

    def send(self, request: WalletRequest, *, key_id: str | None = None,
             key: bytes | None = None, path: str | None = None) -> httpx.Response:
        """POST one call, signed, and return the raw answer (any status; httpx raises on a
        dropped connection or a timeout). `key_id`/`key`/`path` override, for tests."""
        body = request.body()
        return self.http.post(path or f"/{request.kind}", content=body, headers=signature_headers(
            body, key_id or self.key_id, key if key is not None else self.key))

    def call(self, request: WalletRequest) -> tuple[int, WalletResponse]:
        """One call: its HTTP status and `WalletResponse` (a 5xx raises OperatorWalletError)."""
        response = self.send(request)
        if response.status_code >= 500:
            raise OperatorWalletError(response.status_code, response.text)
        return response.status_code, WalletResponse.model_validate_json(response.text)

    def transactions_page(self, after: int = 0, limit: int = 100,
                          player_id: str | None = None) -> TransactionsPage:
        """One page of the report, signed over its exact query string."""
        params: dict[str, str | int] = {"after": after, "limit": limit}
        if player_id is not None:
            params["player_id"] = player_id
        query = urlencode(params)
        response = self.http.get(f"/transactions?{query}", headers=signature_headers(
            query.encode(), self.key_id, self.key))
        if response.status_code != 200:
            raise OperatorWalletError(response.status_code, response.text)
        return TransactionsPage.model_validate_json(response.text)

    def transactions(self, player_id: str | None = None,
                     page_size: int = 500) -> list[OperatorTransaction]:
        """Every transaction, oldest first, through every page."""
        out: list[OperatorTransaction] = []
        after: int | None = 0
        while after is not None:
            page = self.transactions_page(after, page_size, player_id)
            out += page.transactions
            after = page.next_after
        return out
