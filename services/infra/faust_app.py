"""One way to build a service's Faust app, so every service agrees on the broker,
the store, the web port and the delivery settings.

Delivery is at least once (`processing_guarantee='at_least_once'`); correctness
comes from idempotent consumers and deterministic ids, never from Kafka
transactions. Payloads are raw bytes: each service parses them with the pydantic
contracts in `shared.events`, so a malformed record is rejected with a reason
instead of crashing the codec.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import faust
from aiokafka.partitioner import DefaultPartitioner, murmur2
from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread, Producer
from faust.types import AppT

from services.infra import service_table
from services.infra.kafka_clients import DURABLE_PRODUCER
from services.infra.kafka_security import faust_credentials
from services.infra.settings import Settings, get_settings

# Faust asks the broker to hold a fetch up to 1.5 s and aiokafka keeps one fetch in flight
# per broker: a record for a partition that just drained waits behind a fetch parked on
# the others, and every hop of a round (and every HTTP answer that waits on an agent)
# stalls up to 1.5 s. Faust has no setting for it; 20 ms bounds that wait.
FETCH_MAX_WAIT_MS = 20
_create_worker_consumer = AIOKafkaConsumerThread._create_worker_consumer


def _quick_fetching_consumer(self, transport):
    consumer = _create_worker_consumer(self, transport)
    consumer._fetch_max_wait_ms = FETCH_MAX_WAIT_MS
    return consumer


AIOKafkaConsumerThread._create_worker_consumer = _quick_fetching_consumer  # type: ignore[method-assign]  # deliberate patch


def _durable_settings(self) -> dict:
    """Faust makes its producer idempotent only inside a transaction (which we never use):
    ours is always durable (services.infra.kafka_clients), so a send retried across
    a leader change is written once."""
    return dict(DURABLE_PRODUCER)


Producer._settings_extra = _durable_settings  # type: ignore[method-assign]  # deliberate patch


class KeyHashes:
    """aiokafka's `DefaultPartitioner` (murmur2 of the key, positive, modulo the partition
    count; a random available partition for no key), each key's hash remembered: the keys
    are players and tables, a working set a worker sees again and again, and aiokafka's
    murmur2 is pure Python (6-10 µs a key here, three or four times a bet in the wallet)."""

    KEPT = 100_000  # hashes remembered (all forgotten at once past this)

    def __init__(self) -> None:
        self._hashes: dict[bytes, int] = {}

    def __call__(self, key: bytes | None, all_partitions: list[int], available: list[int]
                 ) -> int:
        if key is None:
            return DefaultPartitioner()(key, all_partitions, available)
        hashed = self._hashes.get(key)
        if hashed is None:
            if len(self._hashes) >= self.KEPT:
                self._hashes.clear()
            hashed = self._hashes[key] = murmur2(key) & 0x7FFFFFFF
        return all_partitions[hashed % len(all_partitions)]



def service_port(settings: Settings, service: str) -> int:
    """The HTTP port of a service's first worker (`services.infra.service_table`)."""
    return service_table.service(service).port(settings)


WORKER_PORT_STEP = 100  # worker i of a service: its port + 100·i (8104, 8204, ...)


def port_of_worker(settings: Settings, service: str, worker: int) -> int:
    """The default port of a service's worker i: clear of the other services' ports."""
    return service_port(settings, service) + WORKER_PORT_STEP * worker


def worker_port(settings: Settings, service: str) -> int:
    """This worker's HTTP port: `web_port` if set, else the default for its worker id."""
    if settings.web_port is not None:
        return settings.web_port
    return port_of_worker(settings, service, settings.worker_id)


def advertised_host(settings: Settings) -> str:
    """Where the other workers reach this one: `web_host`, or with `auto` this host's own
    address (a compose replica's container address)."""
    if settings.web_host != "auto":
        return settings.web_host
    return socket.gethostbyname(socket.gethostname())


def make_app(service: str, settings: Settings | None = None, *, persistent: bool = True,
             **overrides) -> faust.App:
    settings = settings or get_settings()
    # each worker its own store: two rocksdb stores can never share a directory
    data_dir = (settings.home / service / f"worker-{settings.worker_id}").resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    config = dict(
        broker=[f"kafka://{host}" for host in settings.bootstrap_servers.split(",")],
        broker_credentials=faust_credentials(service, settings),  # the service's own principal
        store="rocksdb://" if persistent else "memory://",
        datadir=str(data_dir),
        topic_partitions=settings.topic_partitions,
        # the topics Faust creates itself (its leader topic) as durable as the catalogue's
        topic_replication_factor=settings.replication_factor,
        processing_guarantee="at_least_once",
        producer_acks=-1,
        consumer_auto_offset_reset="earliest",
        web_bind=settings.web_bind,
        web_host=advertised_host(settings),  # canonical URL: where other workers forward requests
        web_port=worker_port(settings, service),
        web_in_thread=False,
        key_serializer="raw",
        value_serializer="raw",
        producer_partitioner=KeyHashes(),
    )
    config.update(overrides)
    app = faust.App(f"{settings.instance}-{service}", **config)
    _built[app.conf.id] = (service, settings)
    return app


_built: dict[str, tuple[str, Settings]] = {}  # app id: the service and settings it was built for


def service_of(app: AppT) -> str:
    """The service an app belongs to (also its Kafka principal)."""
    return _built[app.conf.id][0]


def settings_of(app: AppT) -> Settings:
    """The settings an app was built with."""
    return _built[app.conf.id][1]


def topic(app: faust.App, name: str) -> faust.TopicT:
    """A catalogue topic (created by `croupier topics apply`, never by the service)."""
    return app.topic(name, key_type=bytes, value_type=bytes, internal=False)


def bound(fun: Callable[..., Awaitable[None]], *args: Any) -> Callable[[], Awaitable[None]]:
    """`fun(*args)` as a task or timer takes it (no argument), under `fun`'s own name: a
    service's loops are functions of the service object its bootstrap built, never of
    module globals."""
    async def run() -> None:
        await fun(*args)

    run.__module__, run.__name__, run.__qualname__ = fun.__module__, fun.__name__, fun.__qualname__
    run.__doc__ = fun.__doc__
    return run


def bound_view(view: type[faust.web.View], service: Any) -> type[faust.web.View]:
    """`view` with its `service` attribute set to the object the bootstrap built, as a
    page takes it: built once, at registration, never per request."""
    return type(view.__name__, (view,), {"service": service})


def writer_name(settings: Settings, service: str) -> str:
    """The name an own log's entries are written under: unique to this process's life, so
    no two lives of a worker share an entry id."""
    return f"{settings.instance}-{service}-{settings.worker_id}-{uuid.uuid4().hex[:8]}"
