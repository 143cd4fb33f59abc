"""dealer-event as a Faust worker: `dealer.inputs` in, `table.events` and
`dealer.rejections` out, an HTTP door for table devices and supervisors.

One worker per deployment (see docs/decisions/tables.md): table states live in
this process, rebuilt from the log at start, before the first input is decided.
"""

from __future__ import annotations

import asyncio
import logging

from services.dealer_event.rebuild import rebuild
from services.dealer_event.runtime import DealerRuntime, init_metrics, machine_config
from services.infra import observability
from services.infra.clock import SystemClock
from services.infra.faust_app import make_app, topic
from services.infra.settings import get_settings

log = logging.getLogger(__name__)

settings = get_settings()
# A short session: after a crash the restarted worker gets its partitions back in
# seconds instead of waiting a minute for the dead member to time out.
app = make_app("dealer-event", persistent=False, broker_session_timeout=8,
               broker_heartbeat_interval=1)
inputs_topic = topic(app, "dealer.inputs")
observability.install(app, "dealer-event", settings)
init_metrics()


async def _publish(topic_name: str, key: bytes, value: bytes) -> None:
    await app.producer.send_and_wait(topic_name, key, value, None, None, None)


async def _rebuild():
    return await asyncio.to_thread(rebuild, settings.bootstrap_servers)


runtime = DealerRuntime(machine_config(settings), SystemClock(), _publish, _rebuild)


@app.task
async def rebuild_on_start() -> None:
    await runtime.ensure_ready()


@app.agent(inputs_topic, concurrency=1)
async def dealer_inputs(stream):
    async for raw in stream:
        while True:
            try:
                await runtime.handle_raw(raw)
                break
            except Exception:  # publish failed: state rebuilds from the log, then retry
                log.exception("deciding an input failed; retrying after a rebuild")
                await asyncio.sleep(1.0)


@app.timer(interval=settings.betting_timer_interval_seconds)
async def betting_timer() -> None:
    try:
        await runtime.tick_all()
    except Exception:
        log.exception("closing overdue betting windows failed; next tick retries")


async def forward(raw: bytes, table_id: str) -> None:
    """The HTTP door puts what it received on `dealer.inputs`, like any device would."""
    await app.producer.send_and_wait("dealer.inputs", table_id.encode(), raw, None, None, None)


from services.dealer_event import views  # noqa: E402,F401  (registers the web routes)
