"""bet-settlement's composition root: `bootstrap(settings)` builds the worker's settings,
Faust app, own log and decisions, registers its loop and its page, and returns them in one
`BetSettlement`. The worker (`__main__`) runs its `app`; nothing is kept in a module
global, and importing this module builds nothing (the exact RTP of every profile is
computed here, by decision_metrics.init_metrics, not at import)."""

from __future__ import annotations

from dataclasses import dataclass

import faust

from services.bet_settlement import app as worker
from services.bet_settlement import decision_metrics
from services.bet_settlement.records import SettlementRecords
from services.bet_settlement.settlement_fold import SETTLEMENT_FOLD
from services.infra import metrics, observability
from services.infra.clock import SystemClock
from services.infra.faust_app import make_app, writer_name
from services.infra.kernel import OwnLog
from services.infra.settings import Settings, get_settings
from shared.events.settlement_log import SettlementEntry
from shared.topics import SETTLEMENT_LOG_TOPIC


@dataclass(frozen=True)
class BetSettlement:
    """Everything the worker runs on, built once by `bootstrap`."""
    settings: Settings
    app: faust.App
    own: OwnLog[SettlementEntry]  # the worker's folded partitions of settlement.log
    records: SettlementRecords


def bootstrap(service_settings: Settings | None = None) -> BetSettlement:
    """The worker's Faust app with its own log, topics, loop and pages."""
    settings = service_settings or get_settings()
    # a crashed worker's partitions are reassigned after 10 s instead of Faust's 60 s
    app = make_app("bet-settlement", settings, broker_session_timeout=10,
                   broker_heartbeat_interval=1)
    observability.install(app, "bet-settlement", settings,
                          invariants=metrics.SETTLEMENT_INVARIANTS)
    decision_metrics.init_metrics()
    writer = writer_name(settings, "bet-settlement")
    own: OwnLog[SettlementEntry] = OwnLog("bet-settlement", SETTLEMENT_LOG_TOPIC, SETTLEMENT_FOLD,
                 SettlementEntry.model_validate_json,
                 lambda entry: entry.table_id.encode(), writer)
    records = SettlementRecords(settings.table_events_key_bytes,
                                settings.table_events_accept_unsigned, SystemClock())
    service = BetSettlement(settings, app, own, records)
    worker.register(service)
    return service
