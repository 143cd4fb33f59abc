"""Reconciliation: croupier's calls to the operator's wallet against the operator's report.

croupier keeps each call to the operator's wallet and its final answer as an
`OperatorCallRecord` (`wallet.operator_calls`); the operator reports its transactions
(`OperatorTransaction`, `GET {base}/transactions`). `reconcile` compares the two, per
transaction (the pair player id, transaction id) and per round, per player and per UTC day
(the net money each side says moved, per currency), and names every difference with the
ids to check. A clean run reconciles to zero differences. docs/decisions/reconciliation.md
has the rules; in short:

- croupier's net counts its `ok` debits (minus) and credits (plus) that no `ok` rollback
  cancelled; the operator's counts its standing (`applied`) debits and credits. A rollback
  moves money by cancelling what it references, so it counts nothing of its own on either
  side: both sides say the same thing the same way, whatever day the rollback came.
- the window [since, until): a transaction has one time, croupier's `requested_at` when
  croupier recorded it, else the operator's `recorded_at`; it is compared (and counted in
  the nets, dated by that time) when that time falls in the window. Both inputs are read
  `margin` beyond each edge, so a transaction croupier asked just before the edge and the
  operator recorded just after it is compared with its counterpart instead of being named
  missing on one side; a rollback croupier recorded later than the margin is kept when it
  references a transaction in the window (it decides whether that transaction stands).
- bounded memory: the inputs are streamed; only the transactions within the window and
  its margins are kept, in slotted rows (a day at thousands of bets per round fits).

Pure: no I/O. The operator's report must come oldest first (as `TransactionsPage` pages
it): reading it stops at the first transaction past the window's far margin.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Literal

from pydantic import AwareDatetime, computed_field

from shared.events.operator_wallet import (
    CallKind,
    OperatorCallRecord,
    OperatorTransaction,
)
from shared.models import FrozenModel

DifferenceName = Literal[
    # per transaction
    "missing_at_operator",     # croupier got ok; the operator reports no such transaction
    "unknown_to_croupier",     # the operator reports a transaction croupier has no record of
    "refused_but_applied",     # croupier recorded a refusal; the operator applied it anyway
    "amount_mismatch", "currency_mismatch", "kind_mismatch",
    "player_mismatch",         # the same transaction id under another player at the operator
    "detail_mismatch",         # table, round, bet or referenced transaction differ
    "standing_at_operator",    # croupier rolled it back; the operator holds it standing
    "rolled_back_at_operator",  # croupier holds it standing; the operator rolled it back
    "owed",                    # no answer and nothing settled it yet: a rollback (or the
                               # call itself) is still owed to the operator
    "refused",                 # a credit or rollback the operator refused: money croupier
                               # owes the player that did not move
    "conflicting_records",     # croupier recorded one transaction id twice, differently
    "duplicate_at_operator",   # the operator reports one transaction id twice
    "unreadable_record",       # a record of wallet.operator_calls that does not parse
    # per group: the nets each side says moved differ
    "round_net_mismatch", "player_net_mismatch", "day_net_mismatch",
]
IDS_PER_DIFFERENCE = 20  # a net difference names at most this many transactions to check
NOT_FOUND = "transaction_not_found"


class Unreadable(FrozenModel):
    """A record of croupier's topic that is not an `OperatorCallRecord` (where, and why;
    `at`: the log's timestamp of it, so a window names only the ones near it)."""

    where: str
    error: str
    at: AwareDatetime | None = None


class Difference(FrozenModel):
    """One difference, with the ids to check: `transaction_ids` names the transactions (a
    per-transaction difference: its own id; a net difference: those whose part differs)."""

    name: DifferenceName
    player_id: str | None = None
    transaction_id: str | None = None
    table_id: str | None = None
    round_id: str | None = None
    day: date | None = None
    currency: str | None = None
    croupier: str | int | None = None  # what croupier says (a value, a status, a net)
    operator: str | int | None = None  # what the operator says
    transaction_ids: list[str] = []
    detail: str = ""

    def line(self) -> str:
        """One line naming it, for a terminal."""
        where = [f"{k} {v}" for k, v in (("player", self.player_id),
                                          ("transaction", self.transaction_id),
                                          ("table", self.table_id), ("round", self.round_id),
                                          ("day", self.day), ("currency", self.currency))
                 if v is not None]
        text = f"{self.name}: {', '.join(where)}"
        if self.croupier is not None or self.operator is not None:
            text += f" (croupier {self.croupier}, operator {self.operator})"
        if self.detail:
            text += f": {self.detail}"
        others = [t for t in self.transaction_ids if t != self.transaction_id]
        if others:
            text += f"; check {', '.join(others)}"
        return text


class NetRow(FrozenModel):
    """The net money one UTC day moved in one currency, as each side says (minor units,
    in the players' favour)."""

    day: date
    currency: str
    croupier: int
    operator: int
    transactions: int


class ReconcileReport(FrozenModel):
    since: AwareDatetime | None
    until: AwareDatetime | None
    player: str | None
    margin_seconds: int
    calls_read: int            # croupier's records read (the whole topic is streamed)
    operator_read: int         # the operator's transactions read
    transactions: int          # compared: in the window (and the player, with one)
    out_of_scope: int          # kept for the margins only: compared in their own window
    rounds: int
    players: int
    days: list[NetRow]
    differences: list[Difference]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def clean(self) -> bool:
        return not self.differences


Key = tuple[str, str]  # (player id, transaction id): unique together


@dataclass(slots=True)
class _Row:
    """One transaction as one side has it (slotted: a day's window holds millions)."""

    kind: CallKind
    amount: int
    currency: str
    table_id: str
    round_id: str
    bet_id: str
    reference: str | None
    at: datetime


@dataclass(slots=True)
class _Ours(_Row):
    """croupier's view: its request (`at`: requested_at) and its final answer."""

    outcome: str
    error_code: str | None
    key: Key  # the dict's own key: the operator's row of it shares it
    # an ok rollback of it is recorded (or, of a transaction the operator confirmed, a
    # rollback it answered "not found": croupier's ledger undid it all the same)
    rolled_back: bool = False
    rollback_done: bool = False  # that, or a rollback the operator answered "not found"


@dataclass(slots=True)
class _Theirs(_Row):
    """The operator's report (`at`: recorded_at)."""

    status: str
    operator_transaction_id: str


def _intern(text: str) -> str:
    return sys.intern(text)  # player, round, table and currency ids repeat across bets


def _ours(key: Key, record: OperatorCallRecord) -> _Ours:
    r = record.request
    return _Ours(r.kind, r.amount, _intern(r.currency), _intern(r.table_id),
                 _intern(r.round_id), r.bet_id, r.reference_transaction_id, r.requested_at,
                 record.answer.outcome, record.answer.error_code, key)


def _theirs(t: OperatorTransaction, o: _Ours | None) -> _Theirs:
    """The operator's row; the ids it shares with croupier's row of it are that row's
    strings (one copy, not two, for every transaction that matches)."""
    bet = o.bet_id if o is not None and o.bet_id == t.bet_id else t.bet_id
    ref = t.reference_transaction_id
    ref = o.reference if o is not None and o.reference == ref else ref
    return _Theirs(t.kind, t.amount, _intern(t.currency), _intern(t.table_id),
                   _intern(t.round_id), bet, ref, t.recorded_at, t.status,
                   t.operator_transaction_id)


def _request_of(o: _Ours) -> tuple[object, ...]:
    return (o.kind, o.amount, o.currency, o.table_id, o.round_id, o.bet_id, o.reference)


def signed(kind: CallKind, amount: int) -> int:
    """What a debit or credit moves in the player's favour (a rollback: nothing of its own;
    it cancels what it references)."""
    return -amount if kind == "debit" else amount if kind == "credit" else 0


@dataclass
class _Window:
    since: datetime | None
    until: datetime | None
    margin: timedelta

    def near(self, at: datetime) -> bool:
        """Within the window or its margins: kept."""
        return ((self.since is None or at >= self.since - self.margin)
                and (self.until is None or at < self.until + self.margin))

    def past(self, at: datetime) -> bool:
        return self.until is not None and at >= self.until + self.margin

    def inside(self, at: datetime) -> bool:
        return ((self.since is None or at >= self.since)
                and (self.until is None or at < self.until))


class _Reconciler:
    def __init__(self, window: _Window, player: str | None) -> None:
        self.window = window
        self.player = player
        self.ours: dict[Key, _Ours] = {}
        self.theirs: dict[Key, _Theirs] = {}
        self.their_duplicates: list[tuple[Key, _Theirs]] = []
        self.differences: list[Difference] = []
        self.calls_read = 0
        self.operator_read = 0

    # ------------------------------------------------------------ reading

    def read_calls(self, calls: Iterable[OperatorCallRecord | Unreadable]) -> None:
        for record in calls:
            self.calls_read += 1
            if isinstance(record, Unreadable):
                if record.at is None or self.window.near(record.at):
                    self.differences.append(Difference(
                        name="unreadable_record", detail=f"{record.where}: {record.error}"))
                continue
            request = record.request
            if self.player is not None and request.player_id != self.player:
                continue
            key = (_intern(request.player_id), request.transaction_id)
            at = request.requested_at
            if not self.window.near(at):
                late_rollback = (self.window.past(at) and request.kind == "rollback"
                                 and (request.player_id, request.reference_transaction_id or "")
                                 in self.ours)
                if not late_rollback:
                    continue
            self._keep_ours(key, _ours(key, record))

    def _keep_ours(self, key: Key, new: _Ours) -> None:
        old = self.ours.get(key)
        if old is None:
            self.ours[key] = new
            return
        if _request_of(old) != _request_of(new) or (
                old.outcome != new.outcome and "no_answer" not in (old.outcome, new.outcome)):
            self.differences.append(Difference(
                name="conflicting_records", player_id=key[0], transaction_id=key[1],
                croupier=f"{old.outcome} {old.kind} {old.amount} {old.currency}",
                operator=None, transaction_ids=[key[1]],
                detail=f"recorded again as {new.outcome} {new.kind} {new.amount} "
                       f"{new.currency} (round {new.round_id}); the ok one is counted"))
        if new.outcome == "ok" or old.outcome == "no_answer":
            self.ours[key] = new

    def read_operator(self, operator: Iterable[OperatorTransaction]) -> None:
        for t in operator:
            self.operator_read += 1
            if self.window.past(t.recorded_at):
                break  # oldest first: nothing further is near the window
            if self.player is not None and t.player_id != self.player:
                continue
            if not self.window.near(t.recorded_at):
                continue
            key = (_intern(t.player_id), t.transaction_id)
            o = self.ours.get(key)
            if o is not None:
                key = o.key
            if key in self.theirs:
                self.their_duplicates.append((key, _theirs(t, o)))
                self.differences.append(Difference(
                    name="duplicate_at_operator", player_id=key[0], transaction_id=key[1],
                    round_id=t.round_id, transaction_ids=[key[1]],
                    detail=f"reported again as operator transaction "
                           f"{t.operator_transaction_id} ({t.kind} {t.amount} {t.currency})"))
                continue
            self.theirs[key] = _theirs(t, o)

    def mark_rollbacks(self) -> None:
        for (player, _), o in self.ours.items():
            if o.kind != "rollback" or o.reference is None:
                continue
            target = self.ours.get((player, o.reference))
            if target is None:
                continue
            if o.outcome == "ok":
                target.rolled_back = target.rollback_done = True
            elif o.outcome == "refused" and o.error_code == NOT_FOUND:
                target.rollback_done = True
                # croupier's ledger undid it (a refund, a reversal): a transaction the
                # operator confirmed must not stand there, whatever "not found" said
                target.rolled_back = target.rolled_back or target.outcome == "ok"

    # ------------------------------------------------------------ comparing

    def time_of(self, key: Key) -> datetime:
        o = self.ours.get(key)
        if o is not None:
            return o.at
        return self.theirs[key].at

    def in_scope(self) -> Iterator[Key]:
        for key, o in self.ours.items():
            if self.window.inside(o.at):
                yield key
        for key, t in self.theirs.items():
            if key not in self.ours and self.window.inside(t.at):
                yield key

    def compare(self, key: Key, missing: dict[str, list[Key]],
                unknown: dict[str, list[Key]]) -> None:
        """Name what differs about one transaction in the window (a transaction only one
        side has waits in `missing` or `unknown` until players are paired)."""
        o, t = self.ours.get(key), self.theirs.get(key)
        player, tx = key
        if o is None:
            unknown.setdefault(tx, []).append(key)
            return

        def named(name: DifferenceName, croupier: str | int | None,
                  operator: str | int | None, detail: str) -> None:
            self.differences.append(Difference(
                name=name, player_id=player, transaction_id=tx, table_id=o.table_id,
                round_id=o.round_id, currency=o.currency, croupier=croupier,
                operator=operator, transaction_ids=[tx], detail=detail))

        what = f"{o.kind} of {o.amount} {o.currency}"
        if o.outcome == "refused":
            if t is not None:
                named("refused_but_applied", f"refused {o.error_code}", t.status,
                      f"{what}: operator transaction {t.operator_transaction_id}")
            elif o.kind != "debit" and not (o.kind == "rollback" and o.error_code == NOT_FOUND):
                named("refused", f"refused {o.error_code}", "absent",
                      f"a {what} the operator refused")
            return
        if o.outcome == "no_answer" and not (o.kind == "debit" and o.rollback_done):
            named("owed", "no_answer", t.status if t else "absent",
                  f"a {what} with no answer: its rollback rollback:{tx} is owed"
                  if o.kind == "debit" else f"a {what} with no answer: still owed")
            if t is not None:
                self._compare_fields(player, o, t, named)
            return
        if t is None:
            if o.outcome == "ok":
                missing.setdefault(tx, []).append(key)
            return
        self._compare_fields(player, o, t, named)
        standing = not o.rolled_back if o.outcome == "ok" else not o.rollback_done
        if t.status == "applied" and not standing and o.kind != "rollback":
            named("standing_at_operator", "rolled_back", "applied",
                  f"croupier rolled back this {what} (rollback:{tx}); the operator "
                  f"still holds it")
        elif t.status == "rolled_back" and standing:
            named("rolled_back_at_operator", "standing", "rolled_back",
                  f"the operator rolled back this {what}; croupier has no ok rollback "
                  f"of it (one may be in flight)")

    def _unknown_rollback(self, player: str, t: _Theirs) -> bool:
        """The operator's rollback of a transaction it never had: reported with amount 0,
        whatever croupier asked (an operator answering "success" for unknown rollbacks)."""
        return (t.kind == "rollback" and t.amount == 0 and t.reference is not None
                and (player, t.reference) not in self.theirs)

    def _compare_fields(self, player: str, o: _Ours, t: _Theirs,
                        named: Callable[[DifferenceName, str | int | None, str | int | None,
                                         str], None]) -> None:
        checks: list[tuple[DifferenceName, str, str | int | None, str | int | None]] = [
            ("kind_mismatch", "kind", o.kind, t.kind),
            ("amount_mismatch", "amount", o.amount, t.amount),
            ("currency_mismatch", "currency", o.currency, t.currency),
            ("detail_mismatch", "table", o.table_id, t.table_id),
            ("detail_mismatch", "round", o.round_id, t.round_id),
            ("detail_mismatch", "bet", o.bet_id, t.bet_id),
        ]
        # what a rollback undoes is its meaning; a credit's debit (or any reference the
        # operator keeps for a debit or credit) is compared where the operator reports one
        if t.kind == "rollback" or t.reference is not None:
            checks.append(("detail_mismatch", "reference", o.reference, t.reference))
        for name, what, ours, theirs in checks:
            if ours != theirs and not (what == "amount" and self._unknown_rollback(player, t)):
                named(name, ours, theirs,
                      f"{what} differs (operator transaction {t.operator_transaction_id})")

    def pair_players(self, missing: dict[str, list[Key]], unknown: dict[str, list[Key]]) -> None:
        """A transaction croupier has under one player and the operator under another is
        one difference (player_mismatch), not a missing one and an unknown one."""
        for tx, ours_keys in missing.items():
            theirs_keys = unknown.get(tx, [])
            if len(ours_keys) == 1 and len(theirs_keys) == 1:
                o, t = self.ours[ours_keys[0]], self.theirs[theirs_keys[0]]
                self.differences.append(Difference(
                    name="player_mismatch", transaction_id=tx, table_id=o.table_id,
                    round_id=o.round_id, croupier=ours_keys[0][0], operator=theirs_keys[0][0],
                    transaction_ids=[tx], detail=f"{o.kind} {o.amount} {o.currency}"))
                del unknown[tx]
                continue
            for player, _ in ours_keys:
                o = self.ours[(player, tx)]
                self.differences.append(Difference(
                    name="missing_at_operator", player_id=player, transaction_id=tx,
                    table_id=o.table_id, round_id=o.round_id, croupier="ok",
                    operator="absent", transaction_ids=[tx],
                    detail=f"{o.kind} of {o.amount} {o.currency} croupier was answered ok"))
        for tx, keys in unknown.items():
            for player, _ in keys:
                t = self.theirs[(player, tx)]
                self.differences.append(Difference(
                    name="unknown_to_croupier", player_id=player, transaction_id=tx,
                    table_id=t.table_id, round_id=t.round_id, croupier="absent",
                    operator=t.status, transaction_ids=[tx],
                    detail=f"{t.kind} of {t.amount} {t.currency}, operator transaction "
                           f"{t.operator_transaction_id}, no ok record at croupier"))


@dataclass
class _Net:
    croupier: int = 0
    operator: int = 0
    transactions: int = 0
    ids: list[str] | None = None
    more: int = 0

    def add(self, croupier: int, operator: int, differs: bool, tx: str) -> None:
        self.croupier += croupier
        self.operator += operator
        self.transactions += 1
        if differs:
            if self.ids is None:
                self.ids = []
            if len(self.ids) < IDS_PER_DIFFERENCE:
                self.ids.append(tx)
            else:
                self.more += 1


class _Nets:
    """The nets of rounds, players and days, each per currency."""

    def __init__(self) -> None:
        self.rounds: dict[tuple[str, str, str], _Net] = {}
        self.players: dict[tuple[str, str], _Net] = {}
        self.days: dict[tuple[date, str], _Net] = {}

    def add(self, key: Key, day: date, o: _Ours | None, t: _Theirs | None) -> None:
        """One transaction's part: croupier's where croupier says it was (its round and
        currency), the operator's where the operator says."""
        ours = signed(o.kind, o.amount) if o and o.outcome == "ok" and not o.rolled_back else 0
        theirs = signed(t.kind, t.amount) if t and t.status == "applied" else 0
        parts: dict[tuple[str, str, str], list[int]] = {}
        if o is not None:
            parts.setdefault((o.table_id, o.round_id, o.currency), [0, 0])[0] += ours
        if t is not None:
            parts.setdefault((t.table_id, t.round_id, t.currency), [0, 0])[1] += theirs
        for (table, round_id, currency), (c, op) in parts.items():
            differs = c != op
            for net in (self.rounds.setdefault((table, round_id, currency), _Net()),
                        self.players.setdefault((key[0], currency), _Net()),
                        self.days.setdefault((day, currency), _Net())):
                net.add(c, op, differs, key[1])

    def differences(self) -> list[Difference]:
        found: list[Difference] = []

        def named(name: DifferenceName, net: _Net, **where: str | date) -> None:
            if net.croupier == net.operator:
                return
            more = f"; {net.more} more transactions differ" if net.more else ""
            found.append(Difference.model_validate({
                "name": name, **where, "croupier": net.croupier, "operator": net.operator,
                "transaction_ids": net.ids or [],
                "detail": f"net over {net.transactions} transactions differs by "
                          f"{net.operator - net.croupier} (operator minus croupier){more}"}))
        for (table, round_id, currency), net in sorted(self.rounds.items()):
            named("round_net_mismatch", net, table_id=table, round_id=round_id,
                  currency=currency)
        for (player, currency), net in sorted(self.players.items()):
            named("player_net_mismatch", net, player_id=player, currency=currency)
        for (day, currency), net in sorted(self.days.items()):
            named("day_net_mismatch", net, day=day, currency=currency)
        return found


def reconcile(calls: Iterable[OperatorCallRecord | Unreadable],
              operator: Iterable[OperatorTransaction], *,
              since: datetime | None = None, until: datetime | None = None,
              player: str | None = None,
              margin: timedelta = timedelta(hours=1)) -> ReconcileReport:
    """Compare croupier's records of its calls with the operator's transactions over the
    window [since, until) (None: unbounded), for one player or all; name every difference.

    `calls` is read first, to its end; then `operator`, oldest first, until past the
    window's far margin. Calls still pending (no final record yet) are not in `calls`:
    run it once the window is older than the retries take (the CLI keeps a settle time)."""
    if since is not None and until is not None and until <= since:
        raise ValueError(f"the window is empty: to {until.isoformat()} is not after "
                         f"from {since.isoformat()}")
    r = _Reconciler(_Window(since, until, margin), player)
    r.read_calls(calls)
    r.read_operator(operator)
    r.mark_rollbacks()
    nets = _Nets()
    missing: dict[str, list[Key]] = {}
    unknown: dict[str, list[Key]] = {}
    compared = 0
    for key in r.in_scope():
        compared += 1
        r.compare(key, missing, unknown)
        o, t = r.ours.get(key), r.theirs.get(key)
        nets.add(key, r.time_of(key).astimezone(UTC).date(), o, t)
    for key, t in r.their_duplicates:  # what a duplicate moved counts at the operator too
        if r.window.inside(r.time_of(key)):
            nets.add(key, r.time_of(key).astimezone(UTC).date(), None, t)
    r.pair_players(missing, unknown)
    per_transaction = sorted(r.differences, key=lambda d: (d.player_id or "",
                                                           d.transaction_id or "", d.name))
    days = [NetRow(day=day, currency=currency, croupier=net.croupier, operator=net.operator,
                   transactions=net.transactions)
            for (day, currency), net in sorted(nets.days.items())]
    return ReconcileReport(
        since=since, until=until, player=player, margin_seconds=int(margin.total_seconds()),
        calls_read=r.calls_read, operator_read=r.operator_read, transactions=compared,
        out_of_scope=len(r.ours) + sum(k not in r.ours for k in r.theirs) - compared,
        rounds=len(nets.rounds), players=len(nets.players), days=days,
        differences=per_transaction + nets.differences())

