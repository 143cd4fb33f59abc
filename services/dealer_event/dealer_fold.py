"""dealer-event's state as the fold of `dealer.log`: one function for live state and
recovery.

An entry writes one key, `t/<table id>` -> the table's `TableState` after the entry's
events are folded in chain order (`state.fold_into`, the table machine's own fold) and,
for a refusal on the table's rules, the input id it refused. Folding an entry over a state
that already holds its events changes nothing (an event at or below the state's seq is
skipped), so a cache can be caught up from any offset it reflects. An event that cannot
follow its table puts that table out of play (`TableState.corrupt`), never the fold. The entry publishes its
events on `table.events` (a `round_corrected` also on `table.corrections`, the index a
replay reads for a round's corrections) and its refusal on `dealer.rejections` (the outbox,
`services.infra.own_log`: lost in a crash, they are published again from the entry;
readers take an event seen again for what it is, and refusals have deterministic ids).

Pure functions: no I/O, no clock.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from services.dealer_event.refusals import NOT_A_DECISION
from services.dealer_event.state import TableState, fold_into, remember_input
from services.infra.own_log import Record, Writes
from shared.events.dealer_log import DealerEntry
from shared.events.table import RoundCorrected
from shared.topics import DEALER_REJECTIONS_TOPIC, TABLE_CORRECTIONS_TOPIC, TABLE_EVENTS_TOPIC

log = logging.getLogger(__name__)
PREFIX = "t/"


def table_key(table_id: str) -> str:
    return f"{PREFIX}{table_id}"


def table_of(kv: Mapping[str, Any], table_id: str) -> TableState:
    """The table's state as the folded state has it (a table never seen: its start). Never
    mutate it: it is the fold's (copy it, as the table machine does)."""
    found: TableState | None = kv.get(table_key(table_id))
    return found if found is not None else TableState(table_id)


def tables_of(kv: Mapping[str, Any]) -> dict[str, TableState]:
    """Every table a folded partition holds, by id."""
    return {key[len(PREFIX):]: state for key, state in kv.items() if key.startswith(PREFIX)}


def decides(entry: DealerEntry) -> bool:
    """The entry moves its table: it seals events, or refuses an input on the table's rules
    (a refusal that says nothing of the input's fact moves nothing)."""
    refused = entry.rejection
    return bool(entry.events) or (refused is not None and refused.input_id is not None
                                  and refused.reason_code not in NOT_A_DECISION)


def _out_of_play(before: TableState, entry: DealerEntry, event: Any, error: Exception
                 ) -> TableState:
    """The table as it was before the entry, out of play: an event of a valid entry that
    cannot follow its table (a profile since removed, a bug) stops that table, never the
    partition's fold (the same in every fold: live, recovery). Its inputs are refused
    `chain_corrupt` until an operator has looked."""
    state = before.copy()
    state.corrupt = (f"dealer.log entry {entry.entry_id}: event seq {event.seq} "
                     f"({event.type}) cannot follow: {type(error).__name__}: "
                     f"{str(error)[:200]}")
    log.error("TABLE OUT OF PLAY: table %s: %s; run `croupier replay` on its last round "
              "and repair before dealing on", entry.table_id, state.corrupt)
    return state


class DealerFold:
    """`services.infra.own_log.Fold` for dealer-event's own log."""

    def apply(self, kv: Writes, entry: DealerEntry) -> None:
        if not decides(entry):
            return
        before = table_of(kv, entry.table_id)
        state = before.copy()  # the fold's value is never mutated
        for event in entry.events:
            if event.seq <= state.seq:
                continue
            try:
                fold_into(state, event)
            except Exception as error:  # noqa: BLE001 - one table out of play, not the log
                state = _out_of_play(before, entry, event, error)
                break
        refused = entry.rejection
        if refused is not None and refused.input_id is not None \
                and refused.reason_code not in NOT_A_DECISION:
            if refused.input_id not in state.refused_inputs:
                remember_input(state.refused_inputs, refused.input_id, refused.reason_code)
        kv[table_key(entry.table_id)] = state

    def outputs(self, entry: DealerEntry) -> list[Record]:
        key = entry.table_id.encode()
        out: list[Record] = [(TABLE_EVENTS_TOPIC, key, event.model_dump_json().encode())
                             for event in entry.events]
        # the index of corrections: each round_corrected again, the same bytes, on the
        # rare-record topic a replay reads for a round's corrections (the round's
        # round_completed says `corrections_indexed`; docs/decisions/replay.md)
        out += [(TABLE_CORRECTIONS_TOPIC, key, value) for (_, _, value), event
                in zip(out, entry.events, strict=True) if isinstance(event, RoundCorrected)]
        if entry.rejection is not None:
            out.append((DEALER_REJECTIONS_TOPIC, key,
                        entry.rejection.model_dump_json().encode()))
        return out


DEALER_FOLD = DealerFold()
