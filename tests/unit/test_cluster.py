"""Issue 30 without a broker: replication from settings, the catalogue's durability, the
local cluster's nodes and ports, the drift a `topics check` names, and the clients."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kafka.errors import KafkaConnectionError, TopicAuthorizationFailedError

from services.infra import kafka_clients
from services.infra.local_broker import cluster_nodes
from services.infra.processes import service_env
from services.infra.settings import Settings
from services.infra.topic_admin import TopicState, differences
from shared.topics import BETS_SETTLED_TOPIC, CATALOGUE_NAMES, min_insync_replicas, topic_catalogue

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("brokers", "factor"), [(1, 1), (2, 1), (3, 3), (5, 3)])
def test_the_replication_factor_defaults_from_the_brokers(brokers, factor):
    assert Settings(kafka_brokers=brokers).replication_factor == factor


def test_an_explicit_replication_factor_wins():
    assert Settings(kafka_brokers=5, topic_replication_factor=5).replication_factor == 5
    assert Settings(kafka_brokers=3, topic_replication_factor=1).replication_factor == 1


def test_the_local_bootstrap_names_every_node_three_ports_apart():
    assert Settings(kafka_port=20000).local_bootstrap == "127.0.0.1:20000"
    assert Settings(kafka_brokers=3, kafka_port=20000).bootstrap_servers == \
        "127.0.0.1:20000,127.0.0.1:20003,127.0.0.1:20006"


@pytest.mark.parametrize(("replication", "insync"), [(1, 1), (2, 1), (3, 2), (5, 2)])
def test_min_insync_replicas_lets_a_write_survive_one_node(replication, insync):
    assert min_insync_replicas(replication) == insync


def test_every_topic_of_a_replicated_catalogue_is_durable():
    catalogue = topic_catalogue(replication=3)
    assert {t.name for t in catalogue} == set(CATALOGUE_NAMES)
    for spec in catalogue:
        assert spec.replication == 3, spec.name
        assert spec.configs["min.insync.replicas"] == "2", spec.name
        assert spec.configs["unclean.leader.election.enable"] == "false", spec.name
    assert all(t.replication == 1 and t.configs["min.insync.replicas"] == "1"
               for t in topic_catalogue())


def _props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line)


def test_three_nodes_share_a_quorum_and_a_cluster_id_and_interleave_their_ports(tmp_path):
    cluster = cluster_nodes(tmp_path, tmp_path / "cache", 3, port=20000,
                            controller_port=20001, metrics_port=20002, replication=3,
                            secured=False)
    assert [n.node_id for n in cluster.nodes] == [1, 2, 3]
    assert [(n.port, n.controller_port, n.metrics_port) for n in cluster.nodes] == \
        [(20000, 20001, 20002), (20003, 20004, 20005), (20006, 20007, 20008)]
    assert [n.data_dir for n in cluster.nodes] == [tmp_path / f"node-{i}" for i in (1, 2, 3)]
    assert len({n.cluster_id for n in cluster.nodes}) == 1
    assert cluster.nodes[0].cluster_id == (tmp_path / "cluster.id").read_text().strip()
    assert cluster.bootstrap == "127.0.0.1:20000,127.0.0.1:20003,127.0.0.1:20006"
    for node in cluster.nodes:
        props = _props(node.server_properties())
        assert props["node.id"] == str(node.node_id)
        assert props["controller.quorum.voters"] == \
            "1@127.0.0.1:20001,2@127.0.0.1:20004,3@127.0.0.1:20007"
        for key in ("default.replication.factor", "offsets.topic.replication.factor",
                    "transaction.state.log.replication.factor",
                    "share.coordinator.state.topic.replication.factor"):
            assert props[key] == "3", key
        for key in ("min.insync.replicas", "transaction.state.log.min.isr",
                    "share.coordinator.state.topic.min.isr"):
            assert props[key] == "2", key
        assert props["unclean.leader.election.enable"] == "false"
    # the same cluster again (an operator's second `kafka up`) keeps its id
    again = cluster_nodes(tmp_path, tmp_path / "cache", 3, port=20000, controller_port=20001)
    assert again.nodes[0].cluster_id == cluster.nodes[0].cluster_id


def test_one_node_keeps_the_single_broker_layout(tmp_path):
    [node] = cluster_nodes(tmp_path, tmp_path / "cache", 1, port=20000, controller_port=20001,
                           secured=False).nodes
    assert node.data_dir == tmp_path and node.node_id == 1
    props = _props(node.server_properties())
    assert props["controller.quorum.voters"] == "1@127.0.0.1:20001"
    assert props["offsets.topic.replication.factor"] == "1"


def test_a_node_session_set_in_the_settings_reaches_every_node_and_none_by_default(tmp_path):
    from services.infra.local_broker import cluster_from_settings
    shorter = cluster_from_settings(Settings(home=tmp_path / "a", kafka_brokers=3,
                                             kafka_node_session_ms=4000))
    for node in shorter.nodes:
        props = _props(node.server_properties())
        assert (props["broker.session.timeout.ms"], props["broker.heartbeat.interval.ms"]) \
            == ("4000", "666")
    [node] = cluster_from_settings(Settings(home=tmp_path / "b")).nodes
    assert not {"broker.session.timeout.ms", "broker.heartbeat.interval.ms"} & \
        set(_props(node.server_properties()))


def test_the_settings_cluster_is_where_the_cli_keeps_it(tmp_path):
    from services.infra.local_broker import cluster_from_settings
    settings = Settings(home=tmp_path, kafka_brokers=3, kafka_port=21000)
    cluster = cluster_from_settings(settings)
    assert cluster.nodes[2].data_dir == (tmp_path / "kafka-cluster" / "node-3").resolve()
    assert cluster.bootstrap == settings.bootstrap_servers
    assert all(n.replication == 3 for n in cluster.nodes)
    assert cluster_from_settings(Settings(home=tmp_path)).nodes[0].data_dir == \
        (tmp_path / "kafka").resolve()


def test_a_stack_hands_the_cluster_size_to_its_processes():
    env = service_env(Settings(kafka_brokers=3, kafka_port=21000))
    assert env["CROUPIER_KAFKA_BROKERS"] == "3"
    assert env["KAFKA_BOOTSTRAP_SERVERS"].count(",") == 2
    assert Settings(**{"kafka_brokers": int(env["CROUPIER_KAFKA_BROKERS"])}
                    ).replication_factor == 3


def test_differences_name_each_drift_by_topic():
    [spec] = [t for t in topic_catalogue(replication=3) if t.name == BETS_SETTLED_TOPIC]
    ok = TopicState(spec.name, spec.partitions, dict(spec.configs), replication=3)
    assert differences((spec,), {spec.name: ok}) == []
    assert differences((spec,), {}) == ["bets.settled: missing"]
    drifted = TopicState(spec.name, spec.partitions + 2,
                         {**spec.configs, "min.insync.replicas": "1"}, replication=1)
    assert differences((spec,), {spec.name: drifted}) == [
        f"bets.settled: partitions {spec.partitions + 2} live, {spec.partitions} declared",
        "bets.settled: replication 1 live, 3 declared",
        "bets.settled: min.insync.replicas 1 live, 2 declared",
    ]


def test_a_producer_of_ours_cannot_be_made_less_durable():
    for weaker in ({"acks": 1}, {"enable_idempotence": False}):
        with pytest.raises(ValueError, match="always durable"):
            kafka_clients.durable_producer("127.0.0.1:1", "admin", **weaker)


def test_the_faust_producer_is_durable_and_its_topics_replicated():
    from faust.transport.drivers.aiokafka import Producer

    from services.infra.faust_app import make_app
    assert Producer._settings_extra(None) == {"acks": "all", "enable_idempotence": True}
    app = make_app("wallet", Settings(kafka_brokers=3, home=Path("/tmp/croupier-unit")),
                   persistent=False)
    assert app.conf.topic_replication_factor == 3


class _Flaky:
    def __init__(self, failures: int, error: Exception) -> None:
        self.failures, self.error, self.calls = failures, error, 0

    def describe_cluster(self):
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return {"brokers": []}


def test_an_admin_request_to_a_dead_node_is_sent_again():
    flaky = _Flaky(2, KafkaConnectionError("111 ECONNREFUSED"))
    admin = kafka_clients.ResilientAdmin(flaky, sleep=lambda s: None)
    assert admin.describe_cluster() == {"brokers": []} and flaky.calls == 3


def test_an_admin_request_is_not_sent_forever_nor_again_for_a_refusal():
    dead = _Flaky(99, KafkaConnectionError("111 ECONNREFUSED"))
    with pytest.raises(KafkaConnectionError):
        kafka_clients.ResilientAdmin(dead, sleep=lambda s: None).describe_cluster()
    assert dead.calls == kafka_clients.ADMIN_RETRIES
    refused = _Flaky(1, TopicAuthorizationFailedError())
    with pytest.raises(TopicAuthorizationFailedError):
        kafka_clients.ResilientAdmin(refused, sleep=lambda s: None).describe_cluster()
    assert refused.calls == 1


LITERAL_FACTOR = re.compile(
    r"""(replication[._]factor["']?\s*[:=]\s*["']?\d)|(topic_replication_factor\s*=\s*\d)""")


def test_no_replication_factor_is_written_as_a_literal():
    """Every replication factor comes from the settings (the catalogue's, the broker's)."""
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
             for folder in ("services", "shared")
             for path in sorted((ROOT / folder).rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if LITERAL_FACTOR.search(line)]
    assert found == []
