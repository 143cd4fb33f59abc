"""Rebuild the tables' states from the log before dealer-event takes any input.

A worker rebuilds the tables of the partitions assigned to it, and again after every
rebalance (see runtime.py).

`table.events` gives the chain head, the shoe, the round and the applied input
ids; `dealer.rejections` gives the input ids already refused on the table's
rules. So an input re-read after a crash is answered from what was written and
never decided a second time: no gap, no duplicate, no changed verdict.

Both also say where the decisions stopped: each record names the `dealer.inputs` record
that caused it and how far that input's partition was decided before (`InputPosition`).
The fold of those is the worker's checkpoint per input partition (`InputCheckpoint`):
the stream resumes after it, whatever the consumer group committed
(docs/decisions/dealer-checkpoints.md).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from services.dealer_event.refusals import NOT_A_DECISION
from services.dealer_event.state import TableState, fold_into
from services.infra.log_reader import read_to_end
from shared.events.event_auth import VOID, ChainHead, auth_problem, void_in_log
from shared.events.rejections import InputRefused
from shared.events.sources import InputPosition
from shared.events.table import parse_table_event
from shared.topics import DEALER_REJECTIONS_TOPIC, TABLE_EVENTS_TOPIC

log = logging.getLogger(__name__)


@dataclass
class InputCheckpoint:
    """What dealer-event's records say of one partition of `dealer.inputs`: every input up
    to `through` was decided and its records acknowledged; past it, the inputs at
    `decided` were decided too (their records are in the log; a crash may have cut the
    batch that wrote them before its later inputs' records were). -1: nothing known (records
    written before inputs were named: the group's committed offset is the fallback)."""

    through: int = -1
    decided: set[int] = field(default_factory=set)

    def note(self, ref: InputPosition) -> None:
        if ref.decided_through > self.through:
            self.through = ref.decided_through
            self.decided = {o for o in self.decided if o > self.through}
        if ref.offset > self.through:
            self.decided.add(ref.offset)

    def applied(self, offset: int) -> bool:
        """The log holds the decision on the input at `offset`: it is not decided again."""
        return offset <= self.through or offset in self.decided

    def resume_at(self) -> int | None:
        """The first offset whose decision the log does not vouch for (None: unknown)."""
        return self.through + 1 if self.through >= 0 else None

    def advance(self, handled: Iterable[int]) -> None:
        """A batch that handled these offsets (in log order, after `through`: the reader
        hands on every offset) is acknowledged: they are decided."""
        top = max(handled, default=-1)
        if top > self.through:
            self.through = top
            self.decided = {o for o in self.decided if o > top}


Checkpoints = dict[int, InputCheckpoint]  # per partition of dealer.inputs


@dataclass
class Rebuilt:
    """What the rebuild folded: the tables' states and the input checkpoints."""

    tables: dict[str, TableState]
    inputs: Checkpoints = field(default_factory=dict)
    # per partition of table.events, the offset the fold ended at: the next record's
    events_end: dict[int, int] = field(default_factory=dict)


def _note(inputs: Checkpoints | None, ref: InputPosition | None) -> None:
    if inputs is not None and ref is not None:
        inputs.setdefault(ref.partition, InputCheckpoint()).note(ref)


def fold_events(states: dict[str, TableState], records, events_key: bytes | None = None,
                accept_unsigned: bool = False, inputs: Checkpoints | None = None) -> None:
    """Fold each table's chain from `(key, value)` records. A table whose log does not
    continue its chain, or holds a record that cannot be read or folded, is put out of
    play (its inputs are refused `chain_corrupt` until an operator has looked); the other
    tables play on. With `events_key`, an event that is not dealer-event's own (a forged
    or altered record, with no valid HMAC) is skipped and logged: it was never part of
    the chain, and the genuine events around it continue the chain as written; a signed
    authentic event that does not continue the chain is void (a lost race: another
    worker sealed that seq first, docs/decisions/dealer-fencing.md): skipped, the table
    plays on. Each valid event's input is noted in `inputs` (a forgery or a void event
    moves no checkpoint)."""
    for key, raw in records:
        try:
            event = parse_table_event(raw)
        except Exception as error:  # noqa: BLE001 - one table out of play, not the service
            _out_of_play(states, _table_of(key), f"unreadable record: {_brief(error)}")
            continue
        if events_key is not None and (
                problem := auth_problem(event, events_key, accept_unsigned)) is not None:
            log.error("FORGED TABLE EVENT: table %s seq %s skipped by the rebuild: %s",
                      event.table_id, event.seq, problem)
            continue
        state = states.setdefault(event.table_id, TableState(event.table_id))
        head = ChainHead(state.seq, state.head_hash, state.void_tips)
        if not state.corrupt and void_in_log(event, head, authenticated=events_key is not None):
            state.void_tips = head.after_void(event).void_tips
            log.warning("%s: table %s seq %s (%s) does not continue seq %s; skipped by the "
                        "rebuild, its input not counted as decided", VOID, event.table_id,
                        event.seq, event.type, state.seq)
            continue
        _note(inputs, event.input_ref)
        if state.corrupt:
            continue
        if event.seq <= state.seq:
            log.warning("table %s: seq %s read again (already at %s); skipped",
                        event.table_id, event.seq, state.seq)
            continue
        if event.seq != state.seq + 1 or event.prev_hash != state.head_hash:
            _out_of_play(states, event.table_id,
                         f"event seq {event.seq} does not continue seq {state.seq} "
                         f"(hash {state.head_hash[:12]}…)")
            continue
        try:
            fold_into(state, event)
        except Exception as error:  # noqa: BLE001 - schema-valid but impossible here
            _out_of_play(states, event.table_id,
                         f"event seq {event.seq} ({event.type}) cannot follow: {_brief(error)}")


def _table_of(key: bytes | None) -> str | None:
    try:
        return key.decode("utf-8") if key else None
    except UnicodeDecodeError:
        return None


def _brief(error: BaseException) -> str:
    return f"{type(error).__name__}: {str(error)[:200]}"


def _out_of_play(states: dict[str, TableState], table_id: str | None, why: str) -> None:
    if table_id is None:
        log.error("table.events holds a record with no readable key (%s); skipped", why)
        return
    state = states.setdefault(table_id, TableState(table_id))
    if not state.corrupt:
        state.corrupt = why
        log.error("TABLE OUT OF PLAY: table %s: %s; run `croupier replay` on its last round "
                  "and repair the log before dealing on", table_id, why)


def fold_rejections(states: dict[str, TableState], raws, inputs: Checkpoints | None = None
                    ) -> None:
    """The input ids refused on the tables' rules; every refusal's input (a decision or
    not) is noted in `inputs`: it was decided, and is not decided again."""
    for raw in raws:
        try:
            refused = InputRefused.model_validate_json(raw)
        except ValueError:
            log.error("unreadable record on dealer.rejections skipped: %r", raw[:200])
            continue
        _note(inputs, refused.input_ref)
        if refused.input_id is None or refused.reason_code in NOT_A_DECISION:
            continue
        state = states.setdefault(refused.table_id, TableState(refused.table_id))
        state.refused_inputs.setdefault(refused.input_id, refused.reason_code)


def rebuild(bootstrap: str, partitions: Iterable[int] | None = None,
            principal: str = "dealer-event", events_key: bytes | None = None,
            accept_unsigned: bool = False) -> Rebuilt:
    """The states of the tables in `partitions` of `table.events` / `dealer.rejections` (the
    partitions of `dealer.inputs` this worker owns: all three topics are keyed by table id
    with one partition count), or of every table when `partitions` is None; and the
    checkpoints of those partitions of `dealer.inputs`."""
    wanted = None if partitions is None else sorted(set(partitions))
    states: dict[str, TableState] = {}
    inputs: Checkpoints = {}
    ends: dict[int, int] = {}
    fold_events(states, ((r.key, r.value) for r in read_to_end(
        bootstrap, TABLE_EVENTS_TOPIC, partitions=wanted, principal=principal, ends_out=ends)),
                events_key, accept_unsigned, inputs)
    fold_rejections(states, (r.value for r in read_to_end(bootstrap, DEALER_REJECTIONS_TOPIC,
                                                          partitions=wanted,
                                                          principal=principal)), inputs)
    if wanted is not None:  # an input keyed under another partition's table: not ours
        inputs = {p: c for p, c in inputs.items() if p in wanted}
    log.info("rebuilt %d table(s) of partition(s) %s from the log; dealer.inputs resumes at "
             "%s", len(states), "all" if wanted is None else wanted,
             {p: c.resume_at() for p, c in sorted(inputs.items())})
    return Rebuilt(states, inputs, ends)
