"""game-evaluation as a Faust worker: `table.events` in, `round.results` out.

Per-table progress lives in a Faust table keyed by table id (changelog-backed, so it
survives a restart and moves with its partition when several workers split the
tables). Records are taken in batches: a batch is evaluated in order (one table's
events stay in order: one partition holds them), every result it completes is
published and the acks awaited together, and only then is the progress stored (run_batches
flushes it to its changelog before the batch's offsets are committed: a worker taking over
would otherwise recover progress older than the offset it resumes from, see a gap in the
chain and never publish those results). A crash in between
republishes identical records (same result_id, same content), which consumers dedupe.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import faust
from faust import web

from croupier.services.game_evaluation.evaluator import EvaluationState, TableFlagged, observe_verified
from croupier.services.infra import metrics, observability
from croupier.services.infra.batching import Record, processing, publish_all, run_batches, until_applied
from croupier.services.infra.dead_letters import flag_table, give_up_on
from croupier.services.infra.faust_app import make_app, tables_recovered, topic
from croupier.services.infra.observability import health_problems
from croupier.services.infra.settings import Settings, get_settings
from croupier.shared.events.results import RoundResultPublished
from croupier.shared.events.table import parse_table_event

log = logging.getLogger(__name__)

# Built by build_app when the worker starts (importing this module builds nothing):
settings: Settings
app: faust.App
events_topic: faust.TopicT
views: Any  # table id -> EvaluationState (a Faust table)


def build_app(service_settings: Settings | None = None) -> faust.App:
    """The worker's Faust app with its table, topic, agent, signal and pages."""
    global settings, app, events_topic, views
    settings = service_settings or get_settings()
    group.joined = False  # a new app has not joined its group yet
    # short session: a dead worker's partitions move to the others in seconds
    app = make_app("game-evaluation", settings, broker_session_timeout=8,
                   broker_heartbeat_interval=1)
    events_topic = topic(app, "table.events")
    observability.install(app, "game-evaluation", settings)
    views = app.Table("evaluation-tables", key_type=bytes, value_type=bytes, default=None)
    app.on_partitions_assigned.connect(_joined)  # type: ignore[arg-type]  # faust types handlers (sender, *args)
    app.agent(events_topic, concurrency=1)(evaluate)
    app.page("/health")(HealthView)
    return app


class _Group:
    """Whether this worker is in the consumer group with its partitions recovered."""

    joined = False


group = _Group()


async def _joined(sender, assigned, **kwargs) -> None:
    group.joined = True


async def evaluate_batch(records: Sequence[faust.EventT]) -> None:
    """Follow each table's chain through the batch; publish the results, then store the
    progress. A record that cannot be read or followed is dead-lettered (its table's
    progress stays where it was) and the others are evaluated."""
    progress: dict[bytes, tuple[EvaluationState, faust.EventT]] = {}  # changed in this batch
    out: list[Record] = []
    results: list[RoundResultPublished] = []
    for record in records:
        try:
            seen = _observe(record, progress)
        except TableFlagged as flagged:  # refused: dead-lettered, its table flagged
            flag_table("game-evaluation", flagged.refused, flagged.view.table_id)
            progress[flagged.view.table_id.encode()] = (flagged.view, record)
            out.append(give_up_on("game-evaluation", record, flagged.refused,
                                  datetime.now(UTC)))
            continue
        except Exception as error:  # the record, not the service, failed
            out.append(give_up_on("game-evaluation", record, error, datetime.now(UTC)))
            continue
        if seen is None:
            continue
        key, view, observation = seen
        for problem in observation.problems:
            metrics.EVALUATION_PROBLEMS.inc()
            log.error("EVALUATION PROBLEM: %s", problem)
        if observation.result is not None:
            results.append(observation.result)
            out.append(("round.results", observation.result.table_id.encode(),
                        observation.result.model_dump_json().encode()))
        if observation.view != view:
            progress[key] = (observation.view, record)
    await publish_all(app, out)
    for result in results:
        metrics.RESULTS.labels(result.table_id, result.result.game).inc()
        log.info("result %s published", result.result_id)
    for key, (view, record) in progress.items():
        with processing(record):
            views[key] = view.model_dump_json().encode()


def _observe(record: faust.EventT, progress: dict[bytes, tuple[EvaluationState, faust.EventT]]):
    """(table key, the view before, what the evaluator saw) for one record."""
    event = parse_table_event(record.value)
    key = event.table_id.encode()
    if key in progress:
        view = progress[key][0]
    else:
        with processing(record):
            stored = views.get(key)
        view = EvaluationState.model_validate_json(stored) if stored else EvaluationState(
            table_id=event.table_id)
    return key, view, observe_verified(view, event, settings.table_events_key_bytes,
                                       settings.table_events_accept_unsigned)


async def evaluate(stream):  # the agent (build_app registers it)
    # a failed publish stores no progress: the batch is evaluated again
    await run_batches(stream, until_applied(evaluate_batch, "evaluating table events"))


class HealthView(web.View):  # GET /health (build_app registers it)
    async def get(self, request: web.Request) -> web.Response:
        """Ready once the worker joined the group and its tables are recovered; a worker
        with no partition (more workers than partitions) is ready too: it stands by."""
        partitions = sorted(tp.partition for tp in app.consumer.assignment()
                            if tp.topic == "table.events") if group.joined else []
        recovered = tables_recovered(app)
        problems = health_problems(app) if group.joined else ["not in the consumer group yet"]
        return self.json({"service": "game-evaluation", "joined": group.joined,
                          "recovered": recovered, "partitions": partitions,
                          "problems": problems}, status=503 if problems else 200)
