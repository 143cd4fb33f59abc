"""game-evaluation as a Faust worker: `table.events` in, `round.results` out.

Per-table progress lives in a Faust table (changelog-backed, so it survives a
restart). A result is published and acknowledged before the progress is stored:
a crash in between republishes the identical record (same result_id, same
content), which consumers dedupe.
"""

from __future__ import annotations

import logging

from faust import web

from services.game_evaluation.evaluator import TableView, observe
from services.infra import metrics, observability
from services.infra.faust_app import make_app, topic
from shared.events.table import parse_table_event
from shared.profile import load_profile

log = logging.getLogger(__name__)

# short session: a restarted worker gets its partitions back in seconds after a crash
app = make_app("game-evaluation", broker_session_timeout=8, broker_heartbeat_interval=1)
events_topic = topic(app, "table.events")
observability.install(app, "game-evaluation")
views = app.Table("evaluation-tables", key_type=bytes, value_type=bytes, default=None)


@app.agent(events_topic, concurrency=1)
async def evaluate(stream):
    async for record in stream.events():
        try:
            event = parse_table_event(record.value)
        except ValueError as exc:
            metrics.MALFORMED.labels("game-evaluation", "table.events").inc()
            log.error("unreadable record on table.events skipped: %s", exc)
            continue
        key = event.table_id.encode()
        stored = views.get(key)
        view = TableView.model_validate_json(stored) if stored else TableView(
            table_id=event.table_id)
        seen = observe(view, event)
        for problem in seen.problems:
            metrics.EVALUATION_PROBLEMS.inc()
            log.error("EVALUATION PROBLEM: %s", problem)
        if seen.result is not None:
            await app.producer.send_and_wait(
                "round.results", key, seen.result.model_dump_json().encode(), None, None, None)
            metrics.RESULTS.labels(seen.result.table_id,
                                   load_profile(seen.result.profile).game).inc()
            log.info("result %s published", seen.result.result_id)
        if seen.view != view:
            views[key] = seen.view.model_dump_json().encode()


@app.page("/health")
class HealthView(web.View):
    async def get(self, request: web.Request) -> web.Response:
        assigned = bool(app.consumer.assignment()) if app.consumer else False
        return self.json({"service": "game-evaluation", "assigned": assigned},
                         status=200 if assigned else 503)
