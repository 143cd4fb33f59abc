"""dealer-event as a Faust worker: `dealer.inputs` in, `table.events` and
`dealer.rejections` out, an HTTP door for table devices and supervisors.

Its state is the fold of its own log, `dealer.log` (one chained entry per decided input,
on the input's partition; `dealer_fold`): each table's state is the events its entries
sealed. The loop runs on the kernel (`services.infra.kernel.run_own_log`): a worker
assigned a partition folds that partition of its own log first, publishes what its outbox
holds, and resumes `dealer.inputs` after the last input the log decided (the consumer
group's commit only saves time). Events and refusals are published from the entries once
they are verified in the log; a worker that lost the partition and has not noticed (a
zombie) writes void entries that no fold and no reader takes (docs/decisions/
dealer-fencing.md). Several workers share the group and split the partitions
(docs/decisions/tables.md); the HTTP door forwards a request to the worker that owns the
table.

The betting timer decides nothing itself: for each owned table whose window ran out, or
whose round is left hanging, it puts a `TimerTick` on `dealer.inputs`, decided like any
input.

This module is the worker's loop and timer, functions of the `DealerEvent` that
`services.dealer_event.bootstrap` builds when the worker starts; importing it builds
nothing.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from services.dealer_event.dealer_fold import tables_of
from services.infra.faust_app import bound
from services.infra.kernel import run_own_log
from shared.topics import DEALER_INPUTS_TOPIC

if TYPE_CHECKING:
    from services.dealer_event.bootstrap import DealerEvent

log = logging.getLogger(__name__)


def register(service: DealerEvent) -> None:
    """The worker's loop and betting timer on its app (the bootstrap calls it)."""
    service.app.task(bound(dealer_inputs, service))
    service.app.timer(interval=service.settings.betting_timer_interval_seconds)(
        bound(betting_timer, service))


async def dealer_inputs(s: DealerEvent) -> None:  # a task (register registers it)
    """The kernel's loop over dealer.inputs: decide, write the entries, verify, publish
    their events and refusals, answer."""
    await run_own_log(s.app, [DEALER_INPUTS_TOPIC], s.own, s.decisions.decide,
                      s.decisions.answer, revoked=s.decisions.moved)


async def betting_timer(s: DealerEvent) -> None:  # a timer (register registers it)
    """Ask for a tick on each owned table with something due (its window ran out, its
    round left hanging)."""
    try:
        for partition in sorted(s.own.owned):
            state = s.own.state(partition)
            if state is None:
                continue
            for asked in s.decisions.due_ticks(tables_of(state.kv).values()):
                await s.forward(asked.model_dump_json().encode(), asked.table_id)
    except Exception:
        log.exception("asking for the timer's ticks failed; the next tick asks again")
