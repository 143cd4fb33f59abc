"""The Prometheus JMX exporter agent for the Kafka broker, fetched once from Maven Central.

The broker has no Prometheus endpoint of its own; the agent
(`io.prometheus.jmx:jmx_prometheus_javaagent`) serves its MBeans as `/metrics`,
shaped by `deploy/kafka/jmx-exporter.yml`. `python -m services.infra.jmx_agent`
fetches the jar (once per machine, next to the broker's jars) and prints the JVM flag.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
JMX_EXPORTER_CONFIG = REPO_ROOT / "deploy" / "kafka" / "jmx-exporter.yml"
JMX_AGENT_VERSION = "1.0.1"
JMX_AGENT_ARTIFACT = f"io.prometheus.jmx:jmx_prometheus_javaagent:{JMX_AGENT_VERSION}"
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
# Native broker: next to its listeners (19092 clients, 19093 controller).
DEFAULT_AGENT_PORT = 19094


class JmxAgentError(RuntimeError):
    """The agent jar could not be fetched."""


def agent_jar(cache_dir: Path) -> Path:
    return cache_dir / f"jmx-exporter-{JMX_AGENT_VERSION}" / "jmx_prometheus_javaagent.jar"


def ensure_agent(cache_dir: Path) -> Path:
    """The agent jar, downloaded with Maven the first time only."""
    jar = agent_jar(cache_dir)
    if jar.exists():
        return jar
    if shutil.which("mvn") is None:
        raise JmxAgentError("Maven (mvn) is needed once to fetch the JMX exporter agent")
    staging = jar.parent.with_name(jar.parent.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    cmd = ["mvn", "-q", "-B", f"{DEPENDENCY_PLUGIN}:copy", f"-Dartifact={JMX_AGENT_ARTIFACT}",
           f"-DoutputDirectory={staging}", "-Dmdep.stripVersion=true"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0 or not (staging / jar.name).exists():
        raise JmxAgentError(f"fetching {JMX_AGENT_ARTIFACT} failed:\n"
                            f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    shutil.rmtree(jar.parent, ignore_errors=True)
    staging.rename(jar.parent)
    return jar


def javaagent_flag(jar: Path, port: int = DEFAULT_AGENT_PORT, host: str = "127.0.0.1",
                   config: Path = JMX_EXPORTER_CONFIG) -> str:
    """The JVM flag that serves the broker's metrics on http://host:port/metrics."""
    return f"-javaagent:{jar}={host}:{port}:{config}"


def main() -> int:
    from services.infra.settings import get_settings

    try:
        jar = ensure_agent(get_settings().cache_dir)
    except JmxAgentError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(javaagent_flag(jar))
    return 0


if __name__ == "__main__":
    sys.exit(main())
