"""What every service exports, installed with one line: `install(app, "wallet")`.

- `GET /metrics`: the Prometheus text exposition of `services.infra.metrics`;
- an HTTP sensor counting requests by route template, method and status, with durations;
- a consumer-lag timer: every few seconds, in a thread, the group's committed offsets
  (`KafkaAdminClient.list_group_offsets`) of the partitions assigned to this worker
  against their end offsets, summed per topic into
  `croupier_consumer_lag_records{service,topic}` (summed over workers, the group's lag);
- `health_problems(app)`: what /health reports: recovering, or stalled (records wait
  and no batch finished for `stall_seconds`). A Kafka hiccup is
  logged and the next tick tries again with fresh clients; it never stops the service;
- `croupier_service_up{service} = 1`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from time import monotonic
from typing import Any, cast

import faust
from faust.sensors.base import Sensor
from faust.tables.manager import TableManager
from faust.types import AppT
from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient

from services.infra import metrics
from services.infra.consumer import assignment_of, group_of, settling
from services.infra.kafka_clients import admin_client
from services.infra.kafka_security import kafka_python_options
from services.infra.settings import Settings, get_settings

log = logging.getLogger("croupier.observability")
UNMATCHED_ROUTE = "unmatched"


# ------------------------------------------------------------------------- HTTP

def route_template(request: Any) -> str:
    """The aiohttp route template of a request (`/accounts/{player_id}`), never the raw
    path: ids in paths would make the label unbounded."""
    try:
        resource = request.match_info.route.resource
    except AttributeError:
        return UNMATCHED_ROUTE
    canonical = getattr(resource, "canonical", None)
    return canonical if isinstance(canonical, str) and canonical else UNMATCHED_ROUTE


class HttpSensor(Sensor):
    """Counts each request handled by a Faust view; an exception is a 500."""

    def __init__(self, service: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.service = service

    def on_web_request_start(self, app: AppT, request: Any, *, view: Any = None
                             ) -> dict:
        return {"time_start": monotonic()}

    def on_web_request_end(self, app: AppT, request: Any, response: Any, state: dict,
                           *, view: Any = None) -> None:
        route = route_template(request)
        status = str(getattr(response, "status", 500)) if response is not None else "500"
        metrics.child(metrics.HTTP_REQUESTS, self.service, route, request.method, status).inc()
        metrics.child(metrics.HTTP_LATENCY, self.service, route).observe(
            monotonic() - state.get("time_start", monotonic()))


# -------------------------------------------------------------------------- lag

def lag_by_topic(committed: Mapping[TopicPartition, int | None],
                 ends: Mapping[TopicPartition, int]) -> dict[str, int]:
    """Records behind per topic: Σ over the group's committed partitions of end − committed
    (never negative; partitions with no committed offset or no known end are left out)."""
    lag: dict[str, int] = {}
    for tp, offset in committed.items():
        if offset is None or offset < 0 or tp not in ends:
            continue
        lag[tp.topic] = lag.get(tp.topic, 0) + max(0, ends[tp] - offset)
    return lag


class Progress:
    """Whether this worker's consumer moves: when it last finished a batch, and how far
    behind its partitions are. Idle with nothing to read is fine; records waiting while
    no batch finishes for `stall_s` seconds is a stuck consumer (a poison record retried
    forever, a wedged agent), and /health must say so instead of 200."""

    def __init__(self) -> None:
        self.finished_at = monotonic()
        self.lag = 0
        self.behind_since: float | None = None

    def batch_finished(self) -> None:
        self.finished_at = monotonic()

    def lag_measured(self, lag: int) -> None:
        if lag > 0 and self.lag == 0:
            self.behind_since = monotonic()
        self.lag = lag

    def stalled_for(self, now: float | None = None) -> float:
        """Seconds with records waiting and no batch finished (0 when none wait)."""
        if self.lag <= 0:
            return 0.0
        now = monotonic() if now is None else now
        return max(0.0, now - max(self.finished_at, self.behind_since or 0.0))


_progress: dict[str, Progress] = {}


def progress_of(app: AppT) -> Progress:
    return _progress.setdefault(app.conf.id, Progress())


def health_problems(app: faust.App, settings: Settings | None = None) -> list[str]:
    """Why this worker should not be sent traffic right now (empty: healthy)."""
    settings = settings or get_settings()
    problems = []
    # app.tables is faust's TableManager (TableManagerT does not declare its `recovery`)
    if settling(app) or not cast(TableManager, app.tables).recovery.completed.is_set():
        problems.append("recovering: partitions moving or tables still recovering")
    stalled = progress_of(app).stalled_for()
    if stalled > settings.stall_seconds:
        problems.append(f"stalled: {progress_of(app).lag} record(s) waiting and no batch "
                        f"finished for {stalled:.0f} s")
    return problems


class LagProbe:
    """Blocking Kafka clients, used from a thread; recreated after any failure."""

    def __init__(self, bootstrap: str, group_id: str, principal: str) -> None:
        self.bootstrap = bootstrap
        self.group_id = group_id
        self.principal = principal  # the service's own: it may describe its group
        self._admin: KafkaAdminClient | None = None
        self._consumer: KafkaConsumer | None = None
        self.reported: set[str] = set()  # topics whose lag gauge this worker set

    def measure(self, assigned: set[TopicPartition] | None = None) -> dict[str, int]:
        """Lag per topic of the group's partitions (only `assigned` ones, if given)."""
        if self._admin is None:
            self._admin = admin_client(self.bootstrap, self.principal,
                                       client_id=f"{self.group_id}-lag", timeout_s=5.0)
        if self._consumer is None:
            self._consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=None,
                                           enable_auto_commit=False,
                                           client_id=f"{self.group_id}-lag",
                                           request_timeout_ms=5000,
                                           **kafka_python_options(self.principal))
        offsets = self._admin.list_group_offsets(self.group_id).get(self.group_id, {})
        committed = {tp: meta.offset for tp, meta in offsets.items()
                     if assigned is None or tp in assigned}
        ends = self._consumer.end_offsets(list(committed)) if committed else {}
        return lag_by_topic(committed, ends)

    def close(self) -> None:
        for client in (self._admin, self._consumer):
            if client is not None:
                try:
                    client.close()
                except Exception:  # noqa: BLE001 - closing a broken client may fail too
                    log.debug("closing a lag client failed", exc_info=True)
        self._admin = self._consumer = None


async def update_lag(probe: LagProbe, service: str, app: faust.App | None = None) -> None:
    try:
        assigned = None if app is None else {
            TopicPartition(tp.topic, tp.partition) for tp in assignment_of(app)}
        if app is not None:
            probe.group_id = group_of(app)
        lag = await asyncio.to_thread(probe.measure, assigned)
    except Exception as exc:  # noqa: BLE001 - Kafka may hiccup; the next tick retries
        log.warning("measuring consumer lag of %s failed (next tick retries): %s",
                    probe.group_id, exc)
        await asyncio.to_thread(probe.close)
        return
    for topic in probe.reported - set(lag):  # no longer assigned here: nothing waits here
        metrics.CONSUMER_LAG.labels(service, topic).set(0)
    for topic, records in lag.items():
        metrics.CONSUMER_LAG.labels(service, topic).set(records)
    probe.reported = set(lag)
    if app is not None:
        progress_of(app).lag_measured(sum(lag.values()))


# ---------------------------------------------------------------------- install

class MetricsView(faust.web.View):
    async def get(self, request: faust.web.Request) -> faust.web.Response:
        body, content_type = metrics.exposition()
        # aiohttp takes the charset apart from the content type (utf-8 is the default)
        media = "; ".join(p for p in content_type.split("; ") if not p.startswith("charset="))
        return self.bytes(body, content_type=media)


def install(app: faust.App, service: str, settings: Settings | None = None, *,
            invariants: tuple[str, ...] = ()) -> LagProbe:
    """GET /metrics, the HTTP sensor, the consumer-lag timer and the up gauge; the
    `invariants` this service checks start at 0."""
    settings = settings or get_settings()
    app.page("/metrics")(MetricsView)
    app.sensors.add(HttpSensor(service))
    probe = LagProbe(settings.bootstrap_servers, app.conf.id, principal=service)

    async def consumer_lag() -> None:
        await update_lag(probe, service, app)

    consumer_lag.__qualname__ = consumer_lag.__name__ = f"consumer_lag_{service}"
    app.timer(interval=settings.lag_interval_seconds)(consumer_lag)
    metrics.UP.labels(service).set(1)
    metrics.init_series(metrics.INVARIANT_BREACHES, invariants)
    return probe
