"""Snapshots of `wallet.ledger` on a real broker (services/infra/snapshots.py): a worker
folds a partition of wallet entries, writes its snapshot to `wallet.ledger.snapshots` as
the `wallet` principal (ACLs enforced), and a new worker recovers from the snapshot and the
log's tail into the state the full fold gives, record for record. A second snapshot
tombstones the first's records.

The first test's worker is the kernel's `OwnLog` with the wallet's fold and codec and the
real `KafkaLogIO` (its producer an aiokafka producer, as Faust's is): the snapshot's way
through Kafka and back, compared with the full fold. The second runs a wallet process: the
wiring (its Faust producer, its settings, its recovery after a restart)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaProducer
from kafka import KafkaProducer

from services.infra import topic_admin
from services.infra.kafka_clients import ensure_acls
from services.infra.kafka_security import (
    ADMIN,
    aiokafka_options,
    kafka_python_options,
)
from services.infra.kernel import KafkaLogIO, OwnLog
from services.infra.log_reader import read_to_end
from services.infra.processes import ServiceProcess
from services.infra.snapshots import SnapshotStore
from services.wallet.ledger_fold import WALLET_FOLD
from services.wallet.snapshot_codec import WALLET_CODEC
from shared.events.wallet_ledger import LedgerEntry
from shared.topics import WALLET_LEDGER_SNAPSHOTS_TOPIC, WALLET_LEDGER_TOPIC, topic_catalogue
from tests.conftest import free_port, instance_for
from tests.integration.money_support import wait_for
from tests.integration.test_wallet_scale_live import (
    OPERATOR,
    RUN,
    make_player,
    retrying,
    wallet_env,
)
from tests.ledger_builder import Ledger

pytestmark = pytest.mark.kafka
PARTITION = 1


@pytest.fixture(scope="module")
def bootstrap(platform_kafka: str) -> str:
    admin = topic_admin.admin_client(platform_kafka)
    try:
        topic_admin.apply(admin, topic_catalogue(), acls_for="snaptest")
        described = topic_admin.describe(admin, [WALLET_LEDGER_SNAPSHOTS_TOPIC])
        configs = described[WALLET_LEDGER_SNAPSHOTS_TOPIC].configs
    finally:
        admin.close()
    assert configs["cleanup.policy"] == "compact"
    return platform_kafka


class _FaustLikeProducer:
    """What `KafkaLogIO` asks of a Faust app's producer, on aiokafka (Faust's own)."""

    def __init__(self, producer: AIOKafkaProducer) -> None:
        self.producer = producer

    async def send(self, topic, key, value, partition, timestamp, headers):
        return await self.producer.send(topic, value=value, key=key, partition=partition)


class _App:
    def __init__(self, producer: _FaustLikeProducer) -> None:
        self.producer = producer


class _LogIO(KafkaLogIO):
    """The real reads and keyed sends; the outbox a recovery publishes again is kept here
    (not under test)."""

    published: list = []

    async def publish(self, records) -> None:
        self.published += records


def write_ledger(bootstrap: str, entries) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks="all",
                             **kafka_python_options("wallet"))
    try:
        for e in entries:
            producer.send(WALLET_LEDGER_TOPIC, key=e.account.player_id.encode(),
                          value=e.model_dump_json().encode(), partition=PARTITION)
        producer.flush(30)
    finally:
        producer.close()


def worker(io: Any, writer: str, snapshots: bool = True) -> OwnLog:
    own: OwnLog = OwnLog("wallet", WALLET_LEDGER_TOPIC, WALLET_FOLD, LedgerEntry.model_validate_json,
                         lambda e: e.account.player_id.encode(), writer)
    own.io = io
    if snapshots:
        own.snapshots = SnapshotStore(WALLET_LEDGER_TOPIC, WALLET_CODEC, writer, every_entries=1000)
    return own


async def snapshot_now(own: OwnLog):
    assert own.snapshots is not None
    own.snapshot_if_due({PARTITION})
    task = own.snapshots._of(PARTITION).running
    assert task is not None
    taken = await task
    assert taken is not None
    return taken


def test_a_new_worker_recovers_from_the_snapshot_and_the_tail_as_the_full_fold(bootstrap):
    ledger = Ledger("live", players=200, partition=PARTITION)
    write_ledger(bootstrap, ledger.entries(4000))

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all",
                                    **aiokafka_options("wallet"))
        await producer.start()
        try:
            io = _LogIO(_App(_FaustLikeProducer(producer)), bootstrap,  # type: ignore[arg-type]
                        "wallet")
            # a cluster whose catalogue has no snapshot topic yet: no snapshots, no error
            assert await io.read_keyed("no.such.snapshots", PARTITION) == []
            owner = worker(io, "live-owner")
            await owner.recover(PARTITION)
            first = await snapshot_now(owner)
            assert first.manifest.end == 4000 and first.manifest.chunks > 1

            write_ledger(bootstrap, ledger.entries(600))  # the tail after the snapshot
            began = time.monotonic()
            heir = worker(io, "live-heir")
            recovered = await heir.recover(PARTITION)
            took = time.monotonic() - began
            assert heir.snapshots is not None
            used, refused = heir.snapshots.restores[PARTITION]
            assert used is not None and used.snapshot_id == first.manifest.snapshot_id, refused
            full = await worker(io, "live-full", snapshots=False).recover(PARTITION)
            assert recovered == full and recovered.head == 4599
            assert list(recovered.kv) == list(full.kv)
            print(f"recovered 4,000 + 600 entries from a snapshot in {took:.2f} s")

            # the heir snapshots once more: the first one's records are tombstoned
            write_ledger(bootstrap, ledger.entries(1000))
            await heir.recover(PARTITION)
            second = await snapshot_now(heir)
            assert second.tombstones == first.manifest.chunks + 1
            live: dict[bytes, bytes | None] = {}
            for _, key, value in await io.read_keyed(WALLET_LEDGER_SNAPSHOTS_TOPIC, PARTITION):
                assert key is not None
                live[key] = value
            kept = {k for k, v in live.items() if v is not None}
            assert kept == {second.manifest.key, *(second.manifest.chunk_key(n)
                                                   for n in range(second.manifest.chunks))}
            again = worker(io, "live-again")
            assert await again.recover(PARTITION) == await worker(
                io, "live-full2", snapshots=False).recover(PARTITION)
            assert again.snapshots is not None
            assert again.snapshots.restores[PARTITION][0] == second.manifest
        finally:
            await producer.stop()

    asyncio.run(run())


def test_a_wallet_process_snapshots_its_ledger_and_recovers_from_it_on_restart(
        bootstrap, tmp_path):
    """The wiring: a wallet worker (snapshots every 10 ledger entries) writes snapshots
    through its Faust producer as it folds; restarted with nothing in memory, it recovers
    its partitions from them and answers every balance as before."""
    home = tmp_path / "home"
    port = free_port()
    env = {**wallet_env(bootstrap, home, port), "CROUPIER_SNAPSHOT_EVERY_ENTRIES": "10"}
    ensure_acls(bootstrap, instance_for(home))
    log = home / "wallet-0.log"
    wallet = ServiceProcess("wallet", port, log, env, worker=0)
    players = {f"snap-{RUN}-{i}": 1000 * (i + 1) for i in range(16)}
    try:
        wallet.start().wait_ready(90)
        with httpx.Client(base_url=wallet.base_url, timeout=30) as http:
            for player, amount in players.items():
                make_player(http, player, amount)
        wait_for(lambda: manifests(bootstrap), "a snapshot manifest", 30)
        wallet.stop()
        wallet.start().wait_ready(90)
        with httpx.Client(base_url=wallet.base_url, timeout=30) as http:
            for player, amount in players.items():
                r = retrying(lambda p=player: http.get(f"/accounts/{p}", headers=OPERATOR))
                assert r.status_code == 200 and r.json()["balance"] == amount, r.text
    finally:
        wallet.stop()
    assert "recovered from snapshot" in log.read_text(), log.read_text()[-3000:]


def manifests(bootstrap: str) -> list[bytes]:
    return [r.key for r in read_to_end(bootstrap, WALLET_LEDGER_SNAPSHOTS_TOPIC, principal=ADMIN)
            if r.key and b"/m/" in r.key and r.value is not None]
