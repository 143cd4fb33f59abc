"""The reference operator wallet's admin API bodies (bearer token; tests and the demo):
a player's state, a change to it, a session issued. Money is integer minor units."""

from __future__ import annotations

from pydantic import AwareDatetime, Field

from shared.models import FrozenModel

DEV_ADMIN_TOKEN = "croupier-dev-operator-wallet-admin"
YEAR = 366 * 86_400.0


class PlayerUpdate(FrozenModel):
    """`PUT /admin/players/{player_id}`: create (currency needed) or change a player; a
    field left out keeps its value (a new player starts at balance 0, not blocked)."""

    currency: str | None = Field(default=None, pattern=r"^[A-Z]{3}$")
    balance: int | None = Field(default=None, strict=True)
    blocked: bool | None = Field(default=None, strict=True)


class PlayerView(FrozenModel):
    player_id: str
    currency: str
    balance: int = Field(strict=True)
    blocked: bool


class SessionRequest(FrozenModel):
    """`POST /admin/players/{player_id}/sessions`: a session token valid `ttl_seconds`
    (negative: already expired, for tests); `token` to choose it, else a random one."""

    ttl_seconds: float = Field(default=3600.0, ge=-YEAR, le=10 * YEAR, allow_inf_nan=False)
    token: str | None = Field(default=None, min_length=1, max_length=200)


class SessionView(FrozenModel):
    token: str
    player_id: str
    expires_at: AwareDatetime
