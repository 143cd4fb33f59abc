"""A real Apache Kafka cluster of one or more nodes (KRaft), run from Maven jars.

No Docker engine exists on developer and CI machines, so the broker is assembled
from Maven Central (`deploy/kafka/pom.xml`), cached once per machine, and run as
plain `java` processes with loopback listeners on non-default ports. "Ready"
means an admin client can list topics, not merely that the port is open.

Each node is both controller and broker (combined mode): three JVMs instead of six on a
two-core machine, and a quorum of three controllers still elects a new leader when one
node dies (docs/decisions/cluster.md). Node n (0-based) has node.id n + 1 and every port
of node 0 plus 3n, so the nodes' listener, controller and metrics ports interleave and
never collide with each other or with a platform's services.

Unless the settings say PLAINTEXT, the broker authenticates every client (SASL/PLAIN,
one user per principal, passwords derived from the local secret) and authorises every
request (the StandardAuthorizer, nothing allowed without an ACL); the platform's ACLs
are applied by the admin principal once the broker is ready (`kafka_security`).
"""

from __future__ import annotations

import base64
import fcntl
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from kafka.errors import KafkaError

from services.infra import kafka_clients, kafka_security
from services.infra.class_archive import QUICK_JIT, ClassArchive
from services.infra.settings import NODE_PORT_STEP
from shared.topics import min_insync_replicas

REPO_ROOT = Path(__file__).resolve().parents[2]
DEPLOY_DIR = REPO_ROOT / "deploy" / "kafka"
POM = DEPLOY_DIR / "pom.xml"
LOG4J_CONFIG = DEPLOY_DIR / "log4j2.properties"
KAFKA_VERSION = "4.1.1"
JARS_MARKER = ".complete"


T = TypeVar("T")


class BrokerError(RuntimeError):
    """The local broker could not be set up, started or reached."""


def jars_dir(cache_dir: Path) -> Path:
    return cache_dir / f"kafka-{KAFKA_VERSION}" / "lib"


def maven_jars(pom: Path, lib: Path, what: str) -> tuple[Path, bool]:
    """The jars `pom` depends on, fetched from Maven Central once into `lib` (the broker's,
    the S3-compatible test server's). Returns (lib dir, downloaded?)."""
    if (lib / JARS_MARKER).exists():
        return lib, False
    # several processes may ask at once on a fresh machine (the test suite's workers): one
    # fetches, the others wait for it and find the marker
    lib.parent.mkdir(parents=True, exist_ok=True)
    with open(lib.with_name(lib.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (lib / JARS_MARKER).exists():
            return lib, False
        return _fetch_jars(pom, lib, what), True


def _fetch_jars(pom: Path, lib: Path, what: str) -> Path:
    if shutil.which("mvn") is None:
        raise BrokerError(f"Maven (mvn) is needed once to fetch the {what} jars; install maven")
    staging = lib.with_name(lib.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    cmd = ["mvn", "-q", "-B", "-f", str(pom), "dependency:copy-dependencies",
           f"-DoutputDirectory={staging}"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise BrokerError(f"fetching {what} jars failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    shutil.rmtree(lib, ignore_errors=True)
    staging.rename(lib)
    (lib / JARS_MARKER).write_text(f"{what}\n")
    return lib


def ensure_jars(cache_dir: Path) -> tuple[Path, bool]:
    """Download the broker's jars once per machine. Returns (lib dir, downloaded?)."""
    return maven_jars(POM, jars_dir(cache_dir), f"Kafka {KAFKA_VERSION}")


def _probe(bootstrap: str, timeout_s: float, ask: Callable[[Any], T]) -> T | None:
    """`ask(admin)` as the admin principal, or None if the cluster cannot be reached."""
    try:
        admin = kafka_clients.admin_client(bootstrap, kafka_security.ADMIN,
                                           client_id="croupier-probe", timeout_s=timeout_s)
    except (KafkaError, OSError, ValueError):
        return None
    try:
        return ask(admin)
    except (KafkaError, OSError, KeyError):
        return None
    finally:
        admin.close()


def admin_ready(bootstrap: str, timeout_s: float = 5.0) -> list[str] | None:
    """The topic list if an admin client (the admin principal) can talk to the cluster,
    else None."""
    return _probe(bootstrap, timeout_s, lambda admin: sorted(admin.list_topics()))


@dataclass(frozen=True)
class BrokerStatus:
    pid: int | None
    running: bool
    ready: bool
    bootstrap: str
    data_dir: Path
    topics: list[str]


@dataclass
class LocalBroker:
    """One node's process owning `data_dir` (configs, KRaft metadata, logs, pid file); a
    cluster of one unless `voters` names the others."""

    data_dir: Path
    cache_dir: Path
    port: int = 19092
    controller_port: int = 19093
    heap: str = "1g"
    metrics_port: int | None = None  # serve Prometheus metrics via the JMX exporter agent
    secured: bool | None = None  # SASL + ACLs; None: unless the settings say PLAINTEXT
    instance: str | None = None  # apply this platform instance's ACLs once ready
    node_id: int = 1
    # every controller of the cluster as (node id, controller port); empty: this node alone
    voters: tuple[tuple[int, int], ...] = ()
    replication: int = 1  # the internal topics' replication factor (offsets, transactions)
    cluster_id: str | None = None  # the nodes of one cluster format with the same id
    session_ms: int | None = None  # broker.session.timeout.ms; None: Kafka's default

    def __post_init__(self) -> None:
        if self.secured is None:
            self.secured = kafka_security.secured(_settings())
        if not self.voters:
            self.voters = ((self.node_id, self.controller_port),)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid_file(self) -> Path:
        return self.data_dir / "kafka.pid"

    @property
    def log_dir(self) -> Path:
        return self.data_dir / "logs"

    @property
    def config_file(self) -> Path:
        return self.data_dir / "server.properties"

    def server_properties(self) -> str:
        insync = str(min_insync_replicas(self.replication))
        rf = str(self.replication)
        props = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": ",".join(f"{node}@127.0.0.1:{port}"
                                                 for node, port in self.voters),
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},"
                         f"CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.data_dir / "kafka-logs"),
            "num.partitions": "1",
            # every topic, ours and the broker's own, as durable as the settings ask
            # (a topic created without our configs, e.g. by Faust, takes these defaults)
            "default.replication.factor": rf,
            "min.insync.replicas": insync,
            "unclean.leader.election.enable": "false",
            "offsets.topic.replication.factor": rf,
            "offsets.topic.num.partitions": "8",
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": insync,
            "share.coordinator.state.topic.replication.factor": rf,
            "share.coordinator.state.topic.min.isr": insync,
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "false",
        }
        if self.session_ms is not None:
            props["broker.session.timeout.ms"] = str(self.session_ms)
            props["broker.heartbeat.interval.ms"] = str(max(100, self.session_ms // 6))
        if self.secured:
            props.update(kafka_security.broker_security_properties(
                self.port, self.controller_port, kafka_security.local_credentials(_settings())))
        return "".join(f"{k}={v}\n" for k, v in props.items())

    def _java(self, lib: Path, main: str, *args: str, heap: str = "256m",
              flags: Sequence[str] = ()) -> list[str]:
        return [
            "java", *flags, f"-Xmx{heap}", "-XX:+UseG1GC",
            f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
            f"-Dkafka.logs.dir={self.log_dir}",
            "-cp", f"{lib}/*", main, *args,
        ]

    def _format_storage(self, lib: Path) -> None:
        if (self.data_dir / "kafka-logs" / "meta.properties").exists():
            return
        cluster_id = self.cluster_id or new_cluster_id()
        # "=" form: a base64 id may start with "-", which argparse would take for an option
        cmd = self._java(lib, "kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}",
                         f"--config={self.config_file}",
                         flags=[QUICK_JIT, *ClassArchive(lib).use_flags()])
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise BrokerError(f"formatting Kafka storage failed:\n{done.stdout}{done.stderr}")

    def running_pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            return pid
        return pid

    def start(self, timeout_s: float = 90.0) -> tuple[int, bool]:
        """Start (or find running) and wait until ready. Returns (pid, jars downloaded?)."""
        lib, downloaded = ensure_jars(self.cache_dir)
        pid, _ = self.spawn(lib)
        self.wait_ready(timeout_s, pid)
        self.apply_acls()
        return pid, downloaded

    def spawn(self, lib: Path) -> tuple[int, bool]:
        """Start the node's process unless it runs, without waiting for it (a node of a
        cluster is ready only once a quorum of its peers runs too). Returns (pid, started?)."""
        pid = self.running_pid()
        if pid is not None:
            self._check_running_config()
            return pid, False
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        # it holds the users' passwords: readable by this user only
        self.config_file.touch(mode=0o600, exist_ok=True)
        self.config_file.chmod(0o600)
        self.config_file.write_text(self.server_properties())
        self._format_storage(lib)
        agent = self._metrics_agent()
        classes = ClassArchive(lib).node_flags(self.data_dir, may_train=not agent)
        out = open(self.log_dir / "stdout.log", "ab")  # noqa: SIM115 - owned by the child
        proc = subprocess.Popen(
            self._java(lib, "kafka.Kafka", str(self.config_file), heap=self.heap,
                       flags=[*agent, *classes]),
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        out.close()
        self.pid_file.write_text(f"{proc.pid}\n")
        return proc.pid, True

    def _check_running_config(self) -> None:
        """A broker already running with other security (started before SASL, or with
        another secret) would only time out at the first client: say why instead."""
        try:
            running = self.config_file.read_text()
        except FileNotFoundError:
            return
        if running != self.server_properties():
            raise BrokerError(
                f"the broker running from {self.data_dir} was started with other settings "
                "(ports, security protocol or Kafka secret); stop it (`croupier kafka down`) and "
                "start it again")

    def apply_acls(self) -> None:
        """The instance's ACLs, by the admin principal (idempotent: every start)."""
        if self.secured and self.instance:
            kafka_clients.ensure_acls(self.bootstrap, self.instance)

    def _metrics_agent(self) -> list[str]:
        """The JMX exporter flag, so Prometheus can scrape the broker; fetched once per machine."""
        if self.metrics_port is None:
            return []
        from services.infra.jmx_agent import JmxAgentError, ensure_agent, javaagent_flag
        try:
            return [javaagent_flag(ensure_agent(self.cache_dir), self.metrics_port)]
        except JmxAgentError as exc:
            print(f"warning: broker starts without its metrics endpoint: {exc}")
            return []

    def wait_ready(self, timeout_s: float, pid: int) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not _alive(pid):
                raise BrokerError(f"Kafka exited during start-up; last log lines:\n{self.log_tail()}")
            if admin_ready(self.bootstrap, timeout_s=3.0) is not None:
                ClassArchive.node_ready(self.data_dir)
                return
            time.sleep(0.5)
        raise BrokerError(f"Kafka not ready after {timeout_s:.0f}s; last log lines:\n{self.log_tail()}")

    def kill(self) -> int | None:
        """kill -9 the node (what a lost machine looks like to the others). Returns its pid."""
        pid = self.running_pid()
        if pid is None:
            return None
        os.kill(pid, signal.SIGKILL)
        while _alive(pid):
            time.sleep(0.05)
        ClassArchive.keep_training(self.data_dir, clean_exit=False)
        self.pid_file.unlink(missing_ok=True)
        return pid

    def stop(self, timeout_s: float = 30.0) -> bool:
        """Stop cleanly (SIGTERM, then SIGKILL after the timeout). False if nothing ran."""
        pid = self.running_pid()
        if pid is None:  # gone already: how it ended is not known
            ClassArchive.keep_training(self.data_dir, clean_exit=False)
            self.pid_file.unlink(missing_ok=True)
            return False
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        clean = not _alive(pid)
        if not clean:
            os.kill(pid, signal.SIGKILL)
            while _alive(pid):
                time.sleep(0.1)
        ClassArchive.keep_training(self.data_dir, clean_exit=clean)
        self.pid_file.unlink(missing_ok=True)
        return True

    def status(self) -> BrokerStatus:
        pid = self.running_pid()
        topics = admin_ready(self.bootstrap, timeout_s=3.0) if pid else None
        return BrokerStatus(pid=pid, running=pid is not None, ready=topics is not None,
                            bootstrap=self.bootstrap, data_dir=self.data_dir, topics=topics or [])

    def log_tail(self, lines: int = 30) -> str:
        texts = []
        for name in ("server.log", "stdout.log"):
            path = self.log_dir / name
            if path.exists():
                texts.append("\n".join(path.read_text(errors="replace").splitlines()[-lines:]))
        return "\n".join(texts) or "(no log written)"


def _alive(pid: int) -> bool:
    """True while the process exists and is not a zombie waiting to be reaped."""
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
        if waited == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def _settings():
    from services.infra.settings import get_settings
    return get_settings()


def new_cluster_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


@dataclass(frozen=True)
class NodeStatus:
    id: int  # the node.id partition metadata names as leader
    pid: int | None
    port: int
    up: bool  # its process runs and its listener answers an admin client


@dataclass
class LocalCluster:
    """The local nodes of one cluster. `up` starts whichever are down (the way an operator
    brings back a killed node) and waits until every one answers; `down` stops them all."""

    nodes: list[LocalBroker]

    @property
    def bootstrap(self) -> str:
        """Every node's listener: a client reaches the cluster through any that is up."""
        return ",".join(node.bootstrap for node in self.nodes)

    def node(self, node_id: int) -> LocalBroker:
        return next(n for n in self.nodes if n.node_id == node_id)

    def up(self, timeout_s: float = 120.0) -> tuple[list[tuple[LocalBroker, int, bool]], bool]:
        """Start the nodes that are down, wait for all. Returns ([(node, pid, started?)],
        jars downloaded?)."""
        lib, downloaded = ensure_jars(self.nodes[0].cache_dir)
        spawned = [(node, *node.spawn(lib)) for node in self.nodes]
        deadline = time.monotonic() + timeout_s
        for node, pid, _ in spawned:
            node.wait_ready(max(1.0, deadline - time.monotonic()), pid)
        self.wait_brokers(max(1.0, deadline - time.monotonic()))
        self.apply_acls()
        return spawned, downloaded

    def apply_acls(self) -> None:
        """The instance's ACLs, by the admin principal (cluster-wide metadata: once)."""
        first = self.nodes[0]
        if first.secured and first.instance:
            kafka_clients.ensure_acls(self.bootstrap, first.instance)

    def wait_brokers(self, timeout_s: float) -> None:
        """Until the cluster's metadata lists every node as a broker (a node answers an
        admin client before the others have registered)."""
        deadline = time.monotonic() + timeout_s
        want = {n.node_id for n in self.nodes}
        while True:
            live = live_brokers(self.bootstrap)
            if live is not None and want <= live:
                return
            if time.monotonic() >= deadline:
                raise BrokerError(f"the cluster lists brokers {sorted(live or ())}, not all of "
                                  f"{sorted(want)}, after {timeout_s:.0f}s")
            time.sleep(0.3)

    def down(self, timeout_s: float = 30.0) -> list[int]:
        """Stop every node that runs, all at once: stopped one after another, the last ones
        would wait out their controlled shutdown without a quorum. Returns the ids stopped."""
        running = [(n, pid) for n in self.nodes if (pid := n.running_pid()) is not None]
        for _, pid in running:
            os.kill(pid, signal.SIGTERM)
        for node, _ in running:
            node.stop(timeout_s)
        for node in self.nodes:
            node.pid_file.unlink(missing_ok=True)
        return [node.node_id for node, _ in running]

    def status(self) -> list[NodeStatus]:
        """Each node: up when its process runs and the cluster's metadata lists it as an
        unfenced broker (a node that answers but has not caught up is not up)."""
        pids = [node.running_pid() for node in self.nodes]
        live = live_brokers(self.bootstrap, timeout_s=3.0) if any(pids) else None
        return [NodeStatus(id=node.node_id, pid=pid, port=node.port,
                           up=pid is not None and live is not None and node.node_id in live)
                for node, pid in zip(self.nodes, pids, strict=True)]


def live_brokers(bootstrap: str, timeout_s: float = 5.0) -> set[int] | None:
    """The node ids the cluster's metadata lists as unfenced brokers now, or None if
    unreachable."""
    return _probe(bootstrap, timeout_s, lambda admin: {
        int(b["broker_id"]) for b in admin.describe_cluster()["brokers"]
        if not b.get("is_fenced")})


def cluster_nodes(root: Path, cache_dir: Path, brokers: int, *, port: int,
                  controller_port: int, metrics_port: int | None = None, heap: str = "1g",
                  replication: int = 1, secured: bool | None = None,
                  instance: str | None = None, session_ms: int | None = None) -> LocalCluster:
    """`brokers` nodes under `root`: one node keeps `root` itself as its data directory
    (the single broker's layout); more take `root/node-<id>`, formatted with one cluster id
    kept in `root/cluster.id`. Node n's ports are node 0's plus 3n."""
    if brokers == 1:
        return LocalCluster([LocalBroker(
            data_dir=root, cache_dir=cache_dir, port=port, controller_port=controller_port,
            heap=heap, metrics_port=metrics_port, secured=secured, instance=instance,
            replication=replication, session_ms=session_ms)])
    root.mkdir(parents=True, exist_ok=True)
    id_file = root / "cluster.id"
    if not id_file.exists():
        id_file.write_text(new_cluster_id() + "\n")
    cluster_id = id_file.read_text().strip()
    step = NODE_PORT_STEP
    voters = tuple((n + 1, controller_port + step * n) for n in range(brokers))
    return LocalCluster([LocalBroker(
        data_dir=root / f"node-{n + 1}", cache_dir=cache_dir, port=port + step * n,
        controller_port=controller_port + step * n, heap=heap,
        metrics_port=None if metrics_port is None else metrics_port + step * n,
        secured=secured, instance=instance, node_id=n + 1, voters=voters,
        replication=replication, cluster_id=cluster_id, session_ms=session_ms)
        for n in range(brokers)])


def cluster_from_settings(settings) -> LocalCluster:
    """The local cluster the settings describe: `kafka_brokers` nodes, data under
    `<home>/kafka` for one and `<home>/kafka-cluster/node-<id>` for more."""
    brokers = settings.kafka_brokers
    root = settings.home / ("kafka" if brokers == 1 else "kafka-cluster")
    return cluster_nodes(
        root.resolve(), settings.cache_dir, brokers, port=settings.kafka_port,
        controller_port=settings.kafka_controller_port,
        metrics_port=settings.kafka_metrics_port, heap=settings.kafka_heap,
        replication=settings.replication_factor, secured=kafka_security.secured(settings),
        instance=settings.instance, session_ms=settings.kafka_node_session_ms)

