"""Who is calling: a player (a signed, expiring token of their id) or the operator.

A player token is `<key id>.<payload>.<signature>`: the payload (player id and expiry,
seconds since the epoch) is itsdangerous-signed (HMAC-SHA256, a salt of our own so the
signature means nothing elsewhere) with the key the id names. New tokens are signed with
the current key (`settings.player_token_secret`, id `player_token_key_id`); tokens of the
previous keys (`player_token_previous_keys`) are still accepted, so a key is rotated
without logging anyone out, and dropped once its tokens have expired. The operator
presents `settings.operator_token`, compared in constant time. Secrets are never logged
and never echoed in an answer.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from itsdangerous import BadSignature, URLSafeSerializer

from services.infra.settings import Settings

_SALT = "croupier.wallet.player-token.v2"
VERIFIED_KEPT = 100_000  # verified tokens remembered (all forgotten at once past this)


@dataclass(frozen=True)
class Caller:
    role: Literal["player", "operator"]
    player_id: str | None = None


@dataclass(frozen=True)
class PlayerToken:
    token: str
    expires_at: datetime


class AuthError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _unauthenticated(message: str, code: str = "unauthenticated") -> AuthError:
    return AuthError(401, code, message)


class Authenticator:
    def __init__(self, player_token_secret: str, operator_token: str, *,
                 key_id: str = "k1", previous_keys: Mapping[str, str] | None = None,
                 ttl_seconds: int = 12 * 3600, now: Callable[[], float] = time.time) -> None:
        if not player_token_secret or not operator_token:
            raise ValueError("player_token_secret and operator_token must be set")
        if "." in key_id or any("." in kid for kid in previous_keys or {}):
            raise ValueError("a key id may not contain '.'")
        keys = {**(previous_keys or {}), key_id: player_token_secret}
        self._signers = {kid: URLSafeSerializer(key, salt=_SALT) for kid, key in keys.items()}
        self._key_id, self._ttl, self._now = key_id, ttl_seconds, now
        self._operator = operator_token.encode()
        # token -> (player id, expiry) of tokens whose signature checked out: the signers
        # are fixed for the authenticator's life, so a signature once good stays good;
        # the expiry is still checked on every call
        self._verified: dict[str, tuple[str, int]] = {}

    @classmethod
    def from_settings(cls, settings: Settings) -> Authenticator:
        return cls(settings.player_token_secret, settings.operator_token,
                   key_id=settings.player_token_key_id,
                   previous_keys=settings.player_token_previous_keys,
                   ttl_seconds=settings.player_token_ttl_seconds)

    def player_token(self, player_id: str) -> str:
        return self.issue(player_id).token

    def issue(self, player_id: str) -> PlayerToken:
        """A token for `player_id`, signed with the current key, valid for the TTL."""
        expires = int(self._now()) + self._ttl
        signed = self._signers[self._key_id].dumps({"player_id": player_id, "exp": expires})
        return PlayerToken(f"{self._key_id}.{signed}", datetime.fromtimestamp(expires, UTC))

    def caller(self, authorization: str | None) -> Caller:
        """Operator or player from `Authorization: Bearer <token>`; 401 otherwise."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise _unauthenticated("missing bearer token")
        token = token.strip()
        if not token.isascii():  # a token is ASCII; other bytes arrive as surrogates
            raise _unauthenticated("invalid bearer token")
        if hmac.compare_digest(token.encode(), self._operator):
            return Caller("operator")
        return Caller("player", self._player_of(token))

    def _player_of(self, token: str) -> str:
        """The token's player. A token verified before is looked up, not verified again
        (an HMAC and a JSON parse per request: 6 % of the wallet's event loop at intake)."""
        known = self._verified.get(token)
        if known is None:
            known = self._verify(token)
            if len(self._verified) >= VERIFIED_KEPT:
                self._verified.clear()
            self._verified[token] = known
        player_id, expires = known
        if expires <= self._now():
            raise _unauthenticated("expired bearer token: ask for a new one", "token_expired")
        return player_id

    def _verify(self, token: str) -> tuple[str, int]:
        """(player id, expiry) of a token whose signature is good; 401 otherwise."""
        key_id, _, signed = token.partition(".")
        signer = self._signers.get(key_id)
        if signer is None:
            raise _unauthenticated("invalid bearer token (unknown or retired key)")
        try:
            data = signer.loads(signed)
        except BadSignature:
            raise _unauthenticated("invalid bearer token") from None
        if not isinstance(data, dict) or not isinstance(data.get("player_id"), str) \
                or type(data.get("exp")) is not int:
            raise _unauthenticated("invalid bearer token")
        return data["player_id"], data["exp"]

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
