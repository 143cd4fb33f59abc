"""Create a Faust app's own topics (table changelogs, private command topics) before the
worker starts.

When Faust creates them itself on a first start against a fresh broker, the consumer's
metadata can miss them: the agent then gets no partitions, or crashes with
PartitionsMismatch ("changelog has 0 partitions") on its first table write.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import faust
from kafka.errors import TopicAlreadyExistsError, TopicAuthorizationFailedError

from services.infra import gc_tuning, topic_admin
from services.infra.settings import Settings
from shared.topics import durability_configs, validate_retention


def ensure_private_topics(app: faust.App, settings: Settings, extra: tuple[str, ...] = (),
                          compacted: tuple[str, ...] = ()) -> None:
    """`extra`: private topics of records kept for the retention; `compacted`: private
    topics of a value per key (checkpoints), compacted often so a read stays short."""
    retention = str(validate_retention(settings.retention_ms))
    wanted = {name: {"cleanup.policy": "delete", "retention.ms": retention} for name in extra}
    wanted |= {name: {"cleanup.policy": "compact", "segment.ms": "600000",
                      "min.cleanable.dirty.ratio": "0.1"} for name in compacted}
    for table in app.tables.values():
        # a table may ask for more (e.g. `compact,delete` and a retention for keys that
        # may expire): `app.Table(..., extra_topic_configs={...})`
        wanted[table.changelog_topic_name] = {"cleanup.policy": "compact",
                                              **table_configs(table)}
    durable = durability_configs(settings.replication_factor)
    wanted = {name: {**durable, **configs} for name, configs in wanted.items()}
    # as the service itself: its principal may create topics under its own prefix only
    service = app.conf.id.removeprefix(f"{settings.instance}-")
    admin = topic_admin.admin_client(settings.bootstrap_servers, principal=service)
    try:
        missing = {n: c for n, c in wanted.items() if n not in set(admin.list_topics())}
        if not missing:
            return
        create_until_authorized(lambda: admin.create_topics(
            {name: {"num_partitions": settings.topic_partitions,
                    "replication_factor": settings.replication_factor,
                    "configs": configs} for name, configs in missing.items()},
            timeout_ms=15000))
        admin.wait_for_topics(list(missing), timeout_ms=30000)
    finally:
        admin.close()


def create_until_authorized(create: Callable[[], object], within_s: float = 15.0,
                            sleep: Callable[[float], None] = time.sleep) -> None:
    """`create()`, again while the broker refuses it for want of an ACL, for `within_s`:
    the ACLs `croupier topics apply` has just written reach the broker's authorizer a
    moment later (a CI run saw a wallet start in that moment and exit). Topics that exist
    already are fine; a refusal that outlasts `within_s` is raised."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            create()
            return
        except TopicAlreadyExistsError:
            return
        except TopicAuthorizationFailedError:
            if time.monotonic() >= deadline:
                raise
            sleep(0.5)


def table_configs(table) -> dict[str, str]:
    return {k: str(v) for k, v in (getattr(table, "extra_topic_configs", None) or {}).items()}


def run_worker(app: faust.App, settings: Settings, extra: tuple[str, ...] = (),
               compacted: tuple[str, ...] = ()) -> None:
    """Every service's `__main__`: no development secret in production, its own topics,
    the collector's settings (`gc_tuning`), then the Faust worker."""
    settings.require_production_secrets(app.conf.id)
    ensure_private_topics(app, settings, extra, compacted)
    gc_tuning.tune()
    app.main()
