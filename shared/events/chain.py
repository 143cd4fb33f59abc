"""Verify a table's hash chain and name the exact `seq` where it breaks.

Given events already authenticated (their HMAC verified: `authenticated=True`), a signed
event that forks off the chain, or is chained on such an event, is void, a lost race
(`event_auth.lost_race`, the rule every reader uses), not a break: it is set aside and the
chain goes on from the last valid event (docs/decisions/dealer-fencing.md). A gap (an
event missing, the next one on no void event) is a break, as ever. A valid event's record
read again (the same seq and hash: published again by its writer's outbox after a
recovery) is `repeated`: neither a break nor a void event."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from shared.events.canonical import GENESIS_HASH
from shared.events.event_auth import ChainHead, void_in_log
from shared.events.table import TableEventBase


@dataclass(frozen=True)
class ChainBreak:
    seq: int
    problem: str

    def __str__(self) -> str:
        return f"chain breaks at seq {self.seq}: {self.problem}"


@dataclass
class FollowedChain:
    """A run of one table's events split by the chain: `valid` (in order, what every reader
    applies), `void` (lost races, skipped) and `breaks` (tampering or damage)."""

    valid: list[TableEventBase] = field(default_factory=list)
    void: list[TableEventBase] = field(default_factory=list)
    breaks: list[ChainBreak] = field(default_factory=list)
    # records of a valid event read again (the same seq and hash: its writer published it
    # again, as dealer-event's outbox does after a recovery): neither news nor a race
    repeated: list[TableEventBase] = field(default_factory=list)


def verify_chain(events: Iterable[TableEventBase], prev_hash: str | None = None,
                 prev_seq: int | None = None, authenticated: bool = False
                 ) -> list[ChainBreak]:
    """Every break in a run of one table's events, in order (`follow_chain`'s breaks)."""
    return follow_chain(events, prev_hash, prev_seq, authenticated).breaks


def follow_chain(events: Iterable[TableEventBase], prev_hash: str | None = None,
                 prev_seq: int | None = None, authenticated: bool = False
                 ) -> FollowedChain:
    """The run's valid events, void events and breaks, in order.

    With no `prev_hash` the run must start at the table's genesis (seq 1); given
    the event before the run, the run must continue it. `authenticated`: the caller
    verified every event's HMAC, so a signed event that does not continue the chain is a
    lost race (void); without it (no key, or unsigned events) it is a break.
    """
    out = FollowedChain()
    breaks = out.breaks
    expected_prev = prev_hash
    expected_seq = None if prev_seq is None else prev_seq + 1
    tips: tuple[str, ...] = ()  # the void tips (event_auth.ChainHead.after_void)
    valid_at: dict[int, str] = {}  # seq -> hash of the run's valid events
    for event in events:
        if valid_at.get(event.seq) == event.hash == event.computed_hash():
            out.repeated.append(event)
            continue
        if expected_seq is None:
            expected_seq = event.seq
            if prev_hash is None and event.seq == 1:
                expected_prev = GENESIS_HASH
        head = None if expected_prev is None else ChainHead(expected_seq - 1, expected_prev,
                                                            tips)
        if event.computed_hash() == event.hash and void_in_log(event, head, authenticated):
            out.void.append(event)
            assert head is not None  # void_in_log needs a head
            tips = head.after_void(event).void_tips
            continue
        if event.seq > expected_seq:
            missing = (f"seq {expected_seq} missing" if event.seq == expected_seq + 1
                       else f"seq {expected_seq}..{event.seq - 1} missing")
            breaks.append(ChainBreak(event.seq, f"{missing} (dropped or out of order)"))
        elif event.seq < expected_seq:
            breaks.append(ChainBreak(event.seq, f"out of order or repeated: expected seq "
                                                f"{expected_seq}"))
        if event.computed_hash() != event.hash:
            breaks.append(ChainBreak(event.seq, "content does not match its hash (altered)"))
        if expected_prev is not None and event.prev_hash != expected_prev:
            breaks.append(ChainBreak(event.seq, "prev_hash does not match the previous event"))
        out.valid.append(event)
        valid_at[event.seq] = event.hash
        expected_prev = event.hash
        expected_seq = event.seq + 1
    return out
