"""How long a wallet worker takes to recover a partition of its ledger (issue 17, item 6).

A worker assigned a partition folds `wallet.ledger`'s partition before it answers for its
players (`kernel.OwnLog.recover`). This writes `--entries` valid entries (1,000,000 by
default: deposits and bets of 10,000 players, chained as the wallet chains them) to one
partition of a fresh broker, then measures, in the same run:
- the baseline: reading the same records with the reader the kernel uses (kafka-python,
  outside any group), nothing parsed;
- the recovery: `OwnLog.recover` through `KafkaLogIO`'s reader: read, parse, fold.
Figures: seconds and entries/s of each, the ratio recovery ÷ baseline, and the folded
state's size. There is no snapshot yet, so recovery grows with the partition's ledger
(docs/decisions/ledger.md says what bounds it next).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafka import KafkaProducer  # noqa: E402
from kafka.admin import KafkaAdminClient, NewTopic  # noqa: E402

from croupier.services.infra.kafka_security import ADMIN, kafka_python_options  # noqa: E402
from croupier.services.infra.kernel import OwnLog, _read_log  # noqa: E402
from croupier.services.infra.local_broker import LocalBroker  # noqa: E402
from croupier.services.infra.settings import Settings  # noqa: E402
from croupier.services.wallet.ledger_fold import WALLET_FOLD  # noqa: E402
from croupier.shared.events.sources import InputRef  # noqa: E402
from croupier.shared.events.wallet_events import WalletTransaction, tx_id  # noqa: E402
from croupier.shared.events.wallet_ledger import Account, LedgerEntry  # noqa: E402
from tests.conftest import free_port  # noqa: E402

TOPIC = "bench-wallet-ledger"
PLAYERS = 10_000


def entries(count: int):
    """`count` chained entries: each player's deposits, one after the other."""
    now = datetime.now(UTC)
    balances = [0] * PLAYERS
    seqs = [0] * PLAYERS
    for n in range(count):
        p = n % PLAYERS
        player = f"rec-p{p}"
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


def write(bootstrap: str, count: int) -> float:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, **kafka_python_options(ADMIN))
    admin.create_topics([NewTopic(TOPIC, 1, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, acks="all",
                             batch_size=1024 * 1024, max_request_size=8 * 1024 * 1024,
                             compression_type=None, **kafka_python_options(ADMIN))
    began = time.monotonic()
    for entry in entries(count):
        producer.send(TOPIC, key=entry.account.player_id.encode(),
                      value=entry.model_dump_json().encode(), partition=0)
    producer.flush()
    producer.close()
    return time.monotonic() - began


class _ReadOnlyIO:
    """The kernel's reader (what `KafkaLogIO.read` does) without a Faust app."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    async def read(self, topic, partition, start):
        records, end = await asyncio.to_thread(_read_log, self.bootstrap, ADMIN, topic,
                                               partition, start)
        return [(r.offset, r.value) for r in records], end

    async def publish(self, records):  # the outbox of a recovered partition: not measured
        return None


def measure(bootstrap: str, count: int) -> dict:
    wrote_s = write(bootstrap, count)
    began = time.monotonic()
    records, end = _read_log(bootstrap, ADMIN, TOPIC, 0, 0)
    baseline_s = time.monotonic() - began
    assert len(records) == count == end, (len(records), count, end)
    del records
    own = OwnLog("wallet", TOPIC, WALLET_FOLD, LedgerEntry.model_validate_json,
                 lambda e: e.account.player_id.encode(), "bench")
    own.io = _ReadOnlyIO(bootstrap)  # type: ignore[assignment]
    began = time.monotonic()
    state = asyncio.run(own.recover(0))
    recovery_s = time.monotonic() - began
    assert state.head == count - 1 and state.void == 0, (state.head, state.void)
    return {"entries": count, "write_seconds": wrote_s, "baseline_read_seconds": baseline_s,
            "recovery_seconds": recovery_s,
            "baseline_entries_per_s": count / baseline_s,
            "recovery_entries_per_s": count / recovery_s,
            "ratio": recovery_s / baseline_s, "folded_keys": len(state.kv)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=1_000_000)
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
        figures = measure(external or broker.bootstrap, args.entries)
    finally:
        if broker:
            broker.stop()
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"recovery of one wallet.ledger partition of {figures['entries']:,} entries:")
        print(f"  baseline, the same records read and not parsed: "
              f"{figures['baseline_read_seconds']:.1f} s "
              f"({figures['baseline_entries_per_s']:,.0f} records/s)")
        print(f"  recovery (read, parse, fold): {figures['recovery_seconds']:.1f} s "
              f"({figures['recovery_entries_per_s']:,.0f} entries/s), "
              f"{figures['ratio']:.1f}x the baseline; {figures['folded_keys']:,} keys folded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
