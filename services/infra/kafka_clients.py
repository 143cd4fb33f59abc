"""How our clients talk to a cluster that may have a node down.

The one way our producers write: every acknowledged record is on `min.insync.replicas`
copies and a retried send is never written twice.

`acks=all` waits for every in-sync replica (with replication 3 and
`min.insync.replicas=2`, an acknowledged write survives the loss of any one node), and
the idempotent producer numbers each batch, so a send retried across a leader change
lands once. Every producer of ours takes `DURABLE_PRODUCER`: kafka-python's through
`durable_producer`, the services' Faust producer through `faust_app`, and aiokafka's by
passing it (the option names are the same).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, cast

from kafka import KafkaAdminClient, KafkaProducer
from kafka.errors import KafkaConnectionError, NodeNotReadyError

from services.infra.kafka_security import ADMIN, apply_acls, kafka_python_options, secured
from services.infra.settings import get_settings

DURABLE_PRODUCER: dict[str, Any] = {"acks": "all", "enable_idempotence": True}
# kafka-python refreshes its metadata when a reconnect to a node fails, and spaces those
# attempts by a backoff doubling up to 30 s by default: after a leader dies, a producer
# found the new leader up to 15 s after the cluster named it (benchmarks/bench_cluster.py).
# Capped at 1 s it finds it within about a second. aiokafka (Faust) refreshes on the
# broker's NotLeader answer instead and has no such backoff.
FAILOVER: dict[str, Any] = {"reconnect_backoff_max_ms": 1000}


def durable_producer(bootstrap: str, principal: str, settings=None, **options: Any
                     ) -> KafkaProducer:
    """A kafka-python producer acting as `principal`, durable (`DURABLE_PRODUCER`); a
    caller's `options` tune batching, never acks or idempotence."""
    clash = set(options) & set(DURABLE_PRODUCER)
    if clash:
        raise ValueError(f"a producer of ours is always durable; drop {sorted(clash)}")
    return KafkaProducer(bootstrap_servers=bootstrap, **{**FAILOVER, **options},
                         **DURABLE_PRODUCER, **kafka_python_options(principal, settings))


# An admin request goes to one node, picked by kafka-python; with that node down it fails
# at once (KafkaConnectionError) instead of asking another: a cluster with a node down is
# still a cluster, so the request is sent again and goes to a live node.
ADMIN_RETRIES = 6
_RETRIED = (KafkaConnectionError, NodeNotReadyError)


class ResilientAdmin:
    """A KafkaAdminClient whose requests are sent again, up to ADMIN_RETRIES times, when the
    node they went to cannot be reached; anything else the broker answers is raised."""

    def __init__(self, client: KafkaAdminClient, sleep: Callable[[float], None] = time.sleep
                 ) -> None:
        self._client = client
        self._sleep = sleep

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr) or name == "close":
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            for attempt in range(ADMIN_RETRIES):
                try:
                    return attr(*args, **kwargs)
                except _RETRIED:
                    if attempt == ADMIN_RETRIES - 1:
                        raise
                    self._sleep(0.2 * (attempt + 1))
            raise AssertionError("unreachable")
        return call


def admin_client(bootstrap: str, principal: str, *, client_id: str = "croupier-admin",
                 timeout_s: float = 15.0, settings=None) -> KafkaAdminClient:
    """An admin client acting as `principal` that rides through a node being down."""
    client = KafkaAdminClient(bootstrap_servers=bootstrap, client_id=client_id,
                              request_timeout_ms=int(timeout_s * 1000),
                              bootstrap_timeout_ms=int(timeout_s * 1000), **FAILOVER,
                              **kafka_python_options(principal, settings))
    return cast(KafkaAdminClient, ResilientAdmin(client))


def ensure_acls(bootstrap: str, instance: str, settings=None) -> int:
    """As the admin principal: the instance's ACLs, if the cluster is secured and the
    settings ask us to manage them (an external cluster's own admins may not)."""
    settings = settings or get_settings()
    if not secured(settings) or not settings.kafka_manage_acls:
        return 0
    admin = admin_client(bootstrap, ADMIN, client_id="croupier-acls", settings=settings)
    try:
        return apply_acls(admin, instance)
    finally:
        admin.close()
