"""The seamless wallet's outbound API: what croupier asks the operator's wallet, what it may
answer, how the request is signed, and what croupier keeps of each call.

In seamless mode (`CROUPIER_WALLET_MODE=seamless`) the operator's wallet holds the balance.
croupier calls it over HTTP for every bet (`debit`), every settlement (`credit`) and every
bet to be undone (`rollback`), and records each call and its answer in its own ledger
(`OperatorCall`, then `OperatorCallRecord` on `wallet.operator_calls`), so a replay shows
for every bet what croupier asked and what the operator said (docs/decisions/seamless.md).

The protocol, in one place (the reference operator wallet and the wallet's caller both
import it; the README's OpenAPI document is generated from these models):
- `POST {base}/debit`, `POST {base}/credit`, `POST {base}/rollback`, each with a JSON
  `WalletRequest` body; the body's bytes are signed: header `X-Croupier-Signature` is the
  hex HMAC-SHA256 of the exact body under the shared secret named by `X-Croupier-Key-Id`,
  so the operator can hold an old and a new key while keys rotate.
- Each request names a `transaction_id` unique with the player id and deterministic: the
  same cause always gives the same id (`transaction_id_of`), so a retried or redelivered
  call is the same transaction, answered as its first delivery was.
- 200 with a `WalletResponse` of status `ok` is a yes. A 4xx with status `error` and one of
  `ERROR_CODES` is a definitive no. Anything else (a 5xx, a dropped connection, no answer in
  time) is no answer: a debit with no answer in time is refused to the player and rolled
  back; a credit or rollback is asked again, with backoff, until it is answered (and
  while it is refused `bad_signature` or `bad_request`: the operator did not take it up).
- The session token is sent, and checked by the operator, on debits only: a credit or a
  rollback is owed whatever became of the player's session.

Pure: models and functions, no I/O.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, Field

from shared.events.canonical import hmac_hex, same_digest
from shared.models import FrozenModel

CallKind = Literal["debit", "credit", "rollback"]
CALL_KINDS: tuple[CallKind, ...] = ("debit", "credit", "rollback")
KEY_ID_HEADER = "X-Croupier-Key-Id"
SIGNATURE_HEADER = "X-Croupier-Signature"

# the definitive refusals an operator's wallet may answer (4xx), and the HTTP status each
# is answered to the player with when it refuses a debit
ERROR_CODES: dict[str, int] = {
    "insufficient_funds": 402,
    "player_blocked": 403,
    "wrong_currency": 409,
    "session_expired": 401,
    "invalid_session": 401,
    "unknown_player": 404,
    "transaction_not_found": 404,  # a rollback of a transaction it never recorded
    "transaction_rolled_back": 409,  # a debit whose rollback came first
    "transaction_conflict": 409,  # an id seen before with another body
    "bad_request": 400,
    "bad_signature": 401,
}
# refusals that say the operator did not take the call up at all (it could not read or
# authenticate it: a key rotated in the wrong order, a body it cannot parse): nothing moved.
# A debit refused so is refused to the player; a credit or a rollback is still owed and is
# asked again, with backoff, until the operator takes it up and answers it
NOT_TAKEN_UP: frozenset[str] = frozenset({"bad_request", "bad_signature"})
ErrorCode = Literal["insufficient_funds", "player_blocked", "wrong_currency",
                    "session_expired", "invalid_session", "unknown_player",
                    "transaction_not_found", "transaction_rolled_back",
                    "transaction_conflict", "bad_request", "bad_signature"]


class WalletRequest(FrozenModel):
    """The body of a debit, credit or rollback (the same shape for all three)."""

    transaction_id: str = Field(min_length=1, max_length=200, description=(
        "Deterministic, unique with `player_id`: `debit:<bet>`, `credit:<settlement>`, "
        "`rollback:<transaction it undoes>`. Asked again, it is the same transaction."))
    kind: CallKind
    player_id: str = Field(min_length=1)
    amount: int = Field(ge=0, strict=True, description=(
        "Minor units of `currency`; a credit may be 0 (a lost bet closes its round)."))
    currency: str = Field(pattern=r"^[A-Z]{3}$")
    table_id: str
    round_id: str
    bet_id: str
    session_token: str | None = Field(default=None, description=(
        "The player's session at the operator: on debits only, checked there."))
    reference_transaction_id: str | None = Field(default=None, description=(
        "A rollback: the transaction it undoes. A credit: the debit of the bet it pays."))
    round_closed: bool = Field(default=False, description=(
        "The credit is the bet's last call: its round is over for this bet."))
    requested_at: AwareDatetime = Field(description=(
        "When croupier first decided the call (the same on every retry)."))

    def body(self) -> bytes:
        """The exact bytes sent and signed (the same on every retry)."""
        return self.model_dump_json(exclude_none=True).encode()


class WalletResponse(FrozenModel):
    """The operator's answer: `ok` with the balance after, or `error` with a code."""

    status: Literal["ok", "error"]
    transaction_id: str
    operator_transaction_id: str | None = Field(default=None, description=(
        "The operator's own reference of the transaction."))
    balance: int | None = Field(default=None, strict=True, description=(
        "The player's balance at the operator after the transaction, minor units."))
    currency: str | None = None
    error_code: ErrorCode | None = None
    message: str | None = None


Outcome = Literal["ok", "refused", "no_answer"]


class OperatorAnswer(FrozenModel):
    """What came of one call: a yes, a definitive no, or no answer (timeout, 5xx, drop)."""

    outcome: Outcome
    http_status: int | None = None
    error_code: str | None = None
    message: str | None = None
    balance: int | None = None
    operator_transaction_id: str | None = None
    attempts: int = Field(default=1, ge=1, description="Deliveries it took.")
    answered_at: AwareDatetime

    @property
    def definitive(self) -> bool:
        return self.outcome != "no_answer"

    @property
    def settles_owed_call(self) -> bool:
        """Ends a credit's or a rollback's deliveries: a yes, or a no about the money."""
        return self.definitive and self.error_code not in NOT_TAKEN_UP


class OperatorCall(FrozenModel):
    """A call croupier owes the operator's wallet, as its ledger keeps it: pending while
    `answer` is None (owed: driven again by whichever worker owns the player), then with
    its definitive answer (or, for a debit, the answer that never came)."""

    request: WalletRequest
    reply_id: str | None = Field(default=None, description=(
        "The HTTP request a debit's answer is waited on by (none for credits/rollbacks)."))
    answer: OperatorAnswer | None = None

    @property
    def pending(self) -> bool:
        return self.answer is None

    def record(self) -> OperatorCallRecord:
        """The answered call as `wallet.operator_calls` carries it."""
        if self.answer is None:
            raise ValueError(f"call {self.request.transaction_id} is not answered yet")
        return OperatorCallRecord(request=self.request, answer=self.answer)


class OperatorCallRecord(FrozenModel):
    """One answered call, on `wallet.operator_calls` keyed by player: what croupier asked
    and what the operator said (reconciliation and replay read these)."""

    schema_version: Literal[1] = 1
    type: Literal["operator_call"] = "operator_call"
    request: WalletRequest
    answer: OperatorAnswer


def transaction_id_of(kind: CallKind, cause: str) -> str:
    """The deterministic id of a call: its kind and its cause (a bet id for a debit, a
    settlement or reversal id for a credit, the undone transaction's id for a rollback)."""
    return f"{kind}:{cause}"


def sign(body: bytes, key: bytes) -> str:
    return hmac_hex(key, body)


def signature_headers(body: bytes, key_id: str, key: bytes) -> dict[str, str]:
    """The headers of a signed request."""
    return {KEY_ID_HEADER: key_id, SIGNATURE_HEADER: sign(body, key),
            "Content-Type": "application/json"}


def verify(body: bytes, key_id: str | None, signature: str | None,
           keys: dict[str, bytes]) -> str | None:
    """None if `signature` is the body's HMAC under the key `key_id` names; else why not."""
    if not key_id or not signature:
        return f"missing {KEY_ID_HEADER} or {SIGNATURE_HEADER}"
    key = keys.get(key_id)
    if key is None:
        return f"unknown key id {key_id!r}"
    if not same_digest(sign(body, key), signature):
        return "signature does not match the body"
    return None


TransactionStatus = Literal["applied", "rolled_back"]


class OperatorTransaction(FrozenModel):
    """One transaction as the operator's wallet reports it (`GET {base}/transactions`,
    signed like the calls, over the body-less query string): what reconciliation compares
    croupier's calls with. A rollback of a transaction the operator never recorded is
    reported too, with amount 0 and `reference_transaction_id` naming it."""

    transaction_id: str
    kind: CallKind
    player_id: str
    amount: int = Field(ge=0, strict=True)
    currency: str
    table_id: str
    round_id: str
    bet_id: str
    reference_transaction_id: str | None = None
    status: TransactionStatus = Field(description=(
        "rolled_back: a later rollback undid it (the rollback is reported as its own "
        "transaction)."))
    balance_after: int = Field(strict=True)
    operator_transaction_id: str
    recorded_at: AwareDatetime


class TransactionsPage(FrozenModel):
    """A page of the operator's transactions, oldest first; ask again `after` the last."""

    transactions: list[OperatorTransaction]
    next_after: int | None = Field(default=None, description=(
        "Pass as `after` for the next page; none when this is the last."))
