"""Rebuild the tables' states from the log before dealer-event takes any input.

A worker rebuilds the tables of the partitions assigned to it, and again after every
rebalance (see runtime.py).

`table.events` gives the chain head, the shoe, the round and the applied input
ids; `dealer.rejections` gives the input ids already refused on the table's
rules. So an input re-read after a crash is answered from what was written and
never decided a second time: no gap, no duplicate, no changed verdict.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from croupier.services.dealer_event.refusals import NOT_A_DECISION
from croupier.services.dealer_event.state import TableState, fold_into
from croupier.services.infra.log_reader import read_to_end
from croupier.shared.events.event_auth import auth_problem
from croupier.shared.events.rejections import InputRefused
from croupier.shared.events.table import parse_table_event

log = logging.getLogger(__name__)


def fold_events(states: dict[str, TableState], records, events_key: bytes | None = None,
                accept_unsigned: bool = False) -> None:
    """Fold each table's chain from `(key, value)` records. A table whose log does not
    continue its chain, or holds a record that cannot be read or folded, is put out of
    play (its inputs are refused `chain_corrupt` until an operator has looked); the other
    tables play on. With `events_key`, an event that is not dealer-event's own (a forged
    or altered record, with no valid HMAC) is skipped and logged: it was never part of
    the chain, and the genuine events around it continue the chain as written."""
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


def fold_rejections(states: dict[str, TableState], raws) -> None:
    for raw in raws:
        try:
            refused = InputRefused.model_validate_json(raw)
        except ValueError:
            log.error("unreadable record on dealer.rejections skipped: %r", raw[:200])
            continue
        if refused.input_id is None or refused.reason_code in NOT_A_DECISION:
            continue
        state = states.setdefault(refused.table_id, TableState(refused.table_id))
        state.refused_inputs.setdefault(refused.input_id, refused.reason_code)


def rebuild(bootstrap: str, partitions: Iterable[int] | None = None,
            principal: str = "dealer-event", events_key: bytes | None = None,
            accept_unsigned: bool = False) -> dict[str, TableState]:
    """The states of the tables in `partitions` of `table.events` / `dealer.rejections` (the
    partitions of `dealer.inputs` this worker owns: all three topics are keyed by table id
    with one partition count), or of every table when `partitions` is None."""
    wanted = None if partitions is None else sorted(set(partitions))
    states: dict[str, TableState] = {}
    fold_events(states, ((r.key, r.value) for r in read_to_end(
        bootstrap, "table.events", partitions=wanted, principal=principal)),
                events_key, accept_unsigned)
    fold_rejections(states, (r.value for r in read_to_end(bootstrap, "dealer.rejections",
                                                          partitions=wanted,
                                                          principal=principal)))
    log.info("rebuilt %d table(s) of partition(s) %s from the log", len(states),
             "all" if wanted is None else wanted)
    return states
