"""What the live wallet says, through its operator API (for rebuild comparisons)."""

from __future__ import annotations

from urllib.parse import quote

import httpx


def live_balances(wallet_url: str, operator_token: str, players: list[str]) -> dict[str, int | None]:
    """Each player's balance as the running wallet holds it; None for an unknown account."""
    headers = {"Authorization": f"Bearer {operator_token}"}
    out: dict[str, int | None] = {}
    with httpx.Client(base_url=wallet_url, headers=headers, timeout=10) as client:
        for player in players:
            response = client.get(f"/accounts/{quote(player, safe='')}")
            if response.status_code == 404:
                out[player] = None
                continue
            response.raise_for_status()
            out[player] = response.json()["balance"]
    return out
