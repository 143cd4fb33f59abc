"""game-evaluation's state as the fold of `evaluation.log`: one function for live state
and recovery, and the one step that decides an entry.

An entry writes one key, `e/<table id>` -> the table's `EvaluationState` after its event
(absolute). It publishes its result, if it has one, on `round.results`, and the dead
letter of a refused event that flagged its table on `dead.letters` (the outbox,
`services.infra.own_log`: lost in a crash, they are published again from the
entry). `step` runs the evaluator against a folded state (the batch's scratch) and says
what the event changes: nothing (a redelivery, an event already seen), or the state after
it and maybe a result.

Pure functions: no I/O, no clock (`record_of` is only the dead letters' record layout).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from services.game_evaluation.evaluator import (
    EvaluationState,
    Observation,
    flagged_view,
    observe_verified,
)
from services.infra.dead_letters import record_of
from services.infra.own_log import Record, Writes
from shared.events.dead_letters import DeadLetter
from shared.events.evaluation_log import EvaluationEntry
from shared.events.event_auth import TableFlagged
from shared.events.results import RoundResultPublished
from shared.events.sources import InputRef
from shared.events.table import TableEventBase
from shared.topics import ROUND_RESULTS_TOPIC


def state_key(table_id: str) -> str:
    return f"e/{table_id}"


def state_of(kv: Mapping[str, Any], table_id: str) -> EvaluationState:
    """The table's progress as the folded state has it (a table never seen: its start)."""
    found: EvaluationState | None = kv.get(state_key(table_id))
    return found if found is not None else EvaluationState(table_id=table_id)


class EvaluationFold:
    """`services.infra.own_log.Fold` for game-evaluation's own log."""

    def apply(self, kv: Writes, entry: EvaluationEntry) -> None:
        kv[state_key(entry.state.table_id)] = entry.state

    def outputs(self, entry: EvaluationEntry) -> list[Record]:
        out: list[Record] = []
        if entry.result is not None:
            out.append((ROUND_RESULTS_TOPIC, entry.result.table_id.encode(),
                        entry.result.model_dump_json().encode()))
        if entry.dead_letter is not None:
            out.append(record_of(entry.dead_letter))
        return out


EVALUATION_FOLD = EvaluationFold()


@dataclass(frozen=True)
class Step:
    """What one table event does to its table: the state after it (`changed`: an entry is
    written), the result it completes, the problems seen, or the refusal that flagged the
    table (the event is then dead-lettered)."""

    before: EvaluationState
    after: EvaluationState
    result: RoundResultPublished | None = None
    problems: tuple[str, ...] = ()
    void: str | None = None  # skipped as a lost race: why
    flagged: TableFlagged | None = field(default=None, compare=False)

    @property
    def changed(self) -> bool:
        return self.after != self.before

    def entry(self, entry_id: str, prev: str, published_through: int, source: InputRef,
              now: datetime, dead_letter: DeadLetter | None = None) -> EvaluationEntry:
        return EvaluationEntry(entry_id=entry_id, prev=prev, source=source, state=self.after,
                               result=self.result, dead_letter=dead_letter,
                               published_through=published_through, recorded_at=now)


def step(kv: Mapping[str, Any], event: TableEventBase, key: bytes,
         accept_unsigned: bool = False) -> Step:
    """Run the evaluator on `event` against the table's state in `kv`."""
    before = state_of(kv, event.table_id)
    try:
        seen: Observation = observe_verified(before, event, key, accept_unsigned)
    except TableFlagged as flagged:  # refused: its table flagged, nothing else moves
        return Step(before=before, after=flagged_view(before, flagged), flagged=flagged)
    return Step(before=before, after=seen.view, result=seen.result, problems=seen.problems,
                void=seen.void)
