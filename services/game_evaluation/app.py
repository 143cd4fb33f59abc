"""game-evaluation as a Faust worker: `table.events` in, `round.results` out.

Its state is the fold of its own log, `evaluation.log` (one chained entry per table event
that changed a table's progress, on the event's own partition of `table.events`): each
table's `EvaluationState` is what its last valid entry wrote (`evaluation_fold`), and each
result is an output of the entry that completed its round, published only once the entry
is verified in the log, and again by a worker recovering a partition whose outbox holds it
(consumers dedupe on `result_id`). The agent runs on the kernel
(`croupier.services.infra.kernel`): a worker assigned a partition folds that partition of
its own log first and resumes `table.events` after the last event the log applied (the
consumer group's commit only saves time). No Faust table: nothing is kept that the log
does not say (docs/decisions/ledger.md).

The app only wires: the own log (`own`), the decisions (`decisions.Evaluations`), the
`/health` page. `build_app` builds it all when the worker starts; importing this module
builds nothing.
"""

from __future__ import annotations

import logging
import uuid

import faust
from faust import web

from croupier.services.game_evaluation.decisions import Evaluations
from croupier.services.game_evaluation.evaluation_fold import EVALUATION_FOLD
from croupier.services.infra import observability
from croupier.services.infra.consumer import assignment_of, owners_of
from croupier.services.infra.faust_app import make_app
from croupier.services.infra.kernel import OwnLog, run_own_log
from croupier.services.infra.observability import health_problems
from croupier.services.infra.settings import Settings, get_settings
from croupier.shared.events.evaluation_log import EvaluationEntry
from croupier.shared.topics import EVALUATION_LOG_TOPIC, TABLE_EVENTS_TOPIC

log = logging.getLogger(__name__)

# Built by build_app when the worker starts (importing this module builds nothing):
settings: Settings
app: faust.App
own: OwnLog  # the worker's folded partitions of evaluation.log
evaluations: Evaluations


def build_app(service_settings: Settings | None = None) -> faust.App:
    """The worker's Faust app with its own log, topic, agent, signal and pages."""
    global settings, app, own, evaluations
    settings = service_settings or get_settings()
    # short session: a dead worker's partitions move to the others in seconds
    app = make_app("game-evaluation", settings, broker_session_timeout=8,
                   broker_heartbeat_interval=1)
    observability.install(app, "game-evaluation", settings)
    # the writer's name is unique to this process's life, so no two lives share an entry id
    writer = f"{settings.instance}-game-evaluation-{settings.worker_id}-{uuid.uuid4().hex[:8]}"
    own = OwnLog("game-evaluation", EVALUATION_LOG_TOPIC, EVALUATION_FOLD,
                 EvaluationEntry.model_validate_json,
                 lambda entry: entry.state.table_id.encode(), writer)
    evaluations = Evaluations(settings.table_events_key_bytes,
                              settings.table_events_accept_unsigned)
    app.task(evaluate)
    app.page("/health")(HealthView)
    return app


async def evaluate() -> None:  # a task (build_app registers it)
    """A batch at a time, on the kernel: decide every table event, write its entry, verify
    and fold the entries, publish their results, then count them."""
    await run_own_log(app, [TABLE_EVENTS_TOPIC], own, evaluations.decide, evaluations.answer)


class HealthView(web.View):  # GET /health (build_app registers it)
    async def get(self, request: web.Request) -> web.Response:
        """Ready once the worker joined the group and every partition it was assigned is
        folded from its own log (`own.owned`); a worker with no partition (more workers
        than partitions) is ready too: it stands by."""
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
