"""Shared fixtures. Integration tests run against a real Kafka broker: the cluster
named by KAFKA_BOOTSTRAP_SERVERS if set, otherwise one local broker per test run."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

# The tests run the platform with its development secrets (production refuses them).
os.environ.setdefault("CROUPIER_ENV", "development")

from services.infra.local_broker import LocalBroker
from services.infra.local_s3 import LocalS3
from services.infra.settings import Settings
from tests.ports import free_port


def instance_for(home: Path) -> str:
    """A platform instance per state directory: its own consumer groups and private topics,
    so test platforms sharing the session broker never join each other's groups."""
    return "t" + hashlib.sha256(str(home).encode()).hexdigest()[:10]


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The broker the modules of one pytest process share, for records stamped as they are
    written. A module that writes records stamped in the past or the future (a floor played
    20 minutes ago, a shoe an hour ago, an annulment 3 minutes on) takes `platform_kafka`:
    the replay reads a round by time, and a window that meets another module's record
    stamped past its end stops there, before the round's own (under pytest-xdist the modules
    before it on the shared broker change from run to run)."""
    external = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if external:
        yield external
        return
    broker = LocalBroker(
        data_dir=tmp_path_factory.mktemp("kafka"),
        cache_dir=Settings().cache_dir,
        port=free_port(),
        controller_port=free_port(),
    )
    broker.start()
    try:
        yield broker.bootstrap
    finally:
        broker.stop()


class BrokerPool:
    """Fresh brokers, one per module, each started while the module before it runs: a
    broker takes about 5 s to start and 0.6 s to stop, paid once per module that runs the
    services, so the next one is warmed in the background and the last one stopped there
    too. Never reused: each module still gets a broker no other module wrote to."""

    def __init__(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        self.tmp = tmp_path_factory
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="broker-pool")
        self.spare: Future[LocalBroker] | None = None

    def _started(self, data_dir: Path) -> LocalBroker:
        broker = LocalBroker(data_dir=data_dir, cache_dir=Settings().cache_dir,
                             port=free_port(), controller_port=free_port())
        broker.start()
        return broker

    def _warm(self) -> Future[LocalBroker]:
        return self.pool.submit(self._started, self.tmp.mktemp("platform-kafka"))

    def take(self) -> LocalBroker:
        current = self.spare or self._warm()
        self.spare = self._warm()
        return current.result()

    def give_back(self, broker: LocalBroker) -> None:
        self.pool.submit(broker.stop)

    def close(self) -> None:
        if self.spare is not None:
            self.spare.result().stop()
        self.pool.shutdown(wait=True)


@pytest.fixture(scope="session")
def broker_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerPool]:
    pool = BrokerPool(tmp_path_factory)
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture(scope="module")
def platform_kafka(request: pytest.FixtureRequest) -> Iterator[str]:
    """A broker of the module's own for tests that run the services: a platform owns its
    topics, so two platforms' services must never read each other's records. With
    KAFKA_BOOTSTRAP_SERVERS set, that cluster is used (give each run a fresh one)."""
    external = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if external:
        yield external
        return
    pool: BrokerPool = request.getfixturevalue("broker_pool")
    broker = pool.take()
    try:
        yield broker.bootstrap
    finally:
        pool.give_back(broker)


@pytest.fixture(scope="session")
def local_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalS3]:
    """A real S3-compatible server (s3proxy from Maven Central, filesystem backend) on a free
    loopback port, for the archive's tests; its credentials are put in this process's
    environment (and so in the processes the tests start)."""
    server = LocalS3(tmp_path_factory.mktemp("s3"), Settings().cache_dir, free_port()).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["file", "s3"])
def archive_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty archive: a local directory, then a bucket on the local S3-compatible server."""
    if request.param == "file":
        return (tmp_path / "archive").as_uri()
    server: LocalS3 = request.getfixturevalue("local_s3")
    return server.archive_url(f"archive-{hashlib.sha256(str(tmp_path).encode()).hexdigest()[:12]}")
