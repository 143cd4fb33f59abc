"""dealer-event's composition root: `bootstrap(settings)` builds the worker's settings,
Faust app, inputs topic, own log and decisions, registers its loop, timer and HTTP door,
and returns them in one `DealerEvent`. The worker (`__main__`) runs its `app`; the loop
(`app`) and the door (`views`) are functions of it, never of module globals, and
importing this module builds nothing."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import faust

from services.dealer_event import app as worker
from services.dealer_event import views
from services.dealer_event.dealer_fold import DEALER_FOLD, table_key
from services.dealer_event.decisions import Decisions, init_metrics, machine_config
from services.dealer_event.state import TableState
from services.infra import observability
from services.infra.clock import SystemClock
from services.infra.faust_app import make_app, topic, writer_name
from services.infra.kernel import OwnLog
from services.infra.settings import Settings, get_settings
from shared.events.dealer_log import DealerEntry
from shared.topics import DEALER_INPUTS_TOPIC, DEALER_LOG_TOPIC


@dataclass(frozen=True)
class DealerEvent:
    """Everything the worker and its door run on, built once by `bootstrap`."""
    settings: Settings
    app: faust.App
    inputs_topic: faust.TopicT
    own: OwnLog[DealerEntry]  # the worker's folded partitions of dealer.log
    decisions: Decisions

    def input_partition(self, table_id: str) -> int | None:
        """The partition of dealer.inputs (and of dealer.log, table.events) that holds
        `table_id`."""
        return input_partition(self.app, table_id)

    def table(self, table_id: str) -> TableState | None:
        """The table's state as this worker's fold of its partition has it; None while the
        partition is not folded here (not owned, or recovering)."""
        partition = self.input_partition(table_id)
        state = None if partition is None else self.own.state(partition)
        return None if state is None else state.kv.get(table_key(table_id))

    async def forward(self, raw: bytes, table_id: str) -> None:
        """The HTTP door puts what it received on `dealer.inputs`, like any device would
        (and the timer its ticks)."""
        await self.app.producer.send_and_wait(DEALER_INPUTS_TOPIC, table_id.encode(), raw, None, None, None)


def input_partition(app: faust.App, table_id: str) -> int | None:
    """The partition of dealer.inputs that holds `table_id` (Kafka's partitioner on the
    table id, as every writer keys it); None while the producer has no metadata."""
    try:
        return app.producer.key_partition(DEALER_INPUTS_TOPIC, table_id.encode()).partition
    except Exception:  # no metadata yet: the waiter is then answered by decision or timeout
        return None


def bootstrap(service_settings: Settings | None = None) -> DealerEvent:
    """The worker's Faust app with its topic, own log, decisions, loop, timer, signals and
    web routes."""
    settings = service_settings or get_settings()
    # A short session: after a crash the other workers (or the restarted one) get its
    # partitions in seconds instead of waiting a minute for the dead member to time out.
    app = make_app("dealer-event", settings, persistent=False, broker_session_timeout=8,
                   broker_heartbeat_interval=1)
    inputs_topic = topic(app, DEALER_INPUTS_TOPIC)
    observability.install(app, "dealer-event", settings)
    init_metrics()
    own: OwnLog[DealerEntry] = OwnLog("dealer-event", DEALER_LOG_TOPIC, DEALER_FOLD,
                                      DealerEntry.model_validate_json,
                                      lambda entry: entry.table_id.encode(),
                                      writer_name(settings, "dealer-event"))
    decisions = Decisions(machine_config(settings), SystemClock(),
                          partial(input_partition, app))
    service = DealerEvent(settings, app, inputs_topic, own, decisions)
    worker.register(service)
    views.register(app, service)
    return service
