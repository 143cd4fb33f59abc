"""The topic catalogue as declared state: applied to a live cluster, idempotently, and
checked against it.

`apply` creates missing topics with their partitions, replication and configs and sets
every declared config that differs (incremental alter, so configs the operator set by
hand on other keys are left alone). A second `apply` changes nothing. What it will not
change is reported as drift, never silently ignored: a partition count other than the
declared one (every topic is keyed, and more partitions would move keys to other
partitions: a table's or a player's records would no longer be in one ordered log), and
a replication factor other than the declared one (that is a reassignment of replicas,
docs/operator-guide.md). A replication factor above the brokers that are up is refused
before anything is written. Created topics are waited for until every new partition's
leader answers for it, so the first writes after `apply` are taken at once. `check`
lists every difference and changes nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from kafka import TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
from kafka.errors import KafkaTimeoutError

from services.infra import kafka_clients, kafka_security
from services.infra.log_reader import log_reader
from shared.topics import TopicSpec, topic_catalogue

SERVED_WITHIN_S = 60.0  # how long `apply` waits for new partitions' leaders to answer


class ReplicationRefused(RuntimeError):
    """The catalogue asks for more copies of a partition than the cluster has brokers up."""


class TopicsNotServed(RuntimeError):
    """Topics were created, but not every new partition's leader answered in time."""


@dataclass(frozen=True)
class TopicState:
    name: str
    partitions: int
    configs: dict[str, str]
    replication: int = 1  # the fewest replicas any of its partitions has


def catalogue_of(settings, retention_ms: int | None = None) -> tuple[TopicSpec, ...]:
    """The catalogue as the settings declare it: retention, partitions, replication."""
    return topic_catalogue(retention_ms=retention_ms or settings.retention_ms,
                           partitions=settings.topic_partitions,
                           replication=settings.replication_factor)


def live_broker_count(admin: KafkaAdminClient) -> int:
    """The brokers the cluster's metadata lists as unfenced now."""
    return sum(1 for b in admin.describe_cluster()["brokers"] if not b.get("is_fenced"))


def require_brokers_for(admin: KafkaAdminClient, replication: int) -> None:
    """Refuse a replication factor the cluster cannot place, naming the setting."""
    brokers = live_broker_count(admin)
    if replication > brokers:
        raise ReplicationRefused(
            f"replication factor {replication} needs at least {replication} brokers up; the "
            f"cluster has {brokers}. Set CROUPIER_TOPIC_REPLICATION_FACTOR (or "
            f"CROUPIER_KAFKA_BROKERS, from which it defaults) to at most {brokers}, or bring "
            "the missing brokers up (`croupier kafka up`).")


@dataclass
class ApplyReport:
    created: list[str] = field(default_factory=list)
    configs_changed: dict[str, dict[str, tuple[str | None, str]]] = field(default_factory=dict)
    drift: list[str] = field(default_factory=list)
    acls: int = 0  # ACLs sent (creating one that exists changes nothing)

    @property
    def changed(self) -> bool:
        return bool(self.created or self.configs_changed)


def admin_client(bootstrap: str, principal: str = kafka_security.ADMIN) -> KafkaAdminClient:
    """An admin client acting as `principal` (the admin principal unless a service creates
    its own private topics), riding through a node being down."""
    return kafka_clients.admin_client(bootstrap, principal, client_id="croupier-topics")


def describe(admin: KafkaAdminClient, names: list[str]) -> dict[str, TopicState]:
    """Live partitions and every config value (defaults included) of the named topics."""
    existing = set(admin.list_topics())
    present = [n for n in names if n in existing]
    if not present:
        return {}
    described = {t["name"]: t["partitions"] for t in admin.describe_topics(present)}
    resources = [ConfigResource(ConfigResourceType.TOPIC, n) for n in present]
    answer = admin.describe_configs(resources, config_filter="all")
    configs = _configs_by_topic(answer)
    return {n: TopicState(n, len(described[n]), configs.get(n, {}),
                          min((len(p["replica_nodes"]) for p in described[n]), default=0))
            for n in present}


def _configs_by_topic(answer) -> dict[str, dict[str, str]]:
    """describe_configs answers {"topic": {name: {key: {"value": ...}}}}; keep the values."""
    return {name: {key: str(entry["value"]) for key, entry in entries.items()}
            for name, entries in answer.get("topic", {}).items()}


def differences(catalogue: tuple[TopicSpec, ...], live: dict[str, TopicState]) -> list[str]:
    """Each difference between the catalogue and the cluster, one line each (`topics check`)."""
    lines = []
    for spec in catalogue:
        state = live.get(spec.name)
        if state is None:
            lines.append(f"{spec.name}: missing")
            continue
        if state.partitions != spec.partitions:
            lines.append(f"{spec.name}: partitions {state.partitions} live, "
                         f"{spec.partitions} declared")
        if state.replication != spec.replication:
            lines.append(f"{spec.name}: replication {state.replication} live, "
                         f"{spec.replication} declared")
        lines += [f"{spec.name}: {key} {state.configs.get(key)} live, {value} declared"
                  for key, value in spec.configs.items() if state.configs.get(key) != value]
    return lines


def wait_until_served(bootstrap: str, partitions: list[TopicPartition],
                      timeout_s: float = SERVED_WITHIN_S) -> None:
    """Until the leader of every one of `partitions` answers for it (its end offset). A
    leader named in the metadata can still answer "not leader" for seconds on a loaded
    cluster (16 s seen in a test run): `apply` returns once the first writes will be taken.
    Raises TopicsNotServed, naming what did not answer."""
    consumer = log_reader(bootstrap, kafka_security.ADMIN)
    deadline = time.monotonic() + timeout_s
    try:
        while (left_ms := int((deadline - time.monotonic()) * 1000)) > 0:
            try:
                consumer.end_offsets(partitions, timeout_ms=left_ms)
                return
            except KafkaTimeoutError:
                break
            except KeyError:  # kafka-python leaves out a partition its metadata has no
                time.sleep(0.2)  # leader for yet (no error): asked again, all of them
    finally:
        consumer.close()
    topics = sorted({tp.topic for tp in partitions})
    raise TopicsNotServed(
        f"the topics were created but the leaders of their partitions did not all answer "
        f"within {timeout_s:.0f} s: {', '.join(topics)}. Check `croupier kafka status`, then "
        "run `croupier topics apply` again (it changes nothing that exists)")


def check(admin: KafkaAdminClient, catalogue: tuple[TopicSpec, ...]) -> list[str]:
    """The differences between the catalogue and the cluster; changes nothing."""
    return differences(catalogue, describe(admin, [t.name for t in catalogue]))


def apply(admin: KafkaAdminClient, catalogue: tuple[TopicSpec, ...], *,
          acls_for: str | None = None) -> ApplyReport:
    """On a secured cluster (when the settings let us manage ACLs) the catalogue topics'
    ACLs are applied too, and with `acls_for` that platform instance's (its services'
    groups and private topics); `admin` must then act as the admin principal. Raises
    ReplicationRefused, before anything is written, if the catalogue asks for more
    replicas than the cluster has brokers up."""
    report = ApplyReport()
    require_brokers_for(admin, max((t.replication for t in catalogue), default=1))
    settings = kafka_security._settings()
    if kafka_security.secured(settings) and settings.kafka_manage_acls:
        report.acls = kafka_security.apply_acls(admin, acls_for)
    live = describe(admin, [t.name for t in catalogue])
    missing = [t for t in catalogue if t.name not in live]
    if missing:
        admin.create_topics(
            {t.name: {"num_partitions": t.partitions, "replication_factor": t.replication,
                      "configs": dict(t.configs)} for t in missing},
            timeout_ms=15000,
        )
        admin.wait_for_topics([t.name for t in missing], timeout_ms=30000)
        wait_until_served(admin.config["bootstrap_servers"],
                          [TopicPartition(t.name, p) for t in missing
                           for p in range(t.partitions)])
        report.created = [t.name for t in missing]
    for spec in catalogue:
        state = live.get(spec.name)
        if state is None:
            continue
        if state.partitions < spec.partitions:
            report.drift.append(
                f"{spec.name}: {state.partitions} partitions live, {spec.partitions} declared: "
                f"refused, the topic is keyed by {spec.key} and more partitions would move "
                "keys to other partitions (a key's records would no longer be in one ordered "
                "log); see docs/operator-guide.md, Adding partitions")
        elif state.partitions > spec.partitions:
            report.drift.append(
                f"{spec.name}: {state.partitions} partitions live, {spec.partitions} declared "
                "(Kafka cannot remove partitions; change the catalogue or recreate the topic)"
            )
        if state.replication != spec.replication:
            report.drift.append(
                f"{spec.name}: replication {state.replication} live, {spec.replication} "
                "declared (a reassignment of its replicas: docs/operator-guide.md, Replacing "
                "a broker)")
        changes = {k: (state.configs.get(k), v) for k, v in spec.configs.items()
                   if state.configs.get(k) != v}
        if changes:
            admin.alter_configs(
                [ConfigResource(ConfigResourceType.TOPIC, spec.name,
                                configs={k: ("SET", new) for k, (_, new) in changes.items()})],
                incremental=True,
            )
            report.configs_changed[spec.name] = changes
    return report
