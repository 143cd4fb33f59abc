"""The kernel's consumer: one aiokafka consumer per worker, outside Faust's.

faust-streaming stays the runtime of a service (App, `worker`, web views, timers, the
producer), but its consumer decides neither what a worker reads nor from where: it can
commit past a record nobody processed (faust-streaming #606), hand a partition on with a
hole in it, or stop fetching a partition it was assigned (#166, #629). So the kernel reads
its inputs with its own consumer, in its own group (`<instance>-<service>-kernel`, under
the service's ACL prefix):

- **Where a partition resumes is the service's own log's word.** A newly assigned input
  partition is paused until the kernel has recovered its own-log partition; then it is
  positioned at `PartitionState.resume_at` (after the last input the log applied) and
  resumed. The group's committed offset only tells monitoring how far the group got.
- **Co-partitioned inputs go together.** Partition p of every input topic is assigned to
  the same worker (a service's inputs share their partition count and key, and partition
  p of its own log is written by whoever holds partition p of its inputs).
- **Who holds what is known to all** (`Owners`): each member puts its HTTP URL in its join
  metadata, and the leader's assignment gives every member the whole map, as Faust's
  assignor does, so a view forwards a request to the worker holding its key's partition
  (`services.infra.routing`).
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.cluster import ClusterMetadata
from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)
from faust.types import TP

log = logging.getLogger(__name__)


@dataclass
class Owners:
    """This worker's view of its group: what it holds, and which worker holds the rest."""

    url: str  # this worker's canonical URL (where the others forward requests)
    group: str  # the kernel consumer's group
    held: set[TP] = field(default_factory=set)  # assigned to this worker now
    ready: set[TP] = field(default_factory=set)  # assigned, recovered and positioned
    rebalancing: bool = True  # until the first assignment
    # topic -> partition -> URL of the worker holding it (the last assignment's)
    table: dict[str, dict[int, str]] = field(default_factory=dict)

    def owner(self, topic: str, partition: int) -> str | None:
        """The URL of the worker holding the partition, if the group has assigned it."""
        return self.table.get(topic, {}).get(partition)


class OwnersAssignor(AbstractPartitionAssignor):
    """Partition p of every topic to one member (members in the order of their URLs, p
    modulo their number), and the whole map to every member."""

    name = "croupier-owners"
    version = 0

    def __init__(self, owners: Owners) -> None:
        self.owners = owners

    def metadata(self, topics: Iterable[str]) -> ConsumerProtocolMemberMetadata:
        return ConsumerProtocolMemberMetadata(
            self.version, sorted(topics), json.dumps({"url": self.owners.url}).encode())

    def assign(self, cluster: ClusterMetadata,
               members: Mapping[str, ConsumerProtocolMemberMetadata]
               ) -> dict[str, ConsumerProtocolMemberAssignment]:
        return assign(cluster, members)

    def on_assignment(self, assignment: ConsumerProtocolMemberAssignment) -> None:
        try:
            table = json.loads(assignment.user_data or b"{}")
        except ValueError:
            log.error("the group's assignment names no owners: routing waits for the next one")
            return
        self.owners.table = {t: {int(p): url for p, url in parts.items()}
                             for t, parts in table.items()}


def url_of(metadata: ConsumerProtocolMemberMetadata) -> str:
    try:
        return str(json.loads(metadata.user_data or b"{}").get("url", ""))
    except ValueError:
        return ""


def assign(cluster: ClusterMetadata, members: Mapping[str, ConsumerProtocolMemberMetadata]
           ) -> dict[str, ConsumerProtocolMemberAssignment]:
    """The group's assignment (`OwnersAssignor`): pure, so it is tested without a broker."""
    order = sorted(members, key=lambda m: (url_of(members[m]), m))
    topics = sorted({t for m in members.values() for t in m.subscription})
    partitions = {t: sorted(cluster.partitions_for_topic(t) or ()) for t in topics}
    numbers = sorted({p for ps in partitions.values() for p in ps})
    holder = {p: order[i % len(order)] for i, p in enumerate(numbers)} if order else {}
    table = {t: {str(p): url_of(members[holder[p]]) for p in ps}
             for t, ps in partitions.items()}
    user_data = json.dumps(table).encode()
    return {member: ConsumerProtocolMemberAssignment(
        OwnersAssignor.version,
        [(t, [p for p in partitions[t] if holder[p] == member])
         for t in topics if t in members[member].subscription],
        user_data) for member in members}


class _Listener(ConsumerRebalanceListener):
    """Revoked partitions are no longer answered for; assigned ones wait, paused, until
    the kernel has recovered and positioned them (`Owners.ready`)."""

    def __init__(self, consumer: AIOKafkaConsumer, owners: Owners, revoked, assigned) -> None:
        self.consumer = consumer
        self.owners = owners
        self.revoked = revoked
        self.assigned = assigned

    async def on_partitions_revoked(self, revoked: Iterable[TopicPartition]) -> None:
        gone = {TP(tp.topic, tp.partition) for tp in revoked}
        self.owners.rebalancing = True
        self.owners.held -= gone
        self.owners.ready -= gone
        told = self.revoked({tp.partition for tp in gone})
        if inspect.isawaitable(told):
            await told

    async def on_partitions_assigned(self, assigned: Iterable[TopicPartition]) -> None:
        tps = list(assigned)
        self.owners.held = {TP(tp.topic, tp.partition) for tp in tps}
        self.owners.ready &= self.owners.held
        waiting = [tp for tp in tps if TP(tp.topic, tp.partition) not in self.owners.ready]
        if waiting:
            self.consumer.pause(*waiting)
        self.owners.rebalancing = False
        log.info("assigned %s", sorted((tp.topic, tp.partition) for tp in tps))
        if self.assigned is not None:
            told = self.assigned({tp.partition for tp in tps})
            if inspect.isawaitable(told):
                await told


def kernel_group(instance: str, service: str) -> str:
    """The kernel consumer's group: under the service's ACL prefix, apart from Faust's."""
    return f"{instance}-{service}-kernel"


# A fetch is answered once it has FETCH_MIN_BYTES, or after FETCH_MAX_WAIT_MS: under load
# a worker fetches a few times per hop's round trip instead of once per record or two (each
# fetch a request the broker and the client handle), and its batches are larger; idle, a
# record waits at most FETCH_MAX_WAIT_MS more before it is read.
FETCH_MIN_BYTES = 16_384
FETCH_MAX_WAIT_MS = 10


def new_consumer(bootstrap: str, group: str, owners: Owners, options: dict,
                 session_timeout_ms: int, heartbeat_interval_ms: int) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
        auto_offset_reset="earliest", partition_assignment_strategy=(OwnersAssignor(owners),),
        session_timeout_ms=session_timeout_ms, heartbeat_interval_ms=heartbeat_interval_ms,
        max_poll_interval_ms=300_000, fetch_max_wait_ms=FETCH_MAX_WAIT_MS,
        fetch_min_bytes=FETCH_MIN_BYTES, **options)


def subscribe(consumer: AIOKafkaConsumer, topics: Iterable[str], owners: Owners, revoked,
              assigned=None) -> None:
    consumer.subscribe(sorted(topics), listener=_Listener(consumer, owners, revoked, assigned))


_owners: dict[str, Owners] = {}  # app id: its kernel consumer's view (kernel services only)


def register(app_id: str, owners: Owners) -> Owners:
    _owners[app_id] = owners
    return owners


def owners_of(app) -> Owners | None:
    """The kernel consumer's view of an app's group; None for an app whose records Faust's
    consumer still reads (dealer-event, until it moves onto the kernel)."""
    return _owners.get(app.conf.id)


def assignment_of(app) -> set[TP]:
    """The input partitions this worker holds now."""
    owners = owners_of(app)
    if owners is not None:
        return set(owners.held)
    try:
        return set(app.consumer.assignment())
    except Exception:  # noqa: BLE001 - no consumer yet
        return set()


def settling(app) -> bool:
    """Partitions are moving, or some this worker holds are not recovered yet: it must not
    answer for their keys."""
    owners = owners_of(app)
    if owners is not None:
        return owners.rebalancing or owners.held != owners.ready
    return bool(app.rebalancing)


def group_of(app) -> str:
    """The consumer group whose committed offsets say how far this app's inputs got."""
    owners = owners_of(app)
    return owners.group if owners is not None else str(app.conf.id)


def group_reading(instance: str, service: str, topic: str) -> str:
    """The consumer group whose commits say how far `service` has read `topic` (for
    monitoring and tests: where a service resumes is its own log's word)."""
    return kernel_group(instance, service)
