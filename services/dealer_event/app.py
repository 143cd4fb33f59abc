"""dealer-event as a Faust worker: `dealer.inputs` in, `table.events` and
`dealer.rejections` out, an HTTP door for table devices and supervisors.

Several workers share the consumer group and split the partitions of `dealer.inputs`
(see docs/decisions/tables.md). Each worker holds the states of the tables of its
partitions, rebuilt from the log after every assignment before any of their inputs is
decided; the HTTP door forwards a request to the worker that owns the table. The kernel's consume
loop (`croupier.services.infra.kernel.consume`) resumes each partition of `dealer.inputs`
after the last input the log says was decided (`DealerRuntime.resume_offsets`), never
where a consumer group committed (docs/decisions/dealer-checkpoints.md).
"""

from __future__ import annotations

import asyncio
import logging
from functools import partial

import faust
from faust.types import TP

from croupier.services.dealer_event.rebuild import Rebuilt, rebuild
from croupier.services.dealer_event.runtime import DealerRuntime, init_metrics, machine_config
from croupier.services.infra import observability
from croupier.services.infra.batching import publish_placed, until_applied
from croupier.services.infra.clock import SystemClock
from croupier.services.infra.consumer import assignment_of
from croupier.services.infra.dead_letters import give_up_on
from croupier.services.infra.faust_app import make_app, topic
from croupier.services.infra.kernel import consume
from croupier.services.infra.log_reader import read_range
from croupier.services.infra.settings import Settings, get_settings
from croupier.shared.topics import DEALER_INPUTS_TOPIC, TABLE_EVENTS_TOPIC

log = logging.getLogger(__name__)

clock = SystemClock()

# Built by build_app when the worker starts (importing this module builds nothing):
settings: Settings
app: faust.App
inputs_topic: faust.TopicT
runtime: DealerRuntime


def build_app(service_settings: Settings | None = None) -> faust.App:
    """The worker's Faust app with its topic, runtime, agent, timer, signals and web
    routes."""
    global settings, app, inputs_topic, runtime
    settings = service_settings or get_settings()
    # A short session: after a crash the other workers (or the restarted one) get its
    # partitions in seconds instead of waiting a minute for the dead member to time out.
    app = make_app("dealer-event", settings, persistent=False, broker_session_timeout=8,
                   broker_heartbeat_interval=1)
    inputs_topic = topic(app, DEALER_INPUTS_TOPIC)
    observability.install(app, "dealer-event", settings)
    init_metrics()
    runtime = DealerRuntime(machine_config(settings), clock, partial(publish_placed, app),
                            _rebuild, owned_partitions, joined=False,
                            read_events=_read_events,
                            accept_unsigned=settings.table_events_accept_unsigned)
    app.task(dealer_inputs)
    app.timer(interval=settings.betting_timer_interval_seconds)(betting_timer)
    from croupier.services.dealer_event import views  # the web routes (views imports this module)
    views.register(app)
    return app


def owned_partitions() -> frozenset[int]:
    """The partitions of dealer.inputs this worker's consumer is assigned now."""
    return frozenset(tp.partition for tp in assignment_of(app) if tp.topic == DEALER_INPUTS_TOPIC)


async def _rebuild(partitions) -> Rebuilt:
    return await asyncio.to_thread(
        rebuild, settings.bootstrap_servers, partitions,
        events_key=settings.table_events_key_bytes,
        accept_unsigned=settings.table_events_accept_unsigned)


async def _read_events(partition: int, start: int, stop: int) -> list[tuple[int, bytes]]:
    """Records of table.events (the writer's check that its batch landed as chained)."""
    records = await asyncio.to_thread(read_range, settings.bootstrap_servers, TABLE_EVENTS_TOPIC,
                                      partition, start, stop, principal="dealer-event")
    return [(r.offset, r.value) for r in records]


async def drop_tables_on_revoke(partitions: set[int]) -> None:
    await runtime.on_revoked()


def rebuild_on_assign(partitions: set[int]) -> None:
    log.info("assigned partition(s) %s of %s: rebuilding their tables", sorted(partitions),
             DEALER_INPUTS_TOPIC)
    runtime.on_assigned()


async def decide_batch(events) -> None:
    """A failed publish leaves the states unadopted and marks them for a rebuild from the
    log; the batch is then decided again. An input that cannot be decided at all is
    dead-lettered."""

    def give_up(index: int, error: BaseException):
        return give_up_on("dealer-event", events[index], error, clock.now())

    await runtime.handle_batch([(event.value, event.message.partition, event.message.offset)
                                for event in events], give_up)


async def dealer_inputs() -> None:  # a task (build_app registers it): the kernel's loop
    await consume(app, [DEALER_INPUTS_TOPIC], resume_at, until_applied(decide_batch, "deciding inputs"),
                  drop_tables_on_revoke, rebuild_on_assign)


async def resume_at(tp: TP) -> int | None:
    """Where a partition of dealer.inputs resumes: after the last input the rebuilt log
    says was decided (None: its records name no input; the loop then takes the group's
    commit, else the start)."""
    return (await runtime.resume_offsets()).get(tp.partition)


async def betting_timer() -> None:  # a timer (build_app registers it)
    try:
        await runtime.tick_all()
    except Exception:
        log.exception("closing overdue betting windows failed; next tick retries")


def input_partition(table_id: str) -> int | None:
    """The partition of dealer.inputs (and of table.events) that holds `table_id`."""
    try:
        return app.producer.key_partition(DEALER_INPUTS_TOPIC, table_id.encode()).partition
    except Exception:  # no metadata yet: the waiter is then answered by decision or timeout
        return None


async def forward(raw: bytes, table_id: str) -> None:
    """The HTTP door puts what it received on `dealer.inputs`, like any device would."""
    await app.producer.send_and_wait(DEALER_INPUTS_TOPIC, table_id.encode(), raw, None, None, None)

