"""bet-settlement's Faust app: one agent over bets.placed, table.events and round.results
(all keyed by table id, so co-partitioned), on the kernel
(`croupier.services.infra.kernel.run_own_log`).

State: the fold of its own log, `settlement.log` (`settlement_fold`): partition p of the log
holds the entries of the records of partition p of its three inputs. Each entry carries
what its record changed, absolute values (rounds' headers, bet entries, spot totals, the
table's chain watch and waiting rounds) and what it publishes. A worker assigned a
partition folds its log partition first and resumes each input after the last record its
log applied; the outputs of entries not known to be published are published again. No
Faust table: nothing is kept that the log does not say (docs/decisions/settlement-log.md).

The app only wires: the own log (`own`), the decisions (`records`), the health page.
`build_app` builds it when the worker starts; importing this module builds nothing.
"""

from __future__ import annotations

import uuid

import faust
from faust import web

from croupier.services.bet_settlement import decision_metrics
from croupier.services.bet_settlement.records import SettlementRecords
from croupier.services.bet_settlement.settlement_fold import SETTLEMENT_FOLD
from croupier.services.infra import metrics, observability
from croupier.services.infra.clock import SystemClock
from croupier.services.infra.faust_app import make_app
from croupier.services.infra.kernel import OwnLog, run_own_log
from croupier.services.infra.observability import health_problems
from croupier.services.infra.settings import Settings, get_settings
from croupier.shared.events.settlement_log import SettlementEntry
from croupier.shared.topics import (
    BETS_PLACED_TOPIC,
    ROUND_RESULTS_TOPIC,
    SETTLEMENT_LOG_TOPIC,
    TABLE_EVENTS_TOPIC,
)

clock = SystemClock()

# Built by build_app when the worker starts (importing this module builds nothing):
settings: Settings
app: faust.App
own: OwnLog  # the worker's folded partitions of settlement.log
records: SettlementRecords


def build_app(service_settings: Settings | None = None) -> faust.App:
    """The worker's Faust app with its own log, topics, agent and pages; the exact RTP of
    every profile is computed here (decision_metrics.init_metrics), not at import."""
    global settings, app, own, records
    settings = service_settings or get_settings()
    # a crashed worker's partitions are reassigned after 10 s instead of Faust's 60 s
    app = make_app("bet-settlement", settings, broker_session_timeout=10,
                   broker_heartbeat_interval=1)
    observability.install(app, "bet-settlement", settings,
                          invariants=metrics.SETTLEMENT_INVARIANTS)
    decision_metrics.init_metrics()
    # the writer's name is unique to this process's life, so no two lives share an entry id
    writer = f"{settings.instance}-bet-settlement-{settings.worker_id}-{uuid.uuid4().hex[:8]}"
    own = OwnLog("bet-settlement", SETTLEMENT_LOG_TOPIC, SETTLEMENT_FOLD,
                 SettlementEntry.model_validate_json,
                 lambda entry: entry.table_id.encode(), writer)
    records = SettlementRecords(settings.table_events_key_bytes,
                                settings.table_events_accept_unsigned, clock)
    app.task(settlement_agent)
    app.page("/health")(HealthView)
    return app


INPUTS = (BETS_PLACED_TOPIC, TABLE_EVENTS_TOPIC, ROUND_RESULTS_TOPIC)  # co-partitioned: by table


async def settlement_agent() -> None:  # a task (build_app registers it)
    await run_own_log(app, INPUTS, own, records.decide, records.answer)


class HealthView(web.View):  # GET /health (build_app registers it)
    async def get(self, request: web.Request) -> web.Response:
        problems = health_problems(app)
        return self.json({"status": "ok" if not problems else "unavailable",
                          "problems": problems}, status=503 if problems else 200)
