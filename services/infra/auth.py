"""Who is calling: a player (HMAC-signed token of their id) or the operator.

Player tokens are itsdangerous-signed (HMAC-SHA256, key from
`settings.player_token_secret`, a salt of our own so the signature means
nothing elsewhere). The operator presents `settings.operator_token`, compared in
constant time. Secrets are never logged and never echoed in an answer.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Literal

from itsdangerous import BadSignature, URLSafeSerializer

_SALT = "croupier.wallet.player-token.v1"


@dataclass(frozen=True)
class Caller:
    role: Literal["player", "operator"]
    player_id: str | None = None


class AuthError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class Authenticator:
    def __init__(self, player_token_secret: str, operator_token: str) -> None:
        if not player_token_secret or not operator_token:
            raise ValueError("player_token_secret and operator_token must be set")
        self._signer = URLSafeSerializer(player_token_secret, salt=_SALT)
        self._operator = operator_token.encode()

    def player_token(self, player_id: str) -> str:
        return self._signer.dumps({"player_id": player_id})

    def caller(self, authorization: str | None) -> Caller:
        """Operator or player from `Authorization: Bearer <token>`; 401 otherwise."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthError(401, "unauthenticated", "missing bearer token")
        token = token.strip()
        if hmac.compare_digest(token.encode(), self._operator):
            return Caller("operator")
        try:
            data = self._signer.loads(token)
        except BadSignature:
            raise AuthError(401, "unauthenticated", "invalid bearer token") from None
        if not isinstance(data, dict) or not isinstance(data.get("player_id"), str):
            raise AuthError(401, "unauthenticated", "invalid bearer token")
        return Caller("player", data["player_id"])

    def require_operator(self, authorization: str | None) -> Caller:
        caller = self.caller(authorization)
        if caller.role != "operator":
            raise AuthError(403, "forbidden", "operator credential required")
        return caller

    def require_player(self, authorization: str | None, player_id: str,
                       operator_may: bool = False) -> Caller:
        """The player themself (or, for reads, the operator when `operator_may`)."""
        caller = self.caller(authorization)
        if caller.role == "operator":
            if operator_may:
                return caller
            raise AuthError(403, "forbidden", "only the player may do this")
        if caller.player_id != player_id:
            raise AuthError(403, "forbidden", "a player may act only on their own account")
        return caller
