"""dealer-event as a Faust worker: `dealer.inputs` in, `table.events` and
`dealer.rejections` out, an HTTP door for table devices and supervisors.

Several workers share the consumer group and split the partitions of `dealer.inputs`
(see docs/decisions/tables.md). Each worker holds the states of the tables of its
partitions, rebuilt from the log after every assignment before any of their inputs is
decided; the HTTP door forwards a request to the worker that owns the table. The
kernel's consume loop (`services.infra.consume_loop.consume`) resumes each partition of
`dealer.inputs` after the last input the log says was decided
(`DealerRuntime.resume_offsets`), never where a consumer group committed
(docs/decisions/dealer-checkpoints.md).

This module is the worker's loop and timer, functions of the `DealerEvent` that
`services.dealer_event.bootstrap` builds when the worker starts; importing it
builds nothing.
"""

from __future__ import annotations

import asyncio
import logging
from functools import partial
from typing import TYPE_CHECKING

import faust
from faust.types import TP

from services.dealer_event.rebuild import Rebuilt, rebuild
from services.infra.batching import retried_on_transient
from services.infra.consume_loop import consume
from services.infra.consumer import assignment_of
from services.infra.dead_letters import give_up_on
from services.infra.faust_app import bound
from services.infra.log_reader import read_range
from services.infra.settings import Settings
from shared.topics import DEALER_INPUTS_TOPIC, TABLE_EVENTS_TOPIC

if TYPE_CHECKING:
    from services.dealer_event.bootstrap import DealerEvent

log = logging.getLogger(__name__)



def register(service: DealerEvent) -> None:
    """The worker's loop and betting timer on its app (the bootstrap calls it)."""
    service.app.task(bound(dealer_inputs, service))
    service.app.timer(interval=service.settings.betting_timer_interval_seconds)(
        bound(betting_timer, service))


def owned_partitions(app: faust.App) -> frozenset[int]:
    """The partitions of dealer.inputs this worker's consumer is assigned now."""
    return frozenset(tp.partition for tp in assignment_of(app) if tp.topic == DEALER_INPUTS_TOPIC)


async def rebuild_tables(settings: Settings, partitions) -> Rebuilt:
    return await asyncio.to_thread(
        rebuild, settings.bootstrap_servers, partitions,
        events_key=settings.table_events_key_bytes,
        accept_unsigned=settings.table_events_accept_unsigned)


async def read_events(settings: Settings, partition: int, start: int,
                      stop: int) -> list[tuple[int, bytes]]:
    """Records of table.events (the writer's check that its batch landed as chained)."""
    records = await asyncio.to_thread(read_range, settings.bootstrap_servers, TABLE_EVENTS_TOPIC,
                                      partition, start, stop, principal="dealer-event")
    return [(r.offset, r.value) for r in records]


async def decide_batch(s: DealerEvent, events) -> None:
    """A failed publish leaves the states unadopted and marks them for a rebuild from the
    log; the batch is then decided again. An input that cannot be decided at all is
    dead-lettered."""

    def give_up(index: int, error: BaseException):
        return give_up_on("dealer-event", events[index], error, s.runtime.clock.now())

    await s.runtime.handle_batch([(event.value, event.message.partition,
                                   event.message.offset) for event in events], give_up)


async def dealer_inputs(s: DealerEvent) -> None:  # a task (register registers it)
    """The kernel's loop over dealer.inputs."""
    async def drop_tables_on_revoke(partitions: set[int]) -> None:
        await s.runtime.on_revoked()

    def rebuild_on_assign(partitions: set[int]) -> None:
        log.info("assigned partition(s) %s of %s: rebuilding their tables",
                 sorted(partitions), DEALER_INPUTS_TOPIC)
        s.runtime.on_assigned()

    await consume(s.app, [DEALER_INPUTS_TOPIC], partial(resume_at, s),
                  retried_on_transient(partial(decide_batch, s), "deciding inputs"),
                  drop_tables_on_revoke, rebuild_on_assign)


async def resume_at(s: DealerEvent, tp: TP) -> int | None:
    """Where a partition of dealer.inputs resumes: after the last input the rebuilt log
    says was decided (None: its records name no input; the loop then takes the group's
    commit, else the start)."""
    return (await s.runtime.resume_offsets()).get(tp.partition)


async def betting_timer(s: DealerEvent) -> None:  # a timer (register registers it)
    try:
        await s.runtime.tick_all()
    except Exception:
        log.exception("closing overdue betting windows failed; next tick retries")
