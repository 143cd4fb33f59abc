"""game-evaluation as a Faust worker: `table.events` in, `round.results` out.

Its state is the fold of its own log, `evaluation.log` (one chained entry per table event
that changed a table's progress, on the event's own partition of `table.events`): each
table's `EvaluationState` is what its last valid entry wrote (`evaluation_fold`), and each
result is an output of the entry that completed its round, published only once the entry
is verified in the log, and again by a worker recovering a partition whose outbox holds it
(consumers dedupe on `result_id`). The agent runs on the kernel
(`services.infra.kernel`): a worker assigned a partition folds that partition of
its own log first and resumes `table.events` after the last event the log applied (the
consumer group's commit only saves time). No Faust table: nothing is kept that the log
does not say (docs/decisions/ledger.md).

This module is the worker's loop and `/health` page, functions of the `GameEvaluation`
that `services.game_evaluation.bootstrap` builds when the worker starts (the own
log, the decisions); importing it builds nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from faust import web

from services.infra.consumer import assignment_of, owners_of
from services.infra.faust_app import bound, bound_view
from services.infra.kernel import run_own_log
from services.infra.observability import health_problems
from shared.topics import TABLE_EVENTS_TOPIC

if TYPE_CHECKING:
    from services.game_evaluation.bootstrap import GameEvaluation


def register(service: GameEvaluation) -> None:
    """The worker's loop and page on its app (the bootstrap calls it)."""
    service.app.task(bound(evaluate, service))
    service.app.page("/health")(bound_view(HealthView, service))


async def evaluate(s: GameEvaluation) -> None:  # a task (register registers it)
    """A batch at a time, on the kernel: decide every table event, write its entry, verify
    and fold the entries, publish their results, then count them."""
    await run_own_log(s.app, [TABLE_EVENTS_TOPIC], s.own, s.evaluations.decide,
                      s.evaluations.answer)


class HealthView(web.View):  # GET /health (register binds it to the service)
    service: GameEvaluation

    async def get(self, request: web.Request) -> web.Response:
        """Ready once the worker joined the group and every partition it was assigned is
        folded from its own log (`own.owned`); a worker with no partition (more workers
        than partitions) is ready too: it stands by."""
        app, own = self.service.app, self.service.own
        owners = owners_of(app)
        joined = owners is not None and not owners.rebalancing
        partitions = sorted(tp.partition for tp in assignment_of(app)
                            if tp.topic == TABLE_EVENTS_TOPIC) if joined else []
        recovered = joined and set(partitions) <= own.owned
        problems = health_problems(app) if joined else ["not in the consumer group yet"]
        if joined and not recovered:
            problems.append("recovering: partitions "
                            f"{sorted(set(partitions) - own.owned)} of evaluation.log not "
                            "folded yet")
        return self.json({"service": "game-evaluation", "joined": joined,
                          "recovered": recovered, "partitions": partitions,
                          "problems": problems}, status=503 if problems else 200)
