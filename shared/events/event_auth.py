"""Is a `table.events` record dealer-event's, and does it continue its table's chain?

Pure. Every consumer of `table.events` (game-evaluation, bet-settlement, the wallet's
view; replay and rebuild for the operator) asks `verify_next` before it acts on an event:

1. **authentic**: its content matches its hash, and its `auth` is the HMAC of that hash
   under dealer-event's table-events key. The hash chain alone has no secret (anyone who
   can produce to the topic and read the head hash can append a valid-looking event);
   the HMAC has. An event with no `auth` (written before events were authenticated) is
   accepted only when the consumer is told to accept legacy unsigned events
   (`CROUPIER_TABLE_EVENTS_ACCEPT_UNSIGNED`; docs/decisions/table-event-auth.md).
2. **in order**: its seq is the last one's + 1 and its prev_hash the last one's hash. An
   authentic event at or below the last seq is a redelivery: skipped, never refused.
3. **void, not refused**: a signed, authentic event that forks at the head (the head's
   seq with another hash, or the next seq on another prev_hash) is a **lost race**
   (`"void"`): two dealer-event workers sealed the same seq on the same head (a zombie
   that lost its partitions and has not noticed yet), the log's first one won, and
   everything chained on the loser is void: the reader keeps the hashes of the latest
   void events per table (`ChainHead.void_tips`, at most VOID_TIPS, one per zombie chain)
   and an event chained on one is void whatever its seq. Every reader skips a void event
   and counts it, never flags. (dealer-event itself cannot write one since issue 29: its
   own log `dealer.log` fences a zombie before anything is published.) An authentic
   event past the next seq on no void tip is a **gap** (an event missing from the log):
   refused, the table flagged. An unsigned event (accepted only with `accept_unsigned`)
   proves nothing about its writer, so a non-chaining one stays a break (refused), as
   before (docs/decisions/dealer-fencing.md). `lost_race` is the one rule; `verify_next` and
   `chain.follow_chain` use it.

A consumer that has never seen the table (no head) takes the first authentic event as
its anchor: authenticity, not position, is what an attacker cannot fake.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from shared.events.canonical import same_digest
from shared.events.table import TableEventBase, event_auth


class TableEventRefused(Exception):
    """An event a consumer must not act on: dead-letter it and flag its table."""

    def __init__(self, table_id: str, seq: int, problem: str) -> None:
        super().__init__(f"table {table_id}: event seq {seq} refused: {problem}")
        self.table_id, self.seq, self.problem = table_id, seq, problem


VOID_TIPS = 8  # per table: the void tips a reader keeps (docs/decisions/dealer-fencing.md)


@dataclass(frozen=True)
class ChainHead:
    """The last valid event of a table, and `void_tips`: the hashes of the latest events
    the reader judged void there, oldest first (at most VOID_TIPS; one per zombie chain,
    since a chain's next event replaces its tip). An authentic event chained on a tip is
    void whatever its seq (a zombie's chain hanging off its lost fork)."""

    seq: int
    hash: str
    void_tips: tuple[str, ...] = ()

    def after_void(self, event: TableEventBase) -> ChainHead:
        """The head once `event` was judged void: its tip replaces the one it is chained
        on, or is added (the oldest evicted beyond VOID_TIPS: that zombie chain's next
        event is then a gap, flagged, never silently void). An event below the head's
        seq on no tip adds none: a chain there can only come back through a fork at the
        head (seq <= head + 1), void without a tip."""
        tips = self.void_tips
        if event.hash in tips:
            return self
        if event.prev_hash in tips:
            tips = tuple(t for t in tips if t != event.prev_hash)
        elif event.seq < self.seq:
            return self
        return replace(self, void_tips=(*tips, event.hash)[-VOID_TIPS:])


def auth_problem(event: TableEventBase, key: bytes, accept_unsigned: bool = False
                 ) -> str | None:
    """Why `event` is not dealer-event's (None: it is)."""
    if event.computed_hash() != event.hash:
        return "altered: its content does not match its hash"
    if event.auth is None:
        return None if accept_unsigned else \
            "unsigned: no auth (a legacy unsigned event, and legacy events are not accepted)"
    if not same_digest(event.auth, event_auth(key, event.hash)):
        return "forged: its auth is not dealer-event's HMAC of its hash"
    return None


def chain_problem(event: TableEventBase, head: ChainHead | None) -> str | None:
    """Why `event` does not continue the chain after `head` (None: it does, or no head)."""
    if head is None:
        return None
    if event.seq != head.seq + 1:
        return f"out of order: seq {event.seq} after seq {head.seq}"
    if event.prev_hash != head.hash:
        return (f"prev_hash {event.prev_hash[:12]}… is not the hash of seq {head.seq} "
                f"({head.hash[:12]}…)")
    return None


Verdict = Literal["apply", "seen", "void"]

VOID = "void: lost race"  # what a reader logs and counts for a void event


def lost_race(event: TableEventBase, head: ChainHead | None, authenticated: bool) -> bool:
    """The one rule: `event`, already found authentic (`authenticated`: its HMAC verified;
    False for an unsigned event taken under `accept_unsigned`, which proves no writer), is
    void when it does not continue `head` and either forks at it (the head's seq with
    another hash, or the next seq on another prev_hash: it was sealed by a writer that lost
    the race for its seq) or is chained on one of the head's void tips (the rest of such a
    writer's chain, whatever its seq), or is a tip itself read again. An event past the
    next seq on no void tip is not a lost race but a gap (an event missing from the log): a
    break, refused as ever. A reader with no head anchors on the event instead; an event
    at the head's seq with the head's hash is a redelivery, not void."""
    if not authenticated or event.auth is None or head is None:
        return False
    if event.seq == head.seq + 1 and event.prev_hash == head.hash:
        return False  # it continues the head
    if event.prev_hash in head.void_tips or event.hash in head.void_tips:
        return True  # chained on a void event, or one read again (a record written twice)
    if event.seq == head.seq:
        return event.hash != head.hash
    return event.seq == head.seq + 1


def void_in_log(event: TableEventBase, head: ChainHead | None, authenticated: bool) -> bool:
    """`lost_race` for a fold over a partition read in order from the table's start (a
    rebuild, a replay, the operator's chain check): there, an authentic signed event below
    the head's seq is not a redelivery the reader cannot place but a second record of a
    seq already valid, so it takes no part either (a lost race, or a record written
    twice: its first copy already counted)."""
    if lost_race(event, head, authenticated):
        return True
    return (authenticated and event.auth is not None and head is not None
            and event.seq < head.seq)


def verify_next(event: TableEventBase, head: ChainHead | None, key: bytes, *,
                accept_unsigned: bool = False, check_order: bool = True) -> Verdict:
    """"apply" (authentic and next in the chain), "seen" (authentic, at or below the last
    seq: a redelivery), "void" (authentic, signed, forking at the head or chained on one of
    its void tips: a lost race, skipped and counted, never refused), or raise
    TableEventRefused naming the problem (forged, altered, unsigned when not accepted, an
    unsigned event out of order, or an authentic gap: past the next seq on no void tip).
    `check_order=False` (a flagged table, followed only to see the operator reopen it)
    checks authenticity alone."""
    problem = auth_problem(event, key, accept_unsigned)
    if problem is not None:
        raise TableEventRefused(event.table_id, event.seq, problem)
    if lost_race(event, head, authenticated=True) and (
            check_order or (head is not None and event.seq <= head.seq)):
        return "void"
    if head is not None and event.seq <= head.seq:
        return "seen"
    if check_order and (problem := chain_problem(event, head)) is not None:
        raise TableEventRefused(event.table_id, event.seq, problem)
    return "apply"


@dataclass(frozen=True)
class TableWatch:
    """What a consumer keeps per table to verify its events: the last authentic event it
    applied, and why the table is flagged (None: it is not)."""

    head: ChainHead | None = None
    flagged: str | None = None

    @property
    def void_tips(self) -> tuple[str, ...]:
        return self.head.void_tips if self.head is not None else ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"seq": self.head.seq if self.head else None,
                               "hash": self.head.hash if self.head else None,
                               "flagged": self.flagged}
        if self.head is not None and self.head.void_tips:  # absent in older records
            out["void_tips"] = list(self.head.void_tips)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> TableWatch:
        if not data:
            return cls()
        head = ChainHead(data["seq"], data["hash"], tuple(data.get("void_tips") or ())) \
            if data.get("seq") is not None else None
        return cls(head, data.get("flagged"))


class TableFlagged(Exception):
    """An event refused: dead-letter it and keep `watch` (the table, now flagged)."""

    def __init__(self, watch: TableWatch, refused: TableEventRefused) -> None:
        super().__init__(str(refused))
        self.watch, self.refused = watch, refused


def advance(watch: TableWatch, event: TableEventBase, key: bytes,
            accept_unsigned: bool = False) -> tuple[TableWatch, Verdict]:
    """The table's watch after `event` and whether to act on it ("apply") or skip it as
    a redelivery ("seen") or a lost race ("void": the head does not move, the event becomes
    a void tip); raise TableFlagged when it is refused. A flagged table is still
    followed (authenticity alone is checked, the chain re-anchors on each authentic
    event) so the consumer sees the supervisor reopen it: an authentic `table_reopened`
    clears the flag."""
    try:
        verdict = verify_next(event, watch.head, key, accept_unsigned=accept_unsigned,
                              check_order=watch.flagged is None)
    except TableEventRefused as refused:
        raise TableFlagged(TableWatch(watch.head, watch.flagged or str(refused)),
                           refused) from refused
    if verdict == "void" and watch.head is not None:
        return TableWatch(watch.head.after_void(event), watch.flagged), verdict
    if verdict != "apply":
        return watch, verdict
    flagged = None if event.type == "table_reopened" else watch.flagged
    tips = watch.head.void_tips if watch.head is not None else ()
    return TableWatch(ChainHead(event.seq, event.hash, tips), flagged), "apply"
