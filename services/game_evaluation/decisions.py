"""What game-evaluation's agent does with each table event, on the kernel
(`services.infra.kernel.run_own_log`).

`decide` reads the event, runs the evaluator against the batch's scratch
(`evaluation_fold.step`) and gives the entry it writes (none if it changes nothing): a
refused event that flags its table writes the flagged state with its dead letter, which
the entry publishes; an event it cannot read is dead-lettered and writes nothing. The
kernel chains, writes and verifies the entries, folds them, publishes their outputs, and
only then calls `answer`, which logs and counts what the event did: once, for a decision
the log backs (a redelivered or re-decided event counts nothing again).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import faust

from services.game_evaluation.evaluation_fold import Step, step
from services.infra import metrics
from services.infra.dead_letters import (
    dead_letter,
    flag_table,
    give_up_on,
    note_dead_letter,
    note_void,
    record_of,
)
from services.infra.kernel import Decided
from services.infra.own_log import Overlay
from shared.events.dead_letters import DeadLetter
from shared.events.evaluation_log import EvaluationEntry
from shared.events.sources import InputRef
from shared.events.table import parse_table_event

log = logging.getLogger("services.game_evaluation")
SERVICE = "game-evaluation"


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Reply:
    """What `answer` logs and counts of one event: its step, and its dead letter."""

    step: Step
    dead_letter: DeadLetter | None = None


class Evaluations:
    """The agent's decisions and answers (the kernel does the rest)."""

    def __init__(self, key: bytes, accept_unsigned: bool = False,
                 now: Callable[[], datetime] = _now) -> None:
        self.key = key
        self.accept_unsigned = accept_unsigned
        self.now = now

    def decide(self, scratch: Overlay, event: faust.EventT) -> Decided:
        """The event's entry (if it changes its table: with its dead letter if it was
        refused), the dead letter of an event it cannot read, and what `answer` counts."""
        now = self.now()
        try:
            table_event = parse_table_event(event.value)
            seen = step(scratch, table_event, self.key, self.accept_unsigned)
        except Exception as error:  # the record, not the service, failed
            return Decided(also=[give_up_on(SERVICE, event, error, now)])
        message = event.message
        letter = None if seen.flagged is None else dead_letter(
            SERVICE, message.topic, message.partition, message.offset, message.key,
            message.value, seen.flagged.refused, now)
        reply = Reply(seen, letter) if seen.changed or seen.problems or letter or seen.void \
            else None
        if not seen.changed:  # nothing to write: a dead letter goes out as it is
            return Decided(also=[] if letter is None else [record_of(letter)], reply=reply)
        source = InputRef(topic=message.topic, partition=message.partition,
                          offset=message.offset)

        def make(entry_id: str, prev: str, published_through: int) -> EvaluationEntry:
            return seen.entry(entry_id, prev, published_through, source, now, letter)
        return Decided(entries=[make], reply=reply)

    def answer(self, event: faust.EventT, decided: Decided, backed: bool) -> None:
        """Log and count what the event did, once: only for a decision the log backs."""
        reply: Reply | None = decided.reply
        if not backed or reply is None:
            return
        seen = reply.step
        if reply.dead_letter is not None:
            note_dead_letter(reply.dead_letter)
        if seen.flagged is not None:
            flag_table(SERVICE, seen.flagged.refused, seen.after.table_id)
        if seen.void is not None:
            note_void(SERVICE, seen.after.table_id, seen.void)
        for problem in seen.problems:
            metrics.EVALUATION_PROBLEMS.inc()
            log.error("EVALUATION PROBLEM: %s", problem)
        if seen.result is not None:
            metrics.RESULTS.labels(seen.result.table_id, seen.result.result.game).inc()
            log.info("result %s published", seen.result.result_id)
