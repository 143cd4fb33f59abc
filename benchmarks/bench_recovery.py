"""How long a wallet worker takes to recover a partition of its ledger (issue 17, item 6).

A worker assigned a partition folds `wallet.ledger`'s partition before it answers for its
players (`kernel.OwnLog.recover`). This writes `--entries` valid entries (1,000,000 by
default: deposits of 10,000 players, chained as the wallet chains them) to one partition
of a fresh broker, then measures, in the same run:
- the baseline: reading the same records with the reader the kernel uses (kafka-python,
  outside any group), nothing parsed;
- the full fold: `OwnLog.recover` through `KafkaLogIO`'s reader: read, parse, fold, from 0;
- the snapshot path (services/infra/snapshots.py): a snapshot of the partition as it stood
  `--tail` entries (10,000) before the end, written to a compacted snapshot topic (its
  size, its write time, the longest the event loop was held while it was encoded), then a
  new worker's recovery from it: read and verify the snapshot, decode it, fold the tail.
Figures: seconds and entries/s of each, the ratios full fold ÷ baseline and snapshot
recovery ÷ full fold, and the folded state's size (docs/decisions/snapshots.md).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aiokafka import AIOKafkaProducer  # noqa: E402
from kafka import KafkaProducer  # noqa: E402
from kafka.admin import KafkaAdminClient, NewTopic  # noqa: E402

from services.infra.kafka_security import (  # noqa: E402
    ADMIN,
    aiokafka_options,
    kafka_python_options,
)
from services.infra.kernel import OwnLog, _read_log  # noqa: E402
from services.infra.local_broker import LocalBroker  # noqa: E402
from services.infra.own_log import Logged, broker_time  # noqa: E402
from services.infra.settings import Settings  # noqa: E402
from services.infra.snapshots import SnapshotStore  # noqa: E402
from services.wallet.ledger_fold import WalletFold  # noqa: E402
from services.wallet.snapshot_codec import WALLET_CODEC  # noqa: E402
from shared.events.sources import InputRef  # noqa: E402
from shared.events.wallet_events import WalletTransaction, tx_id  # noqa: E402
from shared.events.wallet_ledger import Account, LedgerEntry  # noqa: E402
from shared.topics import SNAPSHOT_CONFIGS, snapshot_topic  # noqa: E402
from tests.conftest import free_port  # noqa: E402

TOPIC = "bench-wallet-ledger"
SNAPSHOT_TOPIC = snapshot_topic(TOPIC)
PLAYERS = 10_000
TAIL = 10_000


def entries(count: int, days: float = 0.0):
    """`count` chained entries: each player's deposits, one after the other, recorded
    evenly over `days` (0: all at one instant, so nothing leaves the state window)."""
    start = datetime.now(UTC) - timedelta(days=days)
    step = timedelta(days=days) / max(count, 1)
    balances = [0] * PLAYERS
    seqs = [0] * PLAYERS
    for n in range(count):
        p = n % PLAYERS
        player = f"rec-p{p}"
        now = start + step * n
        balances[p] += 1000
        seqs[p] += 1
        tx = WalletTransaction(tx_id=tx_id("deposit", f"d{n}"), player_id=player,
                               kind="deposit", amount=1000, balance_after=balances[p],
                               currency="IDR", cause_id=f"d{n}", occurred_at=now)
        yield LedgerEntry(entry_id=f"bench:{n}", prev=f"bench:{n - 1}" if n else "",
                          source=InputRef(topic="bench-commands", partition=0, offset=n),
                          command="deposit",
                          account=Account(player_id=player, currency="IDR",
                                          balance=balances[p], tx_count=seqs[p]),
                          tx=tx, published_through=n - 1, recorded_at=now)


def create_topics(bootstrap: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, **kafka_python_options(ADMIN))
    admin.create_topics([NewTopic(TOPIC, 1, 1),
                         NewTopic(SNAPSHOT_TOPIC, 1, 1, topic_configs=SNAPSHOT_CONFIGS)])
    admin.close()


def write(bootstrap: str, batch) -> float:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, acks="all",
                             batch_size=1024 * 1024, max_request_size=8 * 1024 * 1024,
                             compression_type=None, **kafka_python_options(ADMIN))
    began = time.monotonic()
    for entry in batch:
        producer.send(TOPIC, key=entry.account.player_id.encode(),
                      value=entry.model_dump_json().encode(), partition=0)
    producer.flush()
    producer.close()
    return time.monotonic() - began


class _BenchIO:
    """The kernel's reads and keyed sends (what `KafkaLogIO.read`, `read_keyed` and
    `send_keyed` do) without a Faust app: an aiokafka producer, as Faust's is."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.producer: AIOKafkaProducer | None = None

    async def read(self, topic, partition, start):
        records, end = await asyncio.to_thread(_read_log, self.bootstrap, ADMIN, topic,
                                               partition, start)
        return [Logged(r.offset, r.value, broker_time(r.timestamp)) for r in records], end

    async def read_keyed(self, topic, partition):
        records, _ = await asyncio.to_thread(_read_log, self.bootstrap, ADMIN, topic,
                                             partition, 0)
        return [(r.offset, r.key, r.value) for r in records]

    async def send_keyed(self, topic, partition, records):
        if self.producer is None:
            self.producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, acks="all",
                                             max_request_size=2 * 1024 * 1024,
                                             **aiokafka_options(ADMIN))
            await self.producer.start()
        futures = [await self.producer.send(topic, value=v, key=k, partition=partition)
                   for k, v in records]
        return [(await f).offset for f in futures]

    async def publish(self, records):  # the outbox of a recovered partition: not measured
        return None

    async def close(self) -> None:
        if self.producer is not None:
            await self.producer.stop()


def run(coroutine):
    """`asyncio.run(coroutine)`'s result, not returned by the main task itself: Python
    3.11's `asyncio.run` formats the repr of its main task, result included, on the way
    out (`signal.getsignal` of its SIGINT handler), which for a folded state of 1,000,000
    entries is a full repr of every value, timed as if it were the recovery."""
    out = []

    async def main() -> None:
        out.append(await coroutine)

    asyncio.run(main())
    return out[0]


def worker(bootstrap: str, name: str, snapshots: bool = False) -> OwnLog:
    """A worker of the wallet as it runs: its fold keeps the default state window."""
    fold = WalletFold(Settings().wallet_state_window())
    own: OwnLog = OwnLog("wallet", TOPIC, fold, LedgerEntry.model_validate_json,
                         lambda e: e.account.player_id.encode(), name)
    own.io = _BenchIO(bootstrap)  # type: ignore[assignment]
    if snapshots:
        own.snapshots = SnapshotStore(TOPIC, WALLET_CODEC, name, topic=SNAPSHOT_TOPIC)
    return own


async def take_snapshot(own: OwnLog) -> dict:
    """Snapshot partition 0 as the kernel does between batches (copy, then encode in a
    thread, send), timing the event loop meanwhile: the longest it was held."""
    assert own.snapshots is not None
    state = own.states[0]
    longest = 0.0
    stop = False

    async def ticker() -> None:
        nonlocal longest
        while not stop:
            before = time.perf_counter()
            await asyncio.sleep(0.01)
            longest = max(longest, time.perf_counter() - before - 0.01)

    ticking = asyncio.ensure_future(ticker())
    await asyncio.sleep(0.05)
    began = time.monotonic()
    taken = await own.snapshots.start(own.io, state)  # type: ignore[arg-type]
    written_s = time.monotonic() - began
    stop = True
    await ticking
    await own.io.close()  # type: ignore[union-attr]
    assert taken is not None
    return {"snapshot_bytes": taken.manifest.size_bytes, "snapshot_chunks": taken.manifest.chunks,
            "snapshot_values": taken.manifest.values, "snapshot_write_seconds": written_s,
            "snapshot_copy_seconds": taken.copy_s, "snapshot_encode_seconds": taken.encode_s,
            "snapshot_send_seconds": taken.send_s, "loop_longest_stall_seconds": longest}


def measure(bootstrap: str, count: int, tail: int = TAIL, days: float = 0.0) -> dict:
    tail = min(tail, count // 2)
    create_topics(bootstrap)
    ledger = entries(count, days)
    wrote_s = write(bootstrap, itertools.islice(ledger, count - tail))
    # the snapshot: of the partition as a worker had it `tail` entries before the end
    writer = worker(bootstrap, "bench-writer", snapshots=True)
    run(writer.recover(0))
    snapshot = run(take_snapshot(writer))
    del writer
    wrote_s += write(bootstrap, ledger)
    began = time.monotonic()
    records, end = _read_log(bootstrap, ADMIN, TOPIC, 0, 0)
    baseline_s = time.monotonic() - began
    assert len(records) == count == end, (len(records), count, end)
    del records
    own = worker(bootstrap, "bench")
    began = time.monotonic()
    state = run(own.recover(0))
    recovery_s = time.monotonic() - began
    assert state.head == count - 1 and state.void == 0, (state.head, state.void)
    heir = worker(bootstrap, "bench-heir", snapshots=True)
    began = time.monotonic()
    restored = run(heir.recover(0))
    snapshot_recovery_s = time.monotonic() - began
    assert heir.snapshots is not None and heir.snapshots.restores[0][0] is not None, \
        heir.snapshots.restores if heir.snapshots else None
    assert restored == state, "the snapshot path folded another state than the full fold"
    return {"entries": count, "write_seconds": wrote_s, "baseline_read_seconds": baseline_s,
            "recovery_seconds": recovery_s,
            "baseline_entries_per_s": count / baseline_s,
            "recovery_entries_per_s": count / recovery_s,
            "ratio": recovery_s / baseline_s, "folded_keys": len(state.kv), "days": days,
            "tail_entries": tail, "snapshot_recovery_seconds": snapshot_recovery_s,
            "snapshot_ratio": snapshot_recovery_s / recovery_s, **snapshot}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--tail", type=int, default=TAIL,
                        help="entries after the snapshot, folded by the snapshot path")
    parser.add_argument("--days", type=float, default=365.0,
                        help="the entries are recorded evenly over this many days (the "
                             "wallet's state keeps the last 30; 0: all at one instant)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    external = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    broker = None
    if not external:
        broker = LocalBroker(data_dir=Path(tempfile.mkdtemp(prefix="croupier-bench-")),
                             cache_dir=Settings().cache_dir, port=free_port(),
                             controller_port=free_port())
        broker.start()
    try:
        figures = measure(external or broker.bootstrap, args.entries, args.tail, args.days)
    finally:
        if broker:
            broker.stop()
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"recovery of one wallet.ledger partition of {figures['entries']:,} entries "
              f"recorded over {figures['days']:g} days:")
        print(f"  baseline, the same records read and not parsed: "
              f"{figures['baseline_read_seconds']:.1f} s "
              f"({figures['baseline_entries_per_s']:,.0f} records/s)")
        print(f"  recovery (read, parse, fold): {figures['recovery_seconds']:.1f} s "
              f"({figures['recovery_entries_per_s']:,.0f} entries/s), "
              f"{figures['ratio']:.1f}x the baseline; {figures['folded_keys']:,} keys folded")
        print(f"  snapshot of the partition {figures['tail_entries']:,} entries before the "
              f"end: {figures['snapshot_bytes'] / 1e6:.0f} MB in {figures['snapshot_chunks']:,} "
              f"chunks, written in {figures['snapshot_write_seconds']:.1f} s (copy "
              f"{figures['snapshot_copy_seconds']:.2f} s, encode "
              f"{figures['snapshot_encode_seconds']:.1f} s in a thread, send "
              f"{figures['snapshot_send_seconds']:.1f} s); event loop held at most "
              f"{figures['loop_longest_stall_seconds'] * 1000:.0f} ms meanwhile")
        print(f"  recovery from the snapshot and the {figures['tail_entries']:,}-entry tail: "
              f"{figures['snapshot_recovery_seconds']:.1f} s, "
              f"{figures['snapshot_ratio']:.2f}x the full fold "
              f"({1 / figures['snapshot_ratio']:.1f} times faster), same state")
    return 0


if __name__ == "__main__":
    sys.exit(main())
