"""What a debit, credit or rollback does at the reference operator wallet: pure decisions
over what the database holds, so the rules are tested without a database or a server.

The store reads the player, the session, the transaction a call refers to and any
tombstone, calls `decide`, and writes what the `Decision` says in the same transaction.
The checks, in order (the first failing one names the refusal):
- a debit or a credit whose own id has a tombstone (its rollback came first) is refused
  `transaction_rolled_back`, before anything else;
- debit: the player
  (`unknown_player`), the session (`invalid_session`: missing, unknown or another
  player's; `session_expired`), `player_blocked`, `wrong_currency`, `insufficient_funds`;
- credit: `unknown_player`, `wrong_currency`, and a `reference_transaction_id` that names
  no standing transaction (`transaction_not_found`: unknown, tombstoned or rolled back, a
  credit for a bet the operator never took is a bug to catch, not money to pay). No
  session check and no blocked check: a credit is owed whatever became of the player;
- rollback: `unknown_player`, `wrong_currency`, then the undone transaction: a standing
  debit gives its amount back, a standing credit takes its amount back (the balance may go
  negative); one already rolled back is refused `transaction_rolled_back`, a rollback is
  not undone (`bad_request`), and an amount other than the undone transaction's is refused
  `transaction_conflict`. An unknown transaction leaves a tombstone and is answered per the
  `rollback_unknown` setting: a 0-amount rollback ("success") or `transaction_not_found`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from shared.events.operator_wallet import (
    ERROR_CODES,
    CallKind,
    ErrorCode,
    TransactionStatus,
    WalletRequest,
)

RollbackUnknown = Literal["success", "not_found"]


@dataclass(frozen=True)
class Player:
    player_id: str
    currency: str
    balance: int  # minor units
    blocked: bool = False


@dataclass(frozen=True)
class Session:
    token: str
    player_id: str
    expires_at: datetime
    expired: bool = False  # ended early by the admin API

    def live_at(self, now: datetime) -> bool:
        return not self.expired and now < self.expires_at


@dataclass(frozen=True)
class Recorded:
    """A transaction the wallet recorded (what a credit or rollback refers to)."""

    transaction_id: str
    kind: CallKind
    amount: int
    currency: str
    status: TransactionStatus


@dataclass(frozen=True)
class Decision:
    """What a call does. A refusal (`error_code` set) moves nothing and records no
    transaction, but may leave a tombstone (a rollback of an unknown transaction answered
    not_found). An acceptance moves `delta` (signed, minor units), records a transaction of
    `amount`, marks `undoes` rolled back, and leaves a tombstone if `tombstone`."""

    error_code: ErrorCode | None = None
    message: str | None = None
    delta: int = 0
    amount: int = 0
    undoes: str | None = None
    tombstone: bool = False

    @property
    def accepted(self) -> bool:
        return self.error_code is None

    @property
    def http_status(self) -> int:
        return 200 if self.error_code is None else ERROR_CODES[self.error_code]


def refuse(code: ErrorCode, message: str, *, tombstone: bool = False) -> Decision:
    return Decision(error_code=code, message=message, tombstone=tombstone)


def fingerprint(request: WalletRequest) -> str:
    """The identity of a call's content: the sha256 of its canonical body. The same
    transaction id delivered with another fingerprint is a conflict, not a retry."""
    return hashlib.sha256(request.body()).hexdigest()


def _player_checks(request: WalletRequest, player: Player | None) -> Decision | None:
    if player is None:
        return refuse("unknown_player", f"no player {request.player_id!r} at this operator")
    if request.kind == "debit" and player.blocked:
        return refuse("player_blocked", f"player {player.player_id!r} is blocked")
    if request.currency != player.currency:
        return refuse("wrong_currency", f"player {player.player_id!r} plays in "
                                        f"{player.currency}, not {request.currency}")
    return None


def _session_check(request: WalletRequest, session: Session | None,
                   now: datetime) -> Decision | None:
    if not request.session_token:
        return refuse("invalid_session", "a debit needs a session_token")
    if session is None:
        return refuse("invalid_session", "session token unknown to this operator")
    if session.player_id != request.player_id:
        return refuse("invalid_session", f"session token is not player "
                                         f"{request.player_id!r}'s")
    if not session.live_at(now):
        return refuse("session_expired", f"session expired at {session.expires_at.isoformat()}"
                      if not session.expired else "session was ended")
    return None


def decide(request: WalletRequest, *, player: Player | None, session: Session | None = None,
           reference: Recorded | None = None, tombstoned: bool = False,
           reference_tombstoned: bool = False, now: datetime | None = None,
           rollback_unknown: RollbackUnknown = "not_found") -> Decision:
    """What `request` does, given what the wallet holds: the player, the session its token
    names, the transaction its `reference_transaction_id` names, and whether a tombstone
    stands for its own id (`tombstoned`: it was rolled back before it arrived, refused
    whatever else, a debit or a credit alike) or for its reference."""
    if tombstoned and request.kind != "rollback":
        return refuse("transaction_rolled_back", f"transaction {request.transaction_id!r} "
                                                 "was rolled back before it arrived")
    if request.kind == "debit":
        return _debit(request, player, session, now)
    refusal = _player_checks(request, player)
    if refusal is not None:
        return refusal
    if request.kind == "credit":
        return _credit(request, reference, reference_tombstoned)
    return _rollback(request, reference, rollback_unknown)


def _debit(request: WalletRequest, player: Player | None, session: Session | None,
           now: datetime | None) -> Decision:
    if player is None:
        return refuse("unknown_player", f"no player {request.player_id!r} at this operator")
    if now is None:
        raise ValueError("a debit is decided at a time (its session's expiry)")
    refusal = _session_check(request, session, now) or _player_checks(request, player)
    if refusal is not None:
        return refusal
    if player.balance < request.amount:
        return refuse("insufficient_funds", f"balance {player.balance} is below the debit's "
                                            f"{request.amount} {player.currency}")
    return Decision(delta=-request.amount, amount=request.amount)


def _credit(request: WalletRequest, reference: Recorded | None, tombstoned: bool) -> Decision:
    ref = request.reference_transaction_id
    if ref is not None:
        if reference is None:
            why = "was rolled back before it arrived" if tombstoned else "is unknown"
            return refuse("transaction_not_found", f"the credited transaction {ref!r} {why}")
        if reference.status == "rolled_back":
            return refuse("transaction_not_found", f"the credited transaction {ref!r} "
                                                   "was rolled back")
    return Decision(delta=request.amount, amount=request.amount)


def _rollback(request: WalletRequest, reference: Recorded | None,
              rollback_unknown: RollbackUnknown) -> Decision:
    ref = request.reference_transaction_id
    if ref is None:
        return refuse("bad_request", "a rollback needs reference_transaction_id")
    if reference is None:
        if rollback_unknown == "not_found":
            return refuse("transaction_not_found", f"no transaction {ref!r} to roll back "
                                                   "(recorded: a later debit of it is refused)",
                          tombstone=True)
        return Decision(tombstone=True)
    if reference.kind == "rollback":
        return refuse("bad_request", f"{ref!r} is a rollback; a rollback is not rolled back")
    if reference.status == "rolled_back":
        return refuse("transaction_rolled_back", f"transaction {ref!r} is already rolled back")
    if request.amount != reference.amount:
        return refuse("transaction_conflict", f"the rollback's amount {request.amount} is not "
                                              f"the {reference.kind}'s {reference.amount}")
    delta = reference.amount if reference.kind == "debit" else -reference.amount
    return Decision(delta=delta, amount=reference.amount, undoes=ref)


def parse_keys(items: list[str]) -> dict[str, bytes]:
    """`["k1=secret", "k2=other"]` (or one comma-separated item) as the key ring, by key id.
    Raises ValueError naming a malformed item or a key id given twice."""
    keys: dict[str, bytes] = {}
    for item in (part.strip() for entry in items for part in entry.split(",")):
        if not item:
            continue
        key_id, sep, secret = item.partition("=")
        if not sep or not key_id or not secret:
            raise ValueError(f"a key is KEY_ID=SECRET, not {item.split('=')[0]!r}=...")
        if key_id in keys:
            raise ValueError(f"key id {key_id!r} given twice")
        keys[key_id] = secret.encode()
    if not keys:
        raise ValueError("no signing key given")
    return keys
