"""The console's sessions: random ids held server-side, each with its CSRF token and expiry.

A browser first gets an anonymous session (the login form's CSRF token needs one); logging
in with the operator's credential replaces it with a new id (no session fixation). A
session lasts `ttl` since its last use; an expired one is forgotten. In memory: a restart
of the operator API logs everyone out, which is the safe way round.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

COOKIE = "croupier_console"
CSRF_FIELD = "csrf_token"


@dataclass
class Session:
    sid: str
    csrf: str
    operator: bool
    expires: float

    def csrf_ok(self, presented: str | None) -> bool:
        return presented is not None and presented != "" \
            and hmac.compare_digest(presented.encode(), self.csrf.encode())


class Sessions:
    def __init__(self, ttl_s: float, now: Callable[[], float] = time.monotonic,
                 limit: int = 10_000) -> None:
        self._ttl, self._now, self._limit = ttl_s, now, limit
        self._by_id: dict[str, Session] = {}

    def new(self, operator: bool = False) -> Session:
        self._forget_expired()
        if len(self._by_id) >= self._limit:  # anonymous sessions go first
            for sid in [s for s, v in self._by_id.items() if not v.operator]:
                del self._by_id[sid]
        session = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(32), operator,
                          self._now() + self._ttl)
        self._by_id[session.sid] = session
        return session

    def get(self, sid: str | None) -> Session | None:
        """The live session of `sid` (its expiry pushed back), or None."""
        session = self._by_id.get(sid or "")
        if session is None:
            return None
        if session.expires <= self._now():
            del self._by_id[session.sid]
            return None
        session.expires = self._now() + self._ttl
        return session

    def end(self, sid: str) -> None:
        self._by_id.pop(sid, None)

    def _forget_expired(self) -> None:
        now = self._now()
        for sid in [s for s, v in self._by_id.items() if v.expires <= now]:
            del self._by_id[sid]
