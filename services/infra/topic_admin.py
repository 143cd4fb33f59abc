"""Apply the topic catalogue to a live cluster, idempotently, and read back its state.

`apply` creates missing topics, adds partitions where the catalogue asks for more,
and sets every declared config that differs (incremental alter, so configs the
operator set by hand on other keys are left alone). A second `apply` changes
nothing. Fewer partitions than live cannot be applied (Kafka never shrinks a
topic): that is reported as drift, never silently ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from croupier.services.infra import kafka_security
from croupier.shared.topics import TopicSpec


@dataclass(frozen=True)
class TopicState:
    name: str
    partitions: int
    configs: dict[str, str]


@dataclass
class ApplyReport:
    created: list[str] = field(default_factory=list)
    partitions_added: dict[str, tuple[int, int]] = field(default_factory=dict)
    configs_changed: dict[str, dict[str, tuple[str | None, str]]] = field(default_factory=dict)
    drift: list[str] = field(default_factory=list)
    acls: int = 0  # ACLs sent (creating one that exists changes nothing)

    @property
    def changed(self) -> bool:
        return bool(self.created or self.partitions_added or self.configs_changed)


def admin_client(bootstrap: str, principal: str = kafka_security.ADMIN) -> KafkaAdminClient:
    """An admin client acting as `principal` (the admin principal unless a service creates
    its own private topics)."""
    return KafkaAdminClient(bootstrap_servers=bootstrap, client_id="croupier-topics",
                            request_timeout_ms=15000, bootstrap_timeout_ms=15000,
                            **kafka_security.kafka_python_options(principal))


def describe(admin: KafkaAdminClient, names: list[str]) -> dict[str, TopicState]:
    """Live partitions and every config value (defaults included) of the named topics."""
    existing = set(admin.list_topics())
    present = [n for n in names if n in existing]
    if not present:
        return {}
    partitions = {t["name"]: len(t["partitions"]) for t in admin.describe_topics(present)}
    resources = [ConfigResource(ConfigResourceType.TOPIC, n) for n in present]
    answer = admin.describe_configs(resources, config_filter="all")
    configs = _configs_by_topic(answer)
    return {n: TopicState(n, partitions[n], configs.get(n, {})) for n in present}


def _configs_by_topic(answer) -> dict[str, dict[str, str]]:
    """describe_configs answers {"topic": {name: {key: {"value": ...}}}}; keep the values."""
    return {name: {key: str(entry["value"]) for key, entry in entries.items()}
            for name, entries in answer.get("topic", {}).items()}


def apply(admin: KafkaAdminClient, catalogue: tuple[TopicSpec, ...], *,
          acls_for: str | None = None) -> ApplyReport:
    """On a secured cluster (when the settings let us manage ACLs) the catalogue topics'
    ACLs are applied too, and with `acls_for` that platform instance's (its services'
    groups and private topics); `admin` must then act as the admin principal."""
    report = ApplyReport()
    settings = kafka_security._settings()
    if kafka_security.secured(settings) and settings.kafka_manage_acls:
        report.acls = kafka_security.apply_acls(admin, acls_for)
    live = describe(admin, [t.name for t in catalogue])
    missing = [t for t in catalogue if t.name not in live]
    if missing:
        admin.create_topics(
            {t.name: {"num_partitions": t.partitions, "replication_factor": 1,
                      "configs": dict(t.configs)} for t in missing},
            timeout_ms=15000,
        )
        admin.wait_for_topics([t.name for t in missing], timeout_ms=30000)
        report.created = [t.name for t in missing]
    for spec in catalogue:
        state = live.get(spec.name)
        if state is None:
            continue
        if state.partitions < spec.partitions:
            admin.create_partitions({spec.name: spec.partitions})
            report.partitions_added[spec.name] = (state.partitions, spec.partitions)
        elif state.partitions > spec.partitions:
            report.drift.append(
                f"{spec.name}: {state.partitions} partitions live, {spec.partitions} declared "
                "(Kafka cannot remove partitions; change the catalogue or recreate the topic)"
            )
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
