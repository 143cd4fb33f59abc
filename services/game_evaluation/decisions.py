"""What game-evaluation's agent does with each table event, on the kernel
(`croupier.services.infra.kernel.run_own_log`).

`decide` reads the event, runs the evaluator against the batch's scratch
(`evaluation_fold.step`) and gives the entry it writes (none if it changes nothing) and the
dead letter of an event it cannot read or refuses; the kernel chains, writes and verifies
the entries, folds them, publishes their results, and only then calls `answer`, which
logs and counts what the event did: once, for a decision the log backs (a redelivered or
re-decided event counts nothing again).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime

import faust

from croupier.services.game_evaluation.evaluation_fold import Step, step
from croupier.services.infra import metrics
from croupier.services.infra.dead_letters import flag_table, give_up_on
from croupier.services.infra.kernel import Decided
from croupier.services.infra.own_log import Overlay
from croupier.shared.events.evaluation_log import EvaluationEntry
from croupier.shared.events.sources import InputRef
from croupier.shared.events.table import parse_table_event

log = logging.getLogger("croupier.services.game_evaluation")
SERVICE = "game-evaluation"


def _now() -> datetime:
    return datetime.now(UTC)


class Evaluations:
    """The agent's decisions and answers (the kernel does the rest)."""

    def __init__(self, key: bytes, accept_unsigned: bool = False,
                 now: Callable[[], datetime] = _now) -> None:
        self.key = key
        self.accept_unsigned = accept_unsigned
        self.now = now

    def decide(self, scratch: Overlay, event: faust.EventT) -> Decided:
        """The event's entry (if it changes its table), its dead letter (if it cannot be
        read, or is refused), and the step as the reply `answer` counts."""
        now = self.now()
        try:
            table_event = parse_table_event(event.value)
            seen = step(scratch, table_event, self.key, self.accept_unsigned)
        except Exception as error:  # the record, not the service, failed
            return Decided(also=[give_up_on(SERVICE, event, error, now)])
        also = [] if seen.flagged is None else [
            give_up_on(SERVICE, event, seen.flagged.refused, now)]
        reply = seen if seen.changed or seen.problems or seen.flagged is not None else None
        if not seen.changed:
            return Decided(also=also, reply=reply)
        message = event.message
        source = InputRef(topic=message.topic, partition=message.partition,
                          offset=message.offset)

        def make(entry_id: str, prev: str, published_through: int) -> EvaluationEntry:
            return seen.entry(entry_id, prev, published_through, source, now)
        return Decided(entries=[make], also=also, reply=reply)

    def answer(self, event: faust.EventT, decided: Decided, backed: bool) -> None:
        """Log and count what the event did, once: only for a decision the log backs."""
        seen: Step | None = decided.reply
        if not backed or seen is None:
            return
        if seen.flagged is not None:
            flag_table(SERVICE, seen.flagged.refused, seen.after.table_id)
        for problem in seen.problems:
            metrics.EVALUATION_PROBLEMS.inc()
            log.error("EVALUATION PROBLEM: %s", problem)
        if seen.result is not None:
            metrics.RESULTS.labels(seen.result.table_id, seen.result.result.game).inc()
            log.info("result %s published", seen.result.result_id)
