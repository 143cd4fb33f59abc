"""What the live wallet says, through its operator API (for rebuild comparisons)."""

from __future__ import annotations

from urllib.parse import quote

import httpx


def live_balances(wallet_url: str, operator_token: str, players: list[str]) -> dict[str, int | None]:
    """Each player's balance as the running wallet's ledger holds it; None for an unknown
    account. Seamless mode: croupier's net at its tables (`net_at_tables`; the balance it
    answers players is the operator's, which no fold of croupier's log can give)."""
    headers = {"Authorization": f"Bearer {operator_token}"}
    out: dict[str, int | None] = {}
    with httpx.Client(base_url=wallet_url, headers=headers, timeout=10) as client:
        for player in players:
            response = client.get(f"/accounts/{quote(player, safe='')}")
            if response.status_code == 404:
                out[player] = None
                continue
            response.raise_for_status()
            body = response.json()
            net = body.get("net_at_tables")
            out[player] = body["balance"] if net is None else net
    return out


class WalletError(Exception):
    """The wallet answered with an error (or not at all): `status` and the wallet's own
    message, so the console can say what was wrong."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Wallet:
    """The wallet's operator API for the console, asynchronously: the tables' view (every
    table, the open round, the roads) and a player's balance and transactions."""

    def __init__(self, wallet_url: str, operator_token: str, timeout_s: float = 5.0) -> None:
        self._client = httpx.AsyncClient(base_url=wallet_url, timeout=timeout_s,
                                         headers={"Authorization": f"Bearer {operator_token}"})

    async def close(self) -> None:
        await self._client.aclose()

    async def _get(self, path: str, params: dict | None = None) -> dict:
        try:
            response = await self._client.get(path, params=params)
        except httpx.HTTPError as exc:
            raise WalletError(503, f"the wallet did not answer: {exc}") from None
        if response.status_code >= 400:
            try:
                message = response.json()["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = response.text[:300]
            raise WalletError(response.status_code, message)
        return response.json()

    async def tables(self) -> list[dict]:
        return (await self._get("/tables"))["tables"]

    async def _get_or_none(self, path: str) -> dict | None:
        """The answer, or None where the wallet answers 404 (no such round or shoe yet)."""
        try:
            return await self._get(path)
        except WalletError as exc:
            if exc.status == 404:
                return None
            raise

    async def current_round(self, table_id: str) -> dict | None:
        """The open round and what it offers; None while the table has none."""
        return await self._get_or_none(f"/tables/{quote(table_id, safe='')}/current-round")

    async def roads(self, table_id: str) -> dict | None:
        """The current shoe's roads (`GET /tables/{id}/roads`); None before any shoe."""
        return await self._get_or_none(f"/tables/{quote(table_id, safe='')}/roads")

    async def balance(self, player_id: str) -> dict:
        return await self._get(f"/players/{quote(player_id, safe='')}/balance")

    async def transactions(self, player_id: str, limit: int = 50) -> dict:
        """The player's newest `limit` transactions (the wallet pages from the oldest)."""
        account = await self.balance(player_id)
        after = max(0, int(account.get("tx_count", 0)) - limit)
        return await self._get(f"/players/{quote(player_id, safe='')}/transactions",
                               {"limit": limit, "after": after})
