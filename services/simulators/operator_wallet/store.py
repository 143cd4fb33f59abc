"""The reference operator wallet's database: SQLite through the standard library, one
write transaction per call, so a kill -9 at any instant leaves either all of a call or
none of it.

WAL with `synchronous=FULL`: a call answered is on disk. Every write opens with `BEGIN
IMMEDIATE`, which takes SQLite's single writer lock before anything is read, so two
deliveries of one transaction (a duplicate, or a retry racing a late first delivery) are
serialised: the second reads the first's stored answer and returns it. The calls waiting
when a commit starts share it (`call_many`, each call in a savepoint of its own): with an
fsync per commit, one call a commit held the wallet to about 300 calls/s on the 2-core
machine, slower than croupier's transfer mode it is benchmarked against. The answers table
is the idempotency store, keyed by (player_id, transaction_id) like the protocol's ids.

Tables: `players`, `sessions`, `transactions` (every applied transaction in order, `seq`
being the report's cursor), `answers` (what each delivered transaction was answered, and
its content's fingerprint) and `tombstones` (transactions rolled back before they arrived).
Blocking: the server runs these methods in worker threads, one connection per thread.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from services.simulators.operator_wallet.rules import (
    Decision,
    Player,
    Recorded,
    RollbackUnknown,
    Session,
    decide,
    fingerprint,
)
from shared.events.operator_wallet import (
    ERROR_CODES,
    OperatorTransaction,
    TransactionsPage,
    WalletRequest,
    WalletResponse,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS players (
    player_id TEXT PRIMARY KEY, currency TEXT NOT NULL, balance INTEGER NOT NULL,
    blocked INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS sessions (
    token TEXT PRIMARY KEY, player_id TEXT NOT NULL, expires_at TEXT NOT NULL,
    expired INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS transactions (
    seq INTEGER PRIMARY KEY, player_id TEXT NOT NULL, transaction_id TEXT NOT NULL,
    kind TEXT NOT NULL, amount INTEGER NOT NULL, currency TEXT NOT NULL,
    table_id TEXT NOT NULL, round_id TEXT NOT NULL, bet_id TEXT NOT NULL,
    reference_transaction_id TEXT, status TEXT NOT NULL, balance_after INTEGER NOT NULL,
    operator_transaction_id TEXT NOT NULL, recorded_at TEXT NOT NULL,
    UNIQUE (player_id, transaction_id));
CREATE TABLE IF NOT EXISTS answers (
    player_id TEXT NOT NULL, transaction_id TEXT NOT NULL, fingerprint TEXT NOT NULL,
    http_status INTEGER NOT NULL, response TEXT NOT NULL,
    PRIMARY KEY (player_id, transaction_id));
CREATE TABLE IF NOT EXISTS tombstones (
    player_id TEXT NOT NULL, transaction_id TEXT NOT NULL,
    rollback_transaction_id TEXT NOT NULL, recorded_at TEXT NOT NULL,
    PRIMARY KEY (player_id, transaction_id));
"""
TX_COLUMNS = ("transaction_id, kind, player_id, amount, currency, table_id, round_id, bet_id, "
              "reference_transaction_id, status, balance_after, operator_transaction_id, "
              "recorded_at")


class UnknownPlayer(LookupError):
    """An admin call for a player the wallet does not have."""


def _now() -> datetime:
    return datetime.now(UTC)


class WalletStore:
    """The database at `path` (created on first open, kept across restarts)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db().executescript("BEGIN IMMEDIATE;" + SCHEMA + "COMMIT;")

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.row_factory = sqlite3.Row
            self._local.db = db
        return db

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction holding SQLite's writer lock from its first read."""
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    # --- the calls

    def call(self, request: WalletRequest, rollback_unknown: RollbackUnknown,
             now: datetime | None = None) -> tuple[int, WalletResponse]:
        """Apply one debit, credit or rollback once, and answer it: a transaction id seen
        before with the same content gets its stored answer, with another content a 409."""
        [answer] = self.call_many([request], rollback_unknown, now)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def call_many(self, requests: list[WalletRequest], rollback_unknown: RollbackUnknown,
                  now: datetime | None = None) -> list[tuple[int, WalletResponse] | Exception]:
        """Apply several calls in one write transaction (one fsync for all: a group commit),
        each inside a savepoint of its own, in order: a call that fails is undone alone and
        its exception is its answer. Nothing is answered before the commit that holds it, so
        a kill -9 leaves each call whole or absent, and an absent one was never answered."""
        now = now or _now()
        answers: list[tuple[int, WalletResponse] | Exception] = []
        with self._write() as db:
            for request in requests:
                db.execute("SAVEPOINT call")
                try:
                    answers.append(self._call_in(db, request, rollback_unknown, now))
                except Exception as exc:  # this call alone: the others still commit
                    db.execute("ROLLBACK TO call")
                    answers.append(exc)
                db.execute("RELEASE call")
        return answers

    def _call_in(self, db: sqlite3.Connection, request: WalletRequest,
                 rollback_unknown: RollbackUnknown, now: datetime) -> tuple[int, WalletResponse]:
        content = fingerprint(request)
        stored = db.execute("SELECT fingerprint, http_status, response FROM answers "
                            "WHERE player_id = ? AND transaction_id = ?",
                            (request.player_id, request.transaction_id)).fetchone()
        if stored is not None:
            if stored["fingerprint"] == content:
                return stored["http_status"], WalletResponse.model_validate_json(
                    stored["response"])
            return 409, error_response(request.transaction_id, "transaction_conflict", (
                f"transaction {request.transaction_id!r} was delivered before with "
                "another body"))
        decision = self._decide(db, request, rollback_unknown, now)
        status, response = self._apply(db, request, decision, now)
        db.execute("INSERT INTO answers VALUES (?, ?, ?, ?, ?)",
                   (request.player_id, request.transaction_id, content, status,
                    response.model_dump_json(exclude_none=True)))
        return status, response

    def _decide(self, db: sqlite3.Connection, request: WalletRequest,
                rollback_unknown: RollbackUnknown, now: datetime) -> Decision:
        ref = request.reference_transaction_id
        return decide(
            request, player=self._player(db, request.player_id),
            session=self._session(db, request.session_token),
            reference=self._recorded(db, request.player_id, ref) if ref else None,
            tombstoned=self._tombstoned(db, request.player_id, request.transaction_id),
            reference_tombstoned=bool(ref) and self._tombstoned(db, request.player_id, ref or ""),
            now=now, rollback_unknown=rollback_unknown)

    def _apply(self, db: sqlite3.Connection, request: WalletRequest, decision: Decision,
               now: datetime) -> tuple[int, WalletResponse]:
        if decision.tombstone:
            db.execute("INSERT OR IGNORE INTO tombstones VALUES (?, ?, ?, ?)",
                       (request.player_id, request.reference_transaction_id,
                        request.transaction_id, now.isoformat()))
        if decision.error_code is not None:
            return decision.http_status, error_response(
                request.transaction_id, decision.error_code, decision.message or "")
        player = self._player(db, request.player_id)
        assert player is not None  # an accepted call has its player
        balance = player.balance + decision.delta
        db.execute("UPDATE players SET balance = ? WHERE player_id = ?",
                   (balance, request.player_id))
        seq = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM transactions").fetchone()[0]
        operator_id = f"opw-{seq}"
        db.execute(f"INSERT INTO transactions (seq, {TX_COLUMNS}) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'applied', ?, ?, ?)",
                   (seq, request.transaction_id, request.kind, request.player_id,
                    decision.amount, request.currency, request.table_id, request.round_id,
                    request.bet_id, request.reference_transaction_id, balance, operator_id,
                    now.isoformat()))
        if decision.undoes is not None:
            db.execute("UPDATE transactions SET status = 'rolled_back' "
                       "WHERE player_id = ? AND transaction_id = ?",
                       (request.player_id, decision.undoes))
        return 200, WalletResponse(status="ok", transaction_id=request.transaction_id,
                                   operator_transaction_id=operator_id, balance=balance,
                                   currency=player.currency)

    @staticmethod
    def _player(db: sqlite3.Connection, player_id: str) -> Player | None:
        row = db.execute("SELECT * FROM players WHERE player_id = ?", (player_id,)).fetchone()
        return None if row is None else Player(row["player_id"], row["currency"],
                                                row["balance"], bool(row["blocked"]))

    @staticmethod
    def _session(db: sqlite3.Connection, token: str | None) -> Session | None:
        if not token:
            return None
        row = db.execute("SELECT * FROM sessions WHERE token = ?", (token,)).fetchone()
        return None if row is None else Session(row["token"], row["player_id"],
                                                datetime.fromisoformat(row["expires_at"]),
                                                bool(row["expired"]))

    @staticmethod
    def _recorded(db: sqlite3.Connection, player_id: str, transaction_id: str) -> Recorded | None:
        row = db.execute("SELECT transaction_id, kind, amount, currency, status FROM "
                         "transactions WHERE player_id = ? AND transaction_id = ?",
                         (player_id, transaction_id)).fetchone()
        return None if row is None else Recorded(*row)

    @staticmethod
    def _tombstoned(db: sqlite3.Connection, player_id: str, transaction_id: str) -> bool:
        return db.execute("SELECT 1 FROM tombstones WHERE player_id = ? AND transaction_id = ?",
                          (player_id, transaction_id)).fetchone() is not None

    # --- the report

    def transactions(self, after: int = 0, limit: int = 100,
                     player_id: str | None = None) -> TransactionsPage:
        """Every transaction recorded after the cursor `after`, oldest first."""
        where, args = ("seq > ?", [after]) if player_id is None else \
            ("seq > ? AND player_id = ?", [after, player_id])
        rows = self._db().execute(f"SELECT seq, {TX_COLUMNS} FROM transactions WHERE {where} "
                                  "ORDER BY seq LIMIT ?", (*args, limit + 1)).fetchall()
        page = [OperatorTransaction.model_validate({k: row[k] for k in row.keys() if k != "seq"})
                for row in rows[:limit]]
        more = len(rows) > limit
        return TransactionsPage(transactions=page, next_after=rows[limit - 1]["seq"] if more
                                else None)

    # --- the admin API

    def put_player(self, player_id: str, currency: str | None = None,
                   balance: int | None = None, blocked: bool | None = None) -> Player:
        """Create a player (currency needed; balance 0 unless given) or change one."""
        with self._write() as db:
            current = self._player(db, player_id)
            if current is None:
                if currency is None:
                    raise ValueError(f"a new player ({player_id!r}) needs a currency")
                current = Player(player_id, currency, 0, False)
            player = Player(player_id, currency or current.currency,
                            current.balance if balance is None else balance,
                            current.blocked if blocked is None else blocked)
            db.execute("INSERT OR REPLACE INTO players VALUES (?, ?, ?, ?)",
                       (player.player_id, player.currency, player.balance, int(player.blocked)))
            return player

    def player(self, player_id: str) -> Player | None:
        return self._player(self._db(), player_id)

    def issue_session(self, player_id: str, ttl_seconds: float, token: str) -> Session:
        with self._write() as db:
            if self._player(db, player_id) is None:
                raise UnknownPlayer(f"no player {player_id!r}")
            session = Session(token, player_id, _now() + timedelta(seconds=ttl_seconds))
            db.execute("INSERT OR REPLACE INTO sessions VALUES (?, ?, ?, 0)",
                       (token, player_id, session.expires_at.isoformat()))
            return session

    def expire_session(self, token: str) -> bool:
        """End a session now; False if there is no such session."""
        with self._write() as db:
            return db.execute("UPDATE sessions SET expired = 1 WHERE token = ?",
                              (token,)).rowcount == 1


def error_response(transaction_id: str, code: str, message: str) -> WalletResponse:
    if code not in ERROR_CODES:
        raise ValueError(f"{code!r} is not one of the protocol's error codes")
    return WalletResponse.model_validate({"status": "error", "transaction_id": transaction_id,
                                          "error_code": code, "message": message})
