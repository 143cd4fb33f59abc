"""Benchmark: three nodes beside one, and the loss of a leader (issue 30, item 5).

1. Steady state: a one-node cluster (replication 1) and, after it, a three-node cluster
   (replication 3, min.insync.replicas 2), each on free loopback ports in a temporary
   directory, 512m of heap per node. On each the topic catalogue is applied with its
   replication and N records (~200 bytes, 64 keys) are produced to `wallet.ledger` by the
   durable producer (acks=all, idempotent) as the admin principal, flushed every 1,000:
   records/s and the latency of a sample of sends (send to its future resolving), p50 and
   p99. The three-node figures are ratios to the one-node ones measured in the same run.
2. Leader loss, on the three-node cluster: a thread sends one small record every 5 ms to
   one partition of `wallet.ledger` and one of `table.events` (durable producer) while the
   leader of the `wallet.ledger` partition is killed -9, K times: for each partition, the
   time from the kill until the first record sent after it is acknowledged (how long a
   producer is without a leader, or, for a partition the node only followed, without its
   in-sync replicas), and the time until the metadata names a new leader. The node is
   brought back and every replica awaited in sync before the next kill. p50 and max over
   the kills, against the three-node steady send p99 as the baseline. Then each partition
   is read back: every acknowledged record must be in it exactly once (exit 1 otherwise).

Always runs its own clusters (it kills their nodes), never KAFKA_BOOTSTRAP_SERVERS.

    python benchmarks/bench_cluster.py [--records 20000] [--kills 3] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("CROUPIER_ENV", "development")

from kafka import KafkaConsumer, TopicPartition  # noqa: E402
from kafka.errors import KafkaError  # noqa: E402

from services.infra import kafka_clients, topic_admin  # noqa: E402
from services.infra.kafka_security import ADMIN, kafka_python_options  # noqa: E402
from services.infra.local_broker import LocalCluster, cluster_nodes  # noqa: E402
from services.infra.settings import NODE_PORT_STEP, Settings  # noqa: E402
from shared.topics import (  # noqa: E402  # noqa: E402
    TABLE_EVENTS_TOPIC,
    WALLET_LEDGER_TOPIC,
    min_insync_replicas,
    topic_catalogue,
)
from tests.ports import free_stepped_ports  # noqa: E402

NODES = 3
HEAP = "512m"
RECORDS, KILLS = 20_000, 3
QUICK_RECORDS, QUICK_KILLS = 3_000, 2
KEYS = 64
VALUE_BYTES = 200
FLUSH_EVERY = 1_000
SAMPLE_EVERY = 10  # one send in ten is timed
WARM_UP = 500  # records produced before the clock starts (connections, metadata)
PACE_S = 0.005
CALM_BEFORE_KILL_S = 1.5
RECOVERY_TIMEOUT_S = 90.0


# ---- pure parts --------------------------------------------------------------------------

def percentile(values: Iterable[float], q: float) -> float | None:
    """The q-th percentile (0..100) by linear interpolation between closest ranks; None
    for no values."""
    ordered = sorted(values)
    if not ordered:
        return None
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} outside 0..100")
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def latency_summary(seconds: Sequence[float]) -> dict:
    """Count, p50, p99 and max of latencies given in seconds, reported in milliseconds."""
    def ms(value: float | None) -> float | None:
        return None if value is None else round(value * 1000, 3)
    return {"count": len(seconds), "p50_ms": ms(percentile(seconds, 50)),
            "p99_ms": ms(percentile(seconds, 99)), "max_ms": ms(max(seconds, default=None))}


def ratio(value: float | None, baseline: float | None) -> float | None:
    if value is None or not baseline:
        return None
    return round(value / baseline, 3)


def steady_ratios(one: dict, three: dict) -> dict:
    """The three-node steady figures as ratios to the one-node baseline."""
    return {"records_per_s": ratio(three["records_per_s"], one["records_per_s"]),
            "p50": ratio(three["latency"]["p50_ms"], one["latency"]["p50_ms"]),
            "p99": ratio(three["latency"]["p99_ms"], one["latency"]["p99_ms"])}


def first_ack_after(sends: Iterable[tuple[float, float | None]], since: float) -> float | None:
    """Seconds from `since` until the first acknowledgement of a record sent at or after it;
    `sends` are (sent at, acknowledged at or None). None if none was acknowledged."""
    acked = [ack for sent, ack in sends if sent >= since and ack is not None]
    return min(acked) - since if acked else None


def exactly_once(acknowledged: Iterable[int], read: Iterable[int]) -> dict:
    """Compare the sequence numbers acknowledged with those read back from the partition:
    each acknowledged one must be there exactly once, and nothing twice."""
    acked = set(acknowledged)
    counts = Counter(read)
    missing = sorted(acked - set(counts))
    duplicated = sorted(seq for seq, n in counts.items() if n > 1)
    unacknowledged = sorted(set(counts) - acked)  # written though the producer saw no ack
    return {"acknowledged": len(acked), "read": sum(counts.values()), "missing": missing[:20],
            "missing_count": len(missing), "duplicated": duplicated[:20],
            "duplicated_count": len(duplicated), "read_unacknowledged": len(unacknowledged),
            "ok": not missing and not duplicated}


def kill_summary(kills: Sequence[dict], baseline_p99_ms: float | None) -> dict:
    """p50 and max over the kills of each partition's unavailability and of the time until
    the metadata named a new leader, in seconds, each with its ratio to the baseline."""
    def stats(values: list[float | None]) -> dict:
        got = [v for v in values if v is not None]
        p50, worst = percentile(got, 50), max(got, default=None)
        base_s = None if baseline_p99_ms is None else baseline_p99_ms / 1000
        return {"p50_s": None if p50 is None else round(p50, 3),
                "max_s": None if worst is None else round(worst, 3),
                "p50_ratio": ratio(p50, base_s), "max_ratio": ratio(worst, base_s),
                "measured": len(got), "of": len(values)}
    partitions = list(kills[0]["unavailable_s"]) if kills else []
    return {"unavailable": {p: stats([k["unavailable_s"].get(p) for k in kills])
                            for p in partitions},
            "new_leader": stats([k["new_leader_s"] for k in kills]),
            "baseline_p99_ms": baseline_p99_ms}


def _num(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def _times(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.3g}x"


def render(figures: dict) -> str:
    """The compact table printed at the end of a run."""
    steady, loss = figures["steady"], figures.get("leader_loss")
    one, three, r = steady["one"], steady["three"], steady["ratios"]
    lines = [f"cluster benchmark: {NODES} nodes (replication {NODES}, min.insync.replicas "
             f"{min_insync_replicas(NODES)}) beside 1 node; {steady['records']:,} records of "
             f"{VALUE_BYTES} B to {WALLET_LEDGER_TOPIC}, acks=all, idempotent; run took "
             f"{_num(figures.get('seconds'), 0)} s",
             f"  {'steady state':<34}{'1 node':>12}{'3 nodes':>12}{'ratio':>10}",
             f"  {'produce, records/s':<34}{_num(one['records_per_s'], 0):>12}"
             f"{_num(three['records_per_s'], 0):>12}{_times(r['records_per_s']):>10}",
             f"  {'send latency p50, ms':<34}{_num(one['latency']['p50_ms'], 2):>12}"
             f"{_num(three['latency']['p50_ms'], 2):>12}{_times(r['p50']):>10}",
             f"  {'send latency p99, ms':<34}{_num(one['latency']['p99_ms'], 2):>12}"
             f"{_num(three['latency']['p99_ms'], 2):>12}{_times(r['p99']):>10}"]
    if loss is None:
        return "\n".join(lines)
    summary = loss["summary"]
    heading = f"leader loss, {len(loss['kills'])} kills -9"
    lines.append(f"  {heading:<34}{'p50, s':>12}{'max, s':>12}{'p50/base':>10}{'max/base':>10}")
    rows = [(f"{p} unavailable", s) for p, s in summary["unavailable"].items()]
    rows.append((f"{loss['watched'][0]} new leader named", summary["new_leader"]))
    for label, s in rows:
        lines.append(f"  {label:<34}{_num(s['p50_s'], 2):>12}{_num(s['max_s'], 2):>12}"
                     f"{_times(s['p50_ratio']):>10}{_times(s['max_ratio']):>10}")
    lines.append(f"  baseline: 3-node steady send p99 {_num(summary['baseline_p99_ms'], 2)} ms "
                 f"(paced sends outside the kills: p99 {_num(loss['calm_latency']['p99_ms'], 2)}"
                 " ms)")
    for n, kill in enumerate(loss["kills"], 1):
        parts = ", ".join(f"{p} {_num(s, 2)} s{'' if kill['led'][p] else ' (follower)'}"
                          for p, s in kill["unavailable_s"].items())
        lines.append(f"    kill {n}: node {kill['node']}: {parts}; new leader "
                     f"{kill['new_leader']} after {_num(kill['new_leader_s'], 2)} s")
    for p, check in loss["exactly_once"].items():
        verdict = "OK" if check["ok"] else (f"FAILED: {check['missing_count']} missing "
                                            f"{check['missing']}, {check['duplicated_count']} "
                                            f"twice {check['duplicated']}")
        lines.append(f"  exactly once {p}: {check['acknowledged']:,} acknowledged, "
                     f"{check['read']:,} read ({check['read_unacknowledged']} written "
                     f"unacknowledged): {verdict}")
    if loss["send_errors"]:
        lines.append(f"  send errors: {loss['send_errors']}")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=None,
                        help=f"records per steady-state run (default {RECORDS:,}; "
                             f"--quick {QUICK_RECORDS:,})")
    parser.add_argument("--kills", type=int, default=None,
                        help=f"leader kills (default {KILLS}; --quick {QUICK_KILLS})")
    parser.add_argument("--quick", action="store_true", help="fewer records and kills")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH",
                        help="write the figures to PATH as JSON")
    args = parser.parse_args(argv)
    if args.records is None:
        args.records = QUICK_RECORDS if args.quick else RECORDS
    if args.kills is None:
        args.kills = QUICK_KILLS if args.quick else KILLS
    if args.records < 1 or args.kills < 0:
        parser.error("--records must be at least 1 and --kills at least 0")
    return args


# ---- clusters ----------------------------------------------------------------------------

def start_cluster(root: Path, nodes: int) -> LocalCluster:
    cluster = cluster_nodes(root, Settings().cache_dir, nodes,
                            port=free_stepped_ports(nodes, NODE_PORT_STEP),
                            controller_port=free_stepped_ports(nodes, NODE_PORT_STEP),
                            heap=HEAP, replication=nodes)
    try:
        cluster.up(timeout_s=180.0)
    except BaseException:
        cluster.down()
        raise
    return cluster


def apply_catalogue(bootstrap: str, replication: int) -> None:
    admin = topic_admin.admin_client(bootstrap)
    try:
        report = topic_admin.apply(admin, topic_catalogue(replication=replication))
        if report.drift:
            raise RuntimeError(f"topic drift on a fresh cluster: {report.drift}")
    finally:
        admin.close()


# ---- 1. steady state ---------------------------------------------------------------------

def steady_values(count: int) -> list[bytes]:
    values = []
    for i in range(count):
        head = f'{{"seq":{i},"player":"player-{i % KEYS:03d}","pad":"'
        values.append((head + "x" * (VALUE_BYTES - len(head) - 2) + '"}').encode())
    return values


def produce_steady(bootstrap: str, records: int) -> dict:
    """records/s and the latency of one send in SAMPLE_EVERY, producing `records` records
    keyed over KEYS players to WALLET_LEDGER_TOPIC, flushed every FLUSH_EVERY."""
    keys = [f"player-{i:03d}".encode() for i in range(KEYS)]
    values = steady_values(records + WARM_UP)
    latencies: list[float] = []
    errors: list[BaseException] = []
    producer = kafka_clients.durable_producer(bootstrap, ADMIN, client_id="bench-cluster-steady",
                                              linger_ms=5, batch_size=64 * 1024)
    try:
        for i in range(WARM_UP):
            producer.send(WALLET_LEDGER_TOPIC, key=keys[i % KEYS], value=values[i])
        producer.flush()
        clock = time.perf_counter
        began = clock()
        for n in range(records):
            i = WARM_UP + n
            if n % SAMPLE_EVERY == 0:
                sent = clock()
                future = producer.send(WALLET_LEDGER_TOPIC, key=keys[i % KEYS], value=values[i])
                future.add_callback(lambda _md, sent=sent: latencies.append(clock() - sent))
            else:
                future = producer.send(WALLET_LEDGER_TOPIC, key=keys[i % KEYS], value=values[i])
            future.add_errback(errors.append)
            if (n + 1) % FLUSH_EVERY == 0:
                producer.flush()
        producer.flush()
        seconds = clock() - began
    finally:
        producer.close()
    if errors:
        raise RuntimeError(f"{len(errors)} steady-state sends failed, e.g. {errors[0]!r}")
    return {"records": records, "seconds": round(seconds, 3),
            "records_per_s": round(records / seconds, 1), "latency": latency_summary(latencies)}


# ---- 2. leader loss ----------------------------------------------------------------------

@dataclass
class Send:
    seq: int
    target: str  # "topic[partition]"
    sent_at: float
    acked_at: float | None = None
    error: str | None = None


def label(topic: str, partition: int) -> str:
    return f"{topic}[{partition}]"


def paced_value(seq: int) -> bytes:
    return f"bench-cluster:{seq:09d}".encode()


def seq_of(value: bytes | None) -> int | None:
    if not value or not value.startswith(b"bench-cluster:"):
        return None
    return int(value.split(b":", 1)[1])


class PacedProducer(threading.Thread):
    """One small record every PACE_S to each target partition, each send noted with when
    it was acknowledged (or failed)."""

    def __init__(self, bootstrap: str, targets: list[tuple[str, int]]) -> None:
        super().__init__(name="paced-producer", daemon=True)
        self.bootstrap, self.targets = bootstrap, targets
        self.sends: list[Send] = []
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            self.failure = exc
            self.ready.set()

    def _run(self) -> None:
        producer = kafka_clients.durable_producer(self.bootstrap, ADMIN,
                                                  client_id="bench-cluster-paced")
        clock = time.perf_counter
        try:
            for topic, partition in self.targets:  # metadata and connections first
                producer.send(topic, value=b"warm-up", partition=partition).get(timeout=30)
            self.ready.set()
            seq, due = 0, clock()
            while not self.stop.is_set():
                for topic, partition in self.targets:
                    note = Send(seq, label(topic, partition), clock())
                    self.sends.append(note)
                    seq += 1
                    try:
                        future = producer.send(topic, value=paced_value(note.seq),
                                               partition=partition)
                    except KafkaError as exc:
                        note.error = repr(exc)
                        continue
                    future.add_callback(lambda _md, note=note: setattr(note, "acked_at", clock()))
                    future.add_errback(lambda exc, note=note: setattr(note, "error", repr(exc)))
                due += PACE_S
                pause = due - clock()
                if pause > 0:
                    time.sleep(pause)
                elif pause < -1.0:  # blocked in send: pace on from now, not in a burst
                    due = clock()
            producer.flush(timeout=RECOVERY_TIMEOUT_S)
        finally:
            producer.close(timeout=10)

    def pairs(self, target: str) -> list[tuple[float, float | None]]:
        return [(s.sent_at, s.acked_at) for s in list(self.sends) if s.target == target]


def partitions_of(admin, topics: Sequence[str]) -> dict[tuple[str, int], dict]:
    return {(t["name"], p["partition_index"]): p for t in admin.describe_topics(list(topics))
            for p in t["partitions"]}


def leader_of(admin, topic: str, partition: int) -> int:
    return int(partitions_of(admin, [topic])[(topic, partition)]["leader_id"])


def wait_new_leader(admin, topic: str, partition: int, gone: int, since: float
                    ) -> tuple[int | None, float | None]:
    """(new leader, seconds from `since`) once the metadata names a leader other than
    `gone`; (None, None) after RECOVERY_TIMEOUT_S."""
    while time.perf_counter() - since < RECOVERY_TIMEOUT_S:
        try:
            leader = leader_of(admin, topic, partition)
        except (KafkaError, OSError):  # the admin asked the dead node: ask again
            leader = gone
        if leader not in (gone, -1):
            return leader, time.perf_counter() - since
        time.sleep(0.05)
    return None, None


def wait_acked_after(producer: PacedProducer, targets: list[str], since: float) -> None:
    deadline = time.perf_counter() + RECOVERY_TIMEOUT_S
    while time.perf_counter() < deadline and producer.is_alive():
        if all(first_ack_after(producer.pairs(t), since) is not None for t in targets):
            return
        time.sleep(0.05)


def wait_isr_full(admin, topics: Sequence[str], replicas: int) -> None:
    deadline = time.perf_counter() + RECOVERY_TIMEOUT_S
    while True:
        try:
            short = [tp for tp, p in partitions_of(admin, topics).items()
                     if len(p["isr_nodes"]) < replicas]
        except (KafkaError, OSError):
            short = ["(metadata unavailable)"]
        if not short:
            return
        if time.perf_counter() > deadline:
            raise RuntimeError(f"replicas not in sync {RECOVERY_TIMEOUT_S:.0f} s after the node "
                               f"came back: {short[:5]}")
        time.sleep(0.25)


def read_partition(bootstrap: str, topic: str, partition: int) -> list[int]:
    """The sequence numbers of the paced records in the partition, in log order."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             group_id=None, client_id="bench-cluster-read",
                             **kafka_python_options(ADMIN))
    tp = TopicPartition(topic, partition)
    seqs: list[int] = []
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        deadline = time.monotonic() + RECOVERY_TIMEOUT_S
        while consumer.position(tp) < end:
            if time.monotonic() > deadline:
                raise RuntimeError(f"reading {label(topic, partition)} back: at offset "
                                   f"{consumer.position(tp)} of {end} after "
                                   f"{RECOVERY_TIMEOUT_S:.0f} s")
            for records in consumer.poll(timeout_ms=1000).values():
                seqs += [s for r in records if (s := seq_of(r.value)) is not None]
    finally:
        consumer.close()
    return seqs


def leader_loss(cluster: LocalCluster, kills: int) -> dict:
    bootstrap = cluster.bootstrap
    admin = kafka_clients.admin_client(bootstrap, ADMIN, client_id="bench-cluster-admin")
    try:
        ledger_partition = 0
        victim = leader_of(admin, WALLET_LEDGER_TOPIC, ledger_partition)
        # a table.events partition led by the same node, so the first kill hits both leaders
        events = partitions_of(admin, [TABLE_EVENTS_TOPIC])
        events_partition = min((p for (_, p), meta in events.items()
                                if meta["leader_id"] == victim), default=0)
        targets = [(WALLET_LEDGER_TOPIC, ledger_partition), (TABLE_EVENTS_TOPIC, events_partition)]
        watched = [label(t, p) for t, p in targets]
        producer = PacedProducer(bootstrap, targets)
        producer.start()
        producer.ready.wait(60)
        calm: list[tuple[float, float]] = []
        records: list[dict] = []
        try:
            for _ in range(kills):
                if producer.failure is not None:
                    raise RuntimeError(f"the paced producer died: {producer.failure!r}")
                calm_from = time.perf_counter()
                time.sleep(CALM_BEFORE_KILL_S)
                now = partitions_of(admin, [WALLET_LEDGER_TOPIC, TABLE_EVENTS_TOPIC])
                victim = int(now[targets[0]]["leader_id"])
                led = {label(t, p): int(now[(t, p)]["leader_id"]) == victim for t, p in targets}
                node = cluster.node(victim)
                killed_at = time.perf_counter()
                calm.append((calm_from, killed_at))
                node.kill()
                new_leader, leader_s = wait_new_leader(admin, WALLET_LEDGER_TOPIC, ledger_partition, victim,
                                                       killed_at)
                wait_acked_after(producer, watched, killed_at)
                unavailable = {t: first_ack_after(producer.pairs(t), killed_at) for t in watched}
                records.append({"node": victim, "led": led, "new_leader": new_leader,
                                "new_leader_s": None if leader_s is None else round(leader_s, 3),
                                "unavailable_s": {t: None if s is None else round(s, 3)
                                                  for t, s in unavailable.items()}})
                print(f"  kill {len(records)}: node {victim}, "
                      + ", ".join(f"{t} {_num(s, 2)} s" for t, s in unavailable.items())
                      + f"; new leader {new_leader} after {_num(leader_s, 2)} s", flush=True)
                cluster.up(timeout_s=180.0)
                wait_isr_full(admin, [WALLET_LEDGER_TOPIC, TABLE_EVENTS_TOPIC], NODES)
            calm_from = time.perf_counter()
            time.sleep(CALM_BEFORE_KILL_S)
            calm.append((calm_from, time.perf_counter()))
        finally:
            producer.stop.set()
            producer.join(RECOVERY_TIMEOUT_S + 30)
        if producer.is_alive():
            raise RuntimeError("the paced producer did not finish flushing")
        if producer.failure is not None:
            raise RuntimeError(f"the paced producer died: {producer.failure!r}")
        sends = producer.sends
        calm_latencies = [s.acked_at - s.sent_at for s in sends if s.acked_at is not None
                          and any(a <= s.sent_at < b for a, b in calm)]
        checks = {}
        for topic, partition in targets:
            target = label(topic, partition)
            acked = [s.seq for s in sends if s.target == target and s.acked_at is not None]
            checks[target] = exactly_once(acked, read_partition(bootstrap, topic, partition))
        errors = Counter(s.error.split("(")[0] for s in sends if s.error)
        return {"watched": watched, "kills": records, "sends": len(sends),
                "calm_latency": latency_summary(calm_latencies), "exactly_once": checks,
                "send_errors": dict(errors)}
    finally:
        admin.close()


# ---- the run -----------------------------------------------------------------------------

def measure_cluster(nodes: int, records: int, kills: int) -> tuple[dict, dict | None]:
    root = Path(tempfile.mkdtemp(prefix=f"croupier-bench-cluster{nodes}-"))
    cluster = None
    try:
        began = time.perf_counter()
        cluster = start_cluster(root, nodes)
        print(f"{nodes}-node cluster up in {time.perf_counter() - began:.1f} s "
              f"({cluster.bootstrap})", flush=True)
        apply_catalogue(cluster.bootstrap, nodes)
        steady = produce_steady(cluster.bootstrap, records)
        print(f"  steady: {steady['records_per_s']:,.0f} records/s, send p50 "
              f"{steady['latency']['p50_ms']} ms, p99 {steady['latency']['p99_ms']} ms",
              flush=True)
        loss = leader_loss(cluster, kills) if nodes > 1 and kills > 0 else None
        return steady, loss
    finally:
        if cluster is not None:
            cluster.down()
        shutil.rmtree(root, ignore_errors=True)


def run(records: int, kills: int) -> dict:
    began = time.perf_counter()
    one, _ = measure_cluster(1, records, 0)
    three, loss = measure_cluster(NODES, records, kills)
    figures: dict = {"steady": {"records": records, "one": one, "three": three,
                                "ratios": steady_ratios(one, three)}}
    if loss is not None:
        loss["summary"] = kill_summary(loss["kills"], three["latency"]["p99_ms"])
        figures["leader_loss"] = loss
    figures["seconds"] = round(time.perf_counter() - began, 1)
    return figures


def failures(figures: dict) -> list[str]:
    loss = figures.get("leader_loss")
    if loss is None:
        return []
    found = [f"{p}: acknowledged records lost or written twice"
             for p, check in loss["exactly_once"].items() if not check["ok"]]
    found += [f"kill {n}: {p} never acknowledged a record sent after the kill"
              for n, kill in enumerate(loss["kills"], 1)
              for p, s in kill["unavailable_s"].items() if s is None]
    return found


def _terminate(signum, _frame) -> None:
    raise SystemExit(128 + signum)  # so the clusters are stopped by the `finally`s


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    figures = run(args.records, args.kills)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    print(render(figures))
    problems = failures(figures)
    for problem in problems:
        print(f"FAILED: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
