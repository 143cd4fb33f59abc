"""A real, single-node Apache Kafka broker (KRaft combined mode) run from Maven jars.

No Docker engine exists on developer and CI machines, so the broker is assembled
from Maven Central (`deploy/kafka/pom.xml`), cached once per machine, and run as
a plain `java` process with loopback listeners on non-default ports. "Ready"
means an admin client can list topics, not merely that the port is open.

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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaError

from croupier.services.infra import kafka_security

REPO_ROOT = Path(__file__).resolve().parents[2]
DEPLOY_DIR = REPO_ROOT / "deploy" / "kafka"
POM = DEPLOY_DIR / "pom.xml"
LOG4J_CONFIG = DEPLOY_DIR / "log4j2.properties"
KAFKA_VERSION = "4.1.1"
JARS_MARKER = ".complete"


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


def admin_ready(bootstrap: str, timeout_s: float = 5.0) -> list[str] | None:
    """The topic list if an admin client (the admin principal) can talk to the cluster,
    else None."""
    try:
        admin = KafkaAdminClient(
            bootstrap_servers=bootstrap,
            request_timeout_ms=int(timeout_s * 1000),
            bootstrap_timeout_ms=int(timeout_s * 1000),
            client_id="croupier-probe",
            **kafka_security.kafka_python_options(kafka_security.ADMIN),
        )
    except (KafkaError, OSError, ValueError):
        return None
    try:
        return sorted(admin.list_topics())
    except (KafkaError, OSError):
        return None
    finally:
        admin.close()


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
    """One broker process owning `data_dir` (configs, KRaft metadata, logs, pid file)."""

    data_dir: Path
    cache_dir: Path
    port: int = 19092
    controller_port: int = 19093
    heap: str = "1g"
    metrics_port: int | None = None  # serve Prometheus metrics via the JMX exporter agent
    secured: bool | None = None  # SASL + ACLs; None: unless the settings say PLAINTEXT
    instance: str | None = None  # apply this platform instance's ACLs once ready

    def __post_init__(self) -> None:
        if self.secured is None:
            self.secured = kafka_security.secured(_settings())

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
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},"
                         f"CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.data_dir / "kafka-logs"),
            "num.partitions": "1",
            "default.replication.factor": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "8",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "false",
        }
        if self.secured:
            props.update(kafka_security.broker_security_properties(
                self.port, self.controller_port, kafka_security.local_credentials(_settings())))
        return "".join(f"{k}={v}\n" for k, v in props.items())

    def _java(self, lib: Path, main: str, *args: str, heap: str = "256m",
              agent: Sequence[str] = ()) -> list[str]:
        return [
            "java", *agent, f"-Xmx{heap}", "-XX:+UseG1GC",
            f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
            f"-Dkafka.logs.dir={self.log_dir}",
            "-cp", f"{lib}/*", main, *args,
        ]

    def _format_storage(self, lib: Path) -> None:
        if (self.data_dir / "kafka-logs" / "meta.properties").exists():
            return
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        # "=" form: a base64 id may start with "-", which argparse would take for an option
        cmd = self._java(lib, "kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}",
                         f"--config={self.config_file}")
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
        pid = self.running_pid()
        if pid is not None:
            self._check_running_config()
            self.wait_ready(timeout_s, pid)
            self.apply_acls()
            return pid, downloaded
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        # it holds the users' passwords: readable by this user only
        self.config_file.touch(mode=0o600, exist_ok=True)
        self.config_file.chmod(0o600)
        self.config_file.write_text(self.server_properties())
        self._format_storage(lib)
        out = open(self.log_dir / "stdout.log", "ab")  # noqa: SIM115 - owned by the child
        proc = subprocess.Popen(
            self._java(lib, "kafka.Kafka", str(self.config_file), heap=self.heap,
                       agent=self._metrics_agent()),
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        out.close()
        self.pid_file.write_text(f"{proc.pid}\n")
        self.wait_ready(timeout_s, proc.pid)
        self.apply_acls()
        return proc.pid, downloaded

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
            kafka_security.ensure_acls(self.bootstrap, self.instance)

    def _metrics_agent(self) -> list[str]:
        """The JMX exporter flag, so Prometheus can scrape the broker; fetched once per machine."""
        if self.metrics_port is None:
            return []
        from croupier.services.infra.jmx_agent import JmxAgentError, ensure_agent, javaagent_flag
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
                return
            time.sleep(0.5)
        raise BrokerError(f"Kafka not ready after {timeout_s:.0f}s; last log lines:\n{self.log_tail()}")

    def stop(self, timeout_s: float = 30.0) -> bool:
        """Stop cleanly (SIGTERM, then SIGKILL after the timeout). False if nothing ran."""
        pid = self.running_pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
            while _alive(pid):
                time.sleep(0.1)
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
    from croupier.services.infra.settings import get_settings
    return get_settings()


def broker_from_settings(settings) -> LocalBroker:
    """The local broker the settings describe (data under `<home>/kafka`)."""
    return LocalBroker(
        data_dir=(settings.home / "kafka").resolve(),
        cache_dir=settings.cache_dir,
        port=settings.kafka_port,
        controller_port=settings.kafka_controller_port,
        heap=settings.kafka_heap,
        metrics_port=settings.kafka_metrics_port,
        secured=kafka_security.secured(settings),
        instance=settings.instance,
    )
