"""game-evaluation's composition root: `bootstrap(settings)` builds the worker's settings,
Faust app, own log and decisions, registers its loop and its page, and returns them in one
`GameEvaluation`. The worker (`__main__`) runs its `app`; nothing is kept in a module
global, and importing this module builds nothing."""

from __future__ import annotations

from dataclasses import dataclass

import faust

from services.game_evaluation import app as worker
from services.game_evaluation.decisions import Evaluations
from services.game_evaluation.evaluation_fold import EVALUATION_FOLD
from services.infra import observability
from services.infra.faust_app import make_app, writer_name
from services.infra.kernel import OwnLog
from services.infra.settings import Settings, get_settings
from shared.events.evaluation_log import EvaluationEntry
from shared.topics import EVALUATION_LOG_TOPIC


@dataclass(frozen=True)
class GameEvaluation:
    """Everything the worker runs on, built once by `bootstrap`."""
    settings: Settings
    app: faust.App
    own: OwnLog[EvaluationEntry]  # the worker's folded partitions of evaluation.log
    evaluations: Evaluations


def bootstrap(service_settings: Settings | None = None) -> GameEvaluation:
    """The worker's Faust app with its own log, loop, signal and pages."""
    settings = service_settings or get_settings()
    # short session: a dead worker's partitions move to the others in seconds
    app = make_app("game-evaluation", settings, broker_session_timeout=8,
                   broker_heartbeat_interval=1)
    observability.install(app, "game-evaluation", settings)
    writer = writer_name(settings, "game-evaluation")
    own: OwnLog[EvaluationEntry] = OwnLog("game-evaluation", EVALUATION_LOG_TOPIC, EVALUATION_FOLD,
                 EvaluationEntry.model_validate_json,
                 lambda entry: entry.state.table_id.encode(), writer)
    evaluations = Evaluations(settings.table_events_key_bytes,
                              settings.table_events_accept_unsigned)
    service = GameEvaluation(settings, app, own, evaluations)
    worker.register(service)
    return service
