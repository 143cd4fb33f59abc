"""What every service exports, installed with one line: `install(app, "wallet")`.

- `GET /metrics`: the Prometheus text exposition of `services.infra.metrics`;
- an HTTP sensor counting requests by route template, method and status, with durations;
- a consumer-lag timer: every few seconds, in a thread, the group's committed offsets
  (`KafkaAdminClient.list_group_offsets`) against the partitions' end offsets, summed
  per topic into `croupier_consumer_lag_records{service,topic}`. A Kafka hiccup is
  logged and the next tick tries again with fresh clients; it never stops the service;
- `croupier_service_up{service} = 1`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from time import monotonic
from typing import Any

import faust
from faust.sensors.base import Sensor
from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient

from services.infra import metrics
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

    def on_web_request_start(self, app: faust.App, request: Any, *, view: Any = None
                             ) -> dict:
        return {"time_start": monotonic()}

    def on_web_request_end(self, app: faust.App, request: Any, response: Any, state: dict,
                           *, view: Any = None) -> None:
        route = route_template(request)
        status = str(getattr(response, "status", 500)) if response is not None else "500"
        metrics.HTTP_REQUESTS.labels(self.service, route, request.method, status).inc()
        metrics.HTTP_LATENCY.labels(self.service, route).observe(
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


class LagProbe:
    """Blocking Kafka clients, used from a thread; recreated after any failure."""

    def __init__(self, bootstrap: str, group_id: str, principal: str) -> None:
        self.bootstrap = bootstrap
        self.group_id = group_id
        self.principal = principal  # the service's own: it may describe its group
        self._admin: KafkaAdminClient | None = None
        self._consumer: KafkaConsumer | None = None

    def measure(self) -> dict[str, int]:
        if self._admin is None:
            self._admin = KafkaAdminClient(bootstrap_servers=self.bootstrap,
                                           client_id=f"{self.group_id}-lag",
                                           request_timeout_ms=5000,
                                           **kafka_python_options(self.principal))
        if self._consumer is None:
            self._consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=None,
                                           enable_auto_commit=False,
                                           client_id=f"{self.group_id}-lag",
                                           request_timeout_ms=5000,
                                           **kafka_python_options(self.principal))
        offsets = self._admin.list_group_offsets(self.group_id).get(self.group_id, {})
        committed = {tp: meta.offset for tp, meta in offsets.items()}
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


async def update_lag(probe: LagProbe, service: str) -> None:
    try:
        lag = await asyncio.to_thread(probe.measure)
    except Exception as exc:  # noqa: BLE001 - Kafka may hiccup; the next tick retries
        log.warning("measuring consumer lag of %s failed (next tick retries): %s",
                    probe.group_id, exc)
        await asyncio.to_thread(probe.close)
        return
    for topic, records in lag.items():
        metrics.CONSUMER_LAG.labels(service, topic).set(records)


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
        await update_lag(probe, service)

    consumer_lag.__qualname__ = consumer_lag.__name__ = f"consumer_lag_{service}"
    app.timer(interval=settings.lag_interval_seconds)(consumer_lag)
    metrics.UP.labels(service).set(1)
    metrics.init_series(metrics.INVARIANT_BREACHES, invariants)
    return probe
