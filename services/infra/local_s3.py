"""A real S3-compatible object store on this machine: s3proxy (from Maven Central, like the
broker) with its filesystem backend, run as a plain `java` process on a loopback port.

For the archive's tests and for trying the S3 archive without a cloud account; "ready" means
a bucket can be created and listed, not merely that the port is open.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from services.infra.local_broker import REPO_ROOT, BrokerError, maven_jars

POM = REPO_ROOT / "deploy" / "s3proxy" / "pom.xml"
S3PROXY_VERSION = "2.6.0"
ACCESS_KEY = "croupier-local"
SECRET_KEY = "croupier-local-secret"  # a loopback test server's, not a credential of value


def s3proxy_jars(cache_dir: Path) -> tuple[Path, bool]:
    return maven_jars(POM, cache_dir / f"s3proxy-{S3PROXY_VERSION}" / "lib",
                      f"s3proxy {S3PROXY_VERSION}")


@dataclass
class LocalS3:
    data_dir: Path
    cache_dir: Path
    port: int
    proc: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def archive_url(self, bucket: str, prefix: str = "") -> str:
        return f"s3://{bucket}/{prefix}?endpoint={self.endpoint}&scheme=http"

    def env(self) -> dict[str, str]:
        """What a client process needs to reach it."""
        return {"CROUPIER_ARCHIVE_S3_ACCESS_KEY": ACCESS_KEY,
                "CROUPIER_ARCHIVE_S3_SECRET_KEY": SECRET_KEY}

    def start(self, timeout_s: float = 60.0) -> LocalS3:
        lib, _ = s3proxy_jars(self.cache_dir)
        blobs = self.data_dir / "blobs"
        blobs.mkdir(parents=True, exist_ok=True)
        props = self.data_dir / "s3proxy.properties"
        props.write_text(
            f"s3proxy.endpoint=http://127.0.0.1:{self.port}\n"
            "s3proxy.authorization=aws-v2-or-v4\n"
            f"s3proxy.identity={ACCESS_KEY}\n"
            f"s3proxy.credential={SECRET_KEY}\n"
            "jclouds.provider=filesystem\n"
            f"jclouds.filesystem.basedir={blobs}\n")
        log = open(self.data_dir / "s3proxy.log", "ab")  # noqa: SIM115 - owned by the child
        self.proc = subprocess.Popen(
            ["java", "-Xmx256m", "-DLOG_LEVEL=warn", "-cp", f"{lib}/*", "org.gaul.s3proxy.Main",
             "--properties", str(props)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        log.close()
        self._wait_ready(timeout_s)
        return self

    def _wait_ready(self, timeout_s: float) -> None:
        from services.infra.archive_store import ArchiveStoreError, S3Store

        os.environ.update(self.env())
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise BrokerError(f"s3proxy exited during start-up:\n{self.log_tail()}")
            try:
                S3Store("ready-probe", "", self.endpoint, "http", "us-east-1", ACCESS_KEY,
                        SECRET_KEY).names("")
                return
            except ArchiveStoreError:
                time.sleep(0.5)
        raise BrokerError(f"s3proxy not ready after {timeout_s:.0f}s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 20) -> str:
        path = self.data_dir / "s3proxy.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) \
            if path.exists() else "(no log written)"

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)
