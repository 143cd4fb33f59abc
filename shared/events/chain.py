"""Verify a table's hash chain and name the exact `seq` where it breaks."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from croupier.shared.events.canonical import GENESIS_HASH
from croupier.shared.events.table import TableEventBase


@dataclass(frozen=True)
class ChainBreak:
    seq: int
    problem: str

    def __str__(self) -> str:
        return f"chain breaks at seq {self.seq}: {self.problem}"


def verify_chain(events: Iterable[TableEventBase], prev_hash: str | None = None,
                 prev_seq: int | None = None) -> list[ChainBreak]:
    """Every break in a run of one table's events, in order.

    With no `prev_hash` the run must start at the table's genesis (seq 1); given
    the event before the run, the run must continue it.
    """
    breaks: list[ChainBreak] = []
    expected_prev = prev_hash
    expected_seq = None if prev_seq is None else prev_seq + 1
    for event in events:
        if expected_seq is None:
            expected_seq = event.seq
            if prev_hash is None and event.seq == 1:
                expected_prev = GENESIS_HASH
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
        expected_prev = event.hash
        expected_seq = event.seq + 1
    return breaks
