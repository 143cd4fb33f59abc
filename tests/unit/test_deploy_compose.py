"""docker-compose.yml and the Dockerfile, checked without a Docker engine: every
service, port, environment variable, healthcheck, dependency, volume and mounted
file agrees with the code (services/infra/settings.py) and the repo."""

from __future__ import annotations

import base64
import importlib.util
import re
import tomllib
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml", reason="pyyaml is needed to read docker-compose.yml")

from services.infra import service_table  # noqa: E402
from services.infra.faust_app import service_port  # noqa: E402
from services.infra.jmx_agent import JMX_AGENT_ARTIFACT  # noqa: E402
from services.infra.kafka_security import PRINCIPALS, broker_security_properties  # noqa: E402
from services.infra.local_broker import LocalBroker  # noqa: E402
from services.infra.settings import DEVELOPMENT_SECRETS, Settings  # noqa: E402
from shared.topics import min_insync_replicas  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
CROUPIER = service_table.SERVICE_NAMES
ONE_SHOT = ("kafka-jmx-agent", "topics")
# a KRaft cluster of three nodes (each broker and controller): replication 3, min ISR 2
BROKERS = ("kafka-1", "kafka-2", "kafka-3")
BOOTSTRAP = ",".join(f"{broker}:9092" for broker in BROKERS)
KAFKA_CLIENTS = (*CROUPIER, "topics", "archiver")
ALL_BROKERS_HEALTHY = {broker: {"condition": "service_healthy"} for broker in BROKERS}
# what a node sets for itself; everything else in a node's environment the three share
NODE_OWN = {"KAFKA_NODE_ID", "KAFKA_ADVERTISED_LISTENERS"}
_INTERPOLATION = re.compile(r"\$\{(\w+)(?::?([-?])([^}]*))?\}")
GIVEN_SECRET = "a-secret-the-operator-set"


def interpolate(value: object) -> str:
    """Compose's `${VAR:-default}` with nothing set in the environment, and a value of the
    operator's for `${VAR:?error}` (compose refuses to start without one)."""
    return _INTERPOLATION.sub(
        lambda m: GIVEN_SECRET if m.group(2) == "?" else (m.group(3) or ""), str(value))


@pytest.mark.parametrize("service", CROUPIER)
def test_compose_runs_production_and_requires_every_secret(service: str) -> None:
    """Issue 11 finding 6: compose used to fall back to the development secrets."""
    raw = SERVICES[service]["environment"]
    assert env(service)["CROUPIER_ENV"] == "production"
    for name in DEVELOPMENT_SECRETS:
        variable = f"CROUPIER_{name.upper()}"
        assert re.fullmatch(rf"\$\{{{variable}:\?[^}}]+\}}", raw[variable]), raw[variable]
    assert not any(secret in (ROOT / "docker-compose.yml").read_text()
                   for secret in DEVELOPMENT_SECRETS.values())


def env(service: str) -> dict[str, str]:
    return {k: interpolate(v) for k, v in (SERVICES[service].get("environment") or {}).items()}


def settings_for(service: str, monkeypatch: pytest.MonkeyPatch) -> Settings:
    for key in [k for k in __import__("os").environ if k.startswith("CROUPIER_")
                or k == "KAFKA_BOOTSTRAP_SERVERS"]:
        monkeypatch.delenv(key)
    for key, value in env(service).items():
        monkeypatch.setenv(key, value)
    return Settings(_env_file=None)


def published(service: str) -> dict[int, int]:
    """{container port: first host port} (a range `8104-8111` gives each replica one)."""
    ports = {}
    for spec in SERVICES[service].get("ports", []):
        *_, host, container = str(spec).split(":")
        ports[int(container)] = int(host.split("-")[0])
    return ports


def host_port_range(service: str) -> range:
    (spec,) = SERVICES[service]["ports"]
    first, _, last = str(spec).split(":")[1].partition("-")
    return range(int(first), int(last or first) + 1)


def test_the_platform_is_all_there() -> None:
    assert set(SERVICES) == {*ONE_SHOT, *BROKERS, *CROUPIER, "archiver", "prometheus", "grafana"}


@pytest.mark.parametrize("service", [*CROUPIER, "topics", "archiver"])
def test_environment_names_are_settings(service: str) -> None:
    fields = Settings.model_fields
    for key in env(service):
        if key == "KAFKA_BOOTSTRAP_SERVERS":
            continue
        assert key.startswith("CROUPIER_"), key
        field = key.removeprefix("CROUPIER_").lower()
        assert field in fields, f"{service}: {key} is not a Settings field"


@pytest.mark.parametrize("service", [*CROUPIER, "topics", "archiver"])
def test_environment_values_are_valid_settings_and_match_the_defaults(
        service: str, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = settings_for(service, monkeypatch)
    defaults = Settings(_env_file=None, KAFKA_BOOTSTRAP_SERVERS=None)
    assert settings.bootstrap_servers == BOOTSTRAP and settings.uses_external_kafka
    # the cluster's size, and from it the replication every topic takes (3, min ISR 2)
    assert settings.kafka_brokers == len(BROKERS) == 3
    assert settings.replication_factor == 3 and min_insync_replicas(settings.replication_factor) == 2
    for port in CROUPIER:
        assert service_port(settings, port) == service_port(defaults, port)
    assert settings.topic_partitions == defaults.topic_partitions
    assert settings.retention_ms == defaults.retention_ms


@pytest.mark.parametrize("service", CROUPIER)
def test_service_ports_agree_everywhere(service: str, monkeypatch: pytest.MonkeyPatch) -> None:
    port = service_port(settings_for(service, monkeypatch), service)
    assert published(service) == {port: port}
    assert f"127.0.0.1:{port}/health" in " ".join(SERVICES[service]["healthcheck"]["test"])
    prometheus = yaml.safe_load((ROOT / "deploy" / "prometheus" / "prometheus.compose.yml").read_text())
    scraped = {(name, sd["port"]) for job in prometheus["scrape_configs"]
               for sd in job.get("dns_sd_configs", []) for name in sd["names"]}
    assert (service, port) in scraped


@pytest.mark.parametrize("service", CROUPIER)
def test_every_service_scales_to_n_workers(service: str) -> None:
    """`deploy.replicas` from CROUPIER_<SERVICE>_WORKERS, a host port for each replica, each
    replica its own store and its own advertised address for forwarded requests."""
    spec = SERVICES[service]
    variable = f"CROUPIER_{service.upper().replace('-', '_')}_WORKERS"
    assert spec["deploy"]["replicas"] == f"${{{variable}:-1}}"
    assert len(host_port_range(service)) >= 4
    assert env(service)["CROUPIER_WEB_HOST"] == "auto"
    assert spec["volumes"] == [env(service)["CROUPIER_HOME"]], "an anonymous volume per replica"


def test_the_image_exposes_every_services_default_port() -> None:
    (line,) = [x for x in (ROOT / "Dockerfile").read_text().splitlines()
               if x.startswith("EXPOSE ")]
    defaults = Settings(_env_file=None)
    assert sorted(map(int, line.split()[1:])) == sorted(service_table.service(name).port(defaults)
                                                        for name in CROUPIER)


@pytest.mark.parametrize("name", CROUPIER)
def test_service_command_runs_its_package(name: str) -> None:
    command = SERVICES[name]["command"]
    package = service_table.service(name).module
    assert command == ["python", *service_table.service(name).command]
    assert importlib.util.find_spec(package) is not None
    assert (ROOT / package.replace(".", "/") / "__main__.py").exists()


def test_one_image_for_every_croupier_process() -> None:
    images = {SERVICES[s]["image"] for s in (*CROUPIER, "topics", "archiver")}
    assert len(images) == 1
    for service in (*CROUPIER, "topics", "archiver"):
        assert SERVICES[service]["build"] == {"context": ".", "dockerfile": "Dockerfile"}
    assert SERVICES["topics"]["command"] == ["croupier", "topics", "apply"]


@pytest.mark.parametrize("service", [*BROKERS, *CROUPIER, "archiver", "prometheus", "grafana"])
def test_long_running_services_have_a_healthcheck(service: str) -> None:
    check = SERVICES[service]["healthcheck"]
    assert check["test"][0] in {"CMD", "CMD-SHELL"} and len(check["test"]) > 1
    assert check.get("interval") and check.get("retries")


def test_one_shot_jobs_do_not_restart() -> None:
    for service in ONE_SHOT:
        assert SERVICES[service]["restart"] == "no"
        assert "healthcheck" not in SERVICES[service]


def test_dependencies_exist_and_use_the_right_condition() -> None:
    for name, service in SERVICES.items():
        for dep, spec in (service.get("depends_on") or {}).items():
            assert dep in SERVICES, f"{name} depends on unknown {dep}"
            condition = spec["condition"]
            if condition == "service_healthy":
                assert "healthcheck" in SERVICES[dep], f"{name} waits for {dep}'s health, it has none"
            elif condition == "service_completed_successfully":
                assert dep in ONE_SHOT, f"{name} waits for {dep} to exit, it never does"
            else:
                pytest.fail(f"{name} -> {dep}: use service_healthy or service_completed_successfully")
    # every Kafka client waits for all three brokers (a topic of 3 replicas needs them)
    assert SERVICES["topics"]["depends_on"] == ALL_BROKERS_HEALTHY
    for service in (*CROUPIER, "archiver"):
        assert SERVICES[service]["depends_on"] == {
            **ALL_BROKERS_HEALTHY, "topics": {"condition": "service_completed_successfully"}}
    for broker in BROKERS:
        assert SERVICES[broker]["depends_on"] == {
            "kafka-jmx-agent": {"condition": "service_completed_successfully"}}


@pytest.mark.parametrize("service", KAFKA_CLIENTS)
def test_every_kafka_client_bootstraps_from_and_waits_for_every_broker(service: str) -> None:
    kafka = env(service)
    assert kafka["KAFKA_BOOTSTRAP_SERVERS"].split(",") == [
        env(broker)["KAFKA_ADVERTISED_LISTENERS"].removeprefix("SASL_PLAINTEXT://")
        for broker in BROKERS]
    assert kafka["CROUPIER_KAFKA_BROKERS"] == "3"
    # the replication factor follows from the brokers (3), as the brokers' own default
    assert "CROUPIER_TOPIC_REPLICATION_FACTOR" not in kafka
    for broker in BROKERS:
        assert SERVICES[service]["depends_on"][broker] == {"condition": "service_healthy"}


def test_nothing_names_the_single_broker_any_more() -> None:
    """No `kafka:9092` (or :9093, :9404) left anywhere, no service or volume of its own."""
    text = (ROOT / "docker-compose.yml").read_text()
    assert not re.findall(r"(?<![\w/-])kafka:\d+", text)  # not apache/kafka:<tag>
    assert "kafka" not in SERVICES and "kafka-data" not in COMPOSE["volumes"]


def test_no_dependency_cycle() -> None:
    seen: dict[str, int] = {}

    def visit(name: str) -> None:
        assert seen.get(name) != 1, f"dependency cycle through {name}"
        if seen.get(name) == 2:
            return
        seen[name] = 1
        for dep in SERVICES[name].get("depends_on") or {}:
            visit(dep)
        seen[name] = 2

    for name in SERVICES:
        visit(name)


def volume_specs():
    for name, service in SERVICES.items():
        for spec in service.get("volumes", []):
            if ":" not in spec:  # an anonymous volume: a container path only
                continue
            source, target, *mode = spec.split(":")
            yield name, source, target, mode


def test_named_volumes_are_declared_and_used() -> None:
    declared = set(COMPOSE["volumes"])
    used = {source for _, source, _, _ in volume_specs() if not source.startswith((".", "/"))}
    assert used == declared


def test_bind_mounts_point_at_files_in_the_repo_read_only() -> None:
    binds = [(n, s, t, m) for n, s, t, m in volume_specs() if s.startswith(".")]
    assert binds
    for name, source, _, mode in binds:
        assert (ROOT / source).exists(), f"{name} mounts missing {source}"
        assert mode == ["ro"], f"{name} should mount {source} read-only"


def test_each_croupier_replica_keeps_its_store_on_a_volume_of_its_own() -> None:
    """Named volumes would be shared by a service's replicas (two rocksdb stores in one
    directory); an anonymous volume is one per container."""
    for name in CROUPIER:
        (volume,) = SERVICES[name]["volumes"]
        assert ":" not in volume and volume == env(name)["CROUPIER_HOME"]


def mount_of(service: str, target_path: str) -> Path:
    """The repo file a container path of `service` resolves to through its bind mounts."""
    for name, source, target, _ in volume_specs():
        if name == service and source.startswith(".") and (
                target_path == target or target_path.startswith(target.rstrip("/") + "/")):
            return ROOT / source / target_path[len(target):].lstrip("/")
    raise AssertionError(f"{service}: {target_path} is not mounted from the repo")


def test_prometheus_runs_the_compose_config_and_its_rules() -> None:
    flags = dict(f.removeprefix("--").partition("=")[::2] for f in SERVICES["prometheus"]["command"])
    config = mount_of("prometheus", flags["config.file"])
    assert config == ROOT / "deploy" / "prometheus" / "prometheus.compose.yml"
    for rule_file in yaml.safe_load(config.read_text())["rule_files"]:
        assert (config.parent / rule_file).exists()
    assert published("prometheus") == {9090: 9090}


def test_grafana_gets_its_provisioning_and_home_dashboard() -> None:
    provisioning = mount_of("grafana", "/etc/grafana/provisioning")
    assert (provisioning / "datasources").is_dir() and (provisioning / "dashboards").is_dir()
    home = env("grafana")["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert mount_of("grafana", home).exists()
    assert published("grafana") == {3000: 3000}


def local_node_properties(node_id: int) -> dict[str, str]:
    """The server.properties `croupier kafka up` writes for node `node_id` of a local
    cluster of three (LocalBroker), as a dict."""
    node = LocalBroker(data_dir=Path("/nonexistent"), cache_dir=Path("/nonexistent"),
                       secured=False, node_id=node_id, replication=3,
                       voters=((1, 19093), (2, 19096), (3, 19099)))
    return dict(line.split("=", 1) for line in node.server_properties().splitlines())


@pytest.mark.parametrize("broker", BROKERS)
def test_each_kafka_node_is_a_replicated_kraft_broker_and_controller(broker: str) -> None:
    kafka = env(broker)
    node_id = BROKERS.index(broker) + 1
    assert kafka["KAFKA_NODE_ID"] == str(node_id)
    assert kafka["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert kafka["KAFKA_ADVERTISED_LISTENERS"] == f"SASL_PLAINTEXT://{broker}:9092"
    assert kafka["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"  # `croupier topics apply` creates them
    # replication 3, an acknowledged write on 2, no out-of-sync leader: the loss of any
    # one broker loses no acknowledged record; the brokers' internal topics alike
    assert kafka["KAFKA_DEFAULT_REPLICATION_FACTOR"] == "3"
    assert kafka["KAFKA_MIN_INSYNC_REPLICAS"] == "2"
    assert kafka["KAFKA_UNCLEAN_LEADER_ELECTION_ENABLE"] == "false"
    for internal in ("OFFSETS_TOPIC", "TRANSACTION_STATE_LOG", "SHARE_COORDINATOR_STATE_TOPIC"):
        assert kafka[f"KAFKA_{internal}_REPLICATION_FACTOR"] == "3", internal
    assert kafka["KAFKA_TRANSACTION_STATE_LOG_MIN_ISR"] == "2"
    assert kafka["KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR"] == "2"
    # the same as a node of the local cluster of three (services/infra/local_broker.py)
    local = local_node_properties(node_id)
    for key in ("process.roles", "node.id", "controller.listener.names",
                "default.replication.factor", "min.insync.replicas",
                "unclean.leader.election.enable", "offsets.topic.replication.factor",
                "transaction.state.log.replication.factor", "transaction.state.log.min.isr",
                "share.coordinator.state.topic.replication.factor",
                "share.coordinator.state.topic.min.isr", "auto.create.topics.enable"):
        variable = "KAFKA_" + key.upper().replace(".", "_")
        assert kafka[variable] == local[key], key
    # its own data volume, at its log dir
    (data,) = [(s, t) for n, s, t, _ in volume_specs() if n == broker and t == kafka["KAFKA_LOG_DIRS"]]
    assert data == (f"{broker}-data", "/var/lib/kafka/data") and data[0] in COMPOSE["volumes"]


def test_the_three_nodes_are_one_cluster() -> None:
    """One controller quorum naming all three nodes, one cluster id to format with, the
    same configuration but for each node's id, address and volume."""
    nodes = {broker: env(broker) for broker in BROKERS}
    assert sorted(int(kafka["KAFKA_NODE_ID"]) for kafka in nodes.values()) == [1, 2, 3]
    voters = {kafka["KAFKA_CONTROLLER_QUORUM_VOTERS"] for kafka in nodes.values()}
    assert voters == {",".join(f"{nodes[b]['KAFKA_NODE_ID']}@{b}:9093" for b in BROKERS)}
    local = local_node_properties(1)["controller.quorum.voters"]
    assert [v.split("@")[0] for v in voters.pop().split(",")] == [
        v.split("@")[0] for v in local.split(",")]
    assert all(kafka["KAFKA_LISTENERS"].endswith("CONTROLLER://:9093") for kafka in nodes.values())
    # the apache/kafka image formats storage with $CLUSTER_ID: one id, from one variable
    raw = {SERVICES[broker]["environment"]["CLUSTER_ID"] for broker in BROKERS}
    assert len(raw) == 1
    match = re.fullmatch(r"\$\{CROUPIER_KAFKA_CLUSTER_ID:-([A-Za-z0-9_-]{22})\}", raw.pop())
    assert match, "CLUSTER_ID: ${CROUPIER_KAFKA_CLUSTER_ID:-<22-character base64 UUID>}"
    assert len(base64.urlsafe_b64decode(match.group(1) + "==")) == 16
    assert not match.group(1).startswith("-")  # the storage tool would take it for an option
    shared = [{k: v for k, v in SERVICES[b]["environment"].items() if k not in NODE_OWN}
              for b in BROKERS]
    assert shared[0] == shared[1] == shared[2]
    for key in ("image", "healthcheck", "depends_on", "restart"):
        assert SERVICES["kafka-1"][key] == SERVICES["kafka-2"][key] == SERVICES["kafka-3"][key]
    assert len({kafka["KAFKA_ADVERTISED_LISTENERS"] for kafka in nodes.values()}) == 3


@pytest.mark.parametrize("broker", BROKERS)
def test_each_kafka_node_serves_its_metrics_through_the_jmx_agent(broker: str) -> None:
    kafka = env(broker)
    agent = re.fullmatch(r"-javaagent:(\S+)=(\d+):(\S+)", kafka["KAFKA_OPTS"])
    assert agent, kafka["KAFKA_OPTS"]
    jar, port, config = agent.groups()
    assert mount_of(broker, config) == ROOT / "deploy" / "kafka" / "jmx-exporter.yml"
    prometheus = yaml.safe_load((ROOT / "deploy" / "prometheus" / "prometheus.compose.yml").read_text())
    (job,) = [job for job in prometheus["scrape_configs"] if job["job_name"] == "kafka"]
    scraped = [target for sc in job["static_configs"] for target in sc["targets"]]
    assert scraped == [f"{b}:{port}" for b in BROKERS], "one job, every node an instance"
    fetch = " ".join(SERVICES["kafka-jmx-agent"]["command"])
    assert f"-Dartifact={JMX_AGENT_ARTIFACT}" in fetch
    agent_dir = [t for n, s, t, _ in volume_specs() if n == "kafka-jmx-agent" and s == "jmx-agent"][0]
    kafka_dir = [t for n, s, t, _ in volume_specs() if n == broker and s == "jmx-agent"][0]
    assert "-Dmdep.stripVersion=true" in fetch and f"-DoutputDirectory={agent_dir}" in fetch
    assert jar == f"{kafka_dir}/jmx_prometheus_javaagent.jar"
    # the health probe is a JVM too: it must not load the agent (its port is taken)
    assert "env -u KAFKA_OPTS" in SERVICES[broker]["healthcheck"]["test"][1]


def test_dockerfile_builds_the_package_from_what_it_copies() -> None:
    text = (ROOT / "Dockerfile").read_text()
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    assert lines[0] == "FROM python:3.11-slim"
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["requires-python"] == ">=3.11"
    copied = set()
    for line in lines:
        if line.startswith("COPY "):
            *sources, _ = line.split()[1:]
            copied.update(sources)
    for source in copied:
        assert (ROOT / source).exists(), source
    needed = {pyproject["project"]["readme"], "pyproject.toml"}
    packages = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    needed |= {pattern.rstrip("*") for pattern in packages}
    assert needed <= copied
    assert "pip install ." in text
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    assert not copied & ignored, ".dockerignore hides a file the Dockerfile copies"


@pytest.mark.parametrize("service", [*CROUPIER, "topics"])
def test_each_process_is_its_own_kafka_principal(service: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Each service authenticates as itself (SASL), the topics job as admin (it applies
    the ACLs); the password is the one the broker lists for that principal."""
    settings = settings_for(service, monkeypatch)
    principal = "admin" if service == "topics" else service
    assert settings.kafka_security_protocol == "SASL_PLAINTEXT"
    assert settings.kafka_sasl_mechanism == "PLAIN"
    assert settings.kafka_username == principal
    for broker in BROKERS:
        jaas = env(broker)["KAFKA_LISTENER_NAME_SASL__PLAINTEXT_PLAIN_SASL_JAAS_CONFIG"]
        assert f'user_{principal}="{settings.kafka_password}"' in jaas


@pytest.mark.parametrize("broker", BROKERS)
def test_each_compose_broker_is_secured_like_the_local_one(broker: str) -> None:
    """SASL on both listeners, the StandardAuthorizer denying what no ACL allows, a user
    for every principal: the same properties `local_broker` writes."""
    kafka = env(broker)
    local = broker_security_properties(9092, 9093, dict.fromkeys(PRINCIPALS, "x"))
    for key in ("sasl.enabled.mechanisms", "sasl.mechanism.inter.broker.protocol",
                "sasl.mechanism.controller.protocol", "authorizer.class.name",
                "allow.everyone.if.no.acl.found", "super.users", "inter.broker.listener.name",
                "listener.security.protocol.map"):
        variable = "KAFKA_" + key.upper().replace(".", "_")
        assert kafka[variable] == local[key], key
    jaas = kafka["KAFKA_LISTENER_NAME_SASL__PLAINTEXT_PLAIN_SASL_JAAS_CONFIG"]
    for principal in PRINCIPALS:
        assert f'user_{principal}="' in jaas
    assert 'user_admin="' in kafka["KAFKA_LISTENER_NAME_CONTROLLER_PLAIN_SASL_JAAS_CONFIG"]
    assert "--command-config" in SERVICES[broker]["healthcheck"]["test"][1]


def test_the_archiver_reads_as_operator_into_its_volume_and_beats(monkeypatch: pytest.MonkeyPatch
                                                                  ) -> None:
    """The archiver is a process of its own (`croupier archive run`): it reads every topic as
    the operator (who may read them all and write none), writes the archive to a named
    volume (it outlives the container), and its healthcheck reads the heartbeat it touches
    under its home."""
    from services.archive.archiver import ARCHIVER_HEARTBEAT

    spec = SERVICES["archiver"]
    assert spec["command"] == ["croupier", "archive", "run"]
    settings = settings_for("archiver", monkeypatch)
    assert settings.kafka_username == "operator"
    for broker in BROKERS:
        jaas = env(broker)["KAFKA_LISTENER_NAME_SASL__PLAINTEXT_PLAIN_SASL_JAAS_CONFIG"]
        assert f'user_operator="{settings.kafka_password}"' in jaas
    (volume,) = spec["volumes"]
    name, _, target = volume.partition(":")
    assert name in COMPOSE["volumes"] and settings.archive_location == f"file://{target}"
    assert str(settings.home / ARCHIVER_HEARTBEAT) in spec["healthcheck"]["test"][-1]
