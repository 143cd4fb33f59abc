"""dealer-event's composition root: `bootstrap(settings)` builds the worker's settings,
Faust app, inputs topic and table runtime, registers its loop, timer and HTTP door, and
returns them in one `DealerEvent`. The worker (`__main__`) runs its `app`; the loop
(`app`) and the door (`views`) are functions of it, never of module globals, and
importing this module builds nothing."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import faust

from services.dealer_event import app as worker
from services.dealer_event import views
from services.dealer_event.runtime import DealerRuntime, init_metrics, machine_config
from services.infra import observability
from services.infra.batching import publish_placed
from services.infra.clock import SystemClock
from services.infra.faust_app import make_app, topic
from services.infra.settings import Settings, get_settings
from shared.topics import DEALER_INPUTS_TOPIC


@dataclass(frozen=True)
class DealerEvent:
    """Everything the worker and its door run on, built once by `bootstrap`."""
    settings: Settings
    app: faust.App
    inputs_topic: faust.TopicT
    runtime: DealerRuntime

    def input_partition(self, table_id: str) -> int | None:
        """The partition of dealer.inputs (and of table.events) that holds `table_id`."""
        try:
            return self.app.producer.key_partition(DEALER_INPUTS_TOPIC, table_id.encode()).partition
        except Exception:  # no metadata yet: the waiter is then answered by decision or timeout
            return None

    async def forward(self, raw: bytes, table_id: str) -> None:
        """The HTTP door puts what it received on `dealer.inputs`, like any device would."""
        await self.app.producer.send_and_wait(DEALER_INPUTS_TOPIC, table_id.encode(), raw, None, None, None)


def bootstrap(service_settings: Settings | None = None) -> DealerEvent:
    """The worker's Faust app with its topic, runtime, loop, timer, signals and web
    routes."""
    settings = service_settings or get_settings()
    # A short session: after a crash the other workers (or the restarted one) get its
    # partitions in seconds instead of waiting a minute for the dead member to time out.
    app = make_app("dealer-event", settings, persistent=False, broker_session_timeout=8,
                   broker_heartbeat_interval=1)
    inputs_topic = topic(app, DEALER_INPUTS_TOPIC)
    observability.install(app, "dealer-event", settings)
    init_metrics()
    clock = SystemClock()
    runtime = DealerRuntime(machine_config(settings), clock, partial(publish_placed, app),
                            partial(worker.rebuild_tables, settings),
                            partial(worker.owned_partitions, app), joined=False,
                            read_events=partial(worker.read_events, settings),
                            accept_unsigned=settings.table_events_accept_unsigned)
    service = DealerEvent(settings, app, inputs_topic, runtime)
    worker.register(service)
    views.register(app, service)
    return service
