"""Did a batch's table events land as chained? The writer's side of the zombie fence.

Pure. After the acks, dealer-event knows where each of its `table.events` records landed
(partition, offset) and, per partition, the end offset its tables' states reflect (the
rebuild's end, moved on by every batch that landed clean). If a partition's records landed
exactly there, one after the other, no other record came in between: every event
continues the chain it was sealed on, so it is valid and stays valid. Otherwise another
writer (a zombie, or the new owner if this worker is the zombie) wrote to the partition
meanwhile, and the partition is read again from the known end through this batch's last
record and folded with the readers' rule (`event_auth.lost_race`): an event that does not
continue its table's head is void, whoever wrote it. This batch's void events, and the
tables another writer moved, tell the runtime which answers it must not give
(docs/decisions/dealer-fencing.md).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from shared.events.canonical import GENESIS_HASH
from shared.events.event_auth import ChainHead, auth_problem, chain_problem, void_in_log
from shared.events.table import parse_table_event

log = logging.getLogger(__name__)


def landed_clean(known_end: int | None, offsets: Sequence[int]) -> bool:
    """The partition's records of one batch landed at its known end, contiguous, in the
    order sent: nothing else was written in between."""
    return known_end is not None and list(offsets) == list(
        range(known_end, known_end + len(offsets)))


@dataclass
class Refold:
    """A partition read again after a batch landed out of place."""

    valid: set[str] = field(default_factory=set)  # hashes of the valid events read
    moved: set[str] = field(default_factory=set)  # tables another writer's valid event moved
    # each table's head after the records (its void tips moved by the void ones: the
    # rebuild's fold, so the writer's states keep the tips a rebuild would give them)
    heads: dict[str, ChainHead] = field(default_factory=dict)


def refold(heads: Mapping[str, ChainHead], records: Iterable[tuple[int, bytes]],
           ours: set[int], key: bytes | None, accept_unsigned: bool = False) -> Refold:
    """Fold `(offset, value)` records of one partition of `table.events` from the end the
    writer's `heads` reflect (a table not in `heads` starts at genesis). An event that
    continues its table's head is valid and moves it; any other is void (a lost race) and
    moves nothing. With `key`, a record that is not dealer-event's (forged, altered) takes
    no part, as in every reader; an unreadable one neither."""
    out = Refold()
    now = dict(heads)
    for offset, raw in records:
        try:
            event = parse_table_event(raw)
        except ValueError:
            log.error("table.events offset %s unreadable while checking a batch landed; "
                      "skipped", offset)
            continue
        if key is not None and auth_problem(event, key, accept_unsigned) is not None:
            continue
        head = now.get(event.table_id, ChainHead(0, GENESIS_HASH))
        if chain_problem(event, head) is not None:  # sealed on a head the log moved past
            if key is not None and void_in_log(event, head, authenticated=True):
                now[event.table_id] = head.after_void(event)  # void: a lost race
            elif key is not None and offset not in ours:
                # another writer's event the readers do not take as void (a gap): the
                # states are rebuilt from the log, whose fold flags it
                out.moved.add(event.table_id)
            continue
        now[event.table_id] = ChainHead(event.seq, event.hash, head.void_tips)
        out.valid.add(event.hash)
        if offset not in ours:
            out.moved.add(event.table_id)
    out.heads = now
    return out
