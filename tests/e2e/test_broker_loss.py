"""Issue 30: croupier on a three-node Kafka cluster (replication 3, min.insync.replicas 2)
loses a broker under bets, deposits and dealer inputs, and then every node is restarted
one at a time.

While tables deal and players bet, the node leading the most `wallet.ledger` and
`table.events` partitions in use is killed -9; it is brought back (`croupier kafka up`'s
way), then each of the three nodes is stopped and started again in turn. Afterwards,
read from the topics alone: every bet answered 201 is on `bets.placed` exactly once,
every deposit answered 201 is on `wallet.transactions` exactly once, every dealer input
answered accepted has its events on `table.events`, no event twice; every invariant of
the books holds (each balance equals its ledger) and the rebuild equals the live wallet;
and no request was answered 5xx for longer than the cluster was without a leader plus
the time a service takes to find the new one.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest
from kafka.admin import ConfigResource, ConfigResourceType

from services.demo.session import DemoConfig, play
from services.demo.stack import Stack, ensure_kafka
from services.infra import kafka_clients
from services.infra.http_retry import read_reply, with_retry
from services.infra.kafka_security import ADMIN
from services.infra.local_broker import LocalCluster, cluster_from_settings
from services.infra.log_reader import read_to_end
from services.infra.settings import NODE_PORT_STEP, Settings
from services.simulators import players as players_module
from services.simulators.tables.transport import HttpTransport
from shared.topics import (
    BETS_PLACED_TOPIC,
    BETS_SETTLED_TOPIC,
    TABLE_EVENTS_TOPIC,
    WALLET_LEDGER_TOPIC,
    WALLET_TRANSACTIONS_TOPIC,
)
from tests.e2e.platform_support import platform_settings, settle_and_rebuild
from tests.integration.money_support import wait_for
from tests.ports import free_stepped_ports

pytestmark = pytest.mark.kafka
ROOT = Path(__file__).resolve().parents[2]
NODES = 3
WATCHED = (WALLET_LEDGER_TOPIC, TABLE_EVENTS_TOPIC)
# the controller fences a node that sent no heartbeat for this long (Kafka's default 9 s):
# a node killed -9 leads its partitions that long, and a restarted one may register again
# only once its old session is over
NODE_SESSION_MS = 4000
# a service finds a partition's new leader on its next metadata refresh, and a consumer
# group whose coordinator died joins the new one: allowed on top of the leaderless time
FIND_NEW_LEADER_S = 20.0


def cli_env(home, port: int, controller: int, metrics: int) -> dict[str, str]:
    """An operator's shell for a local three-node cluster."""
    env = {k: v for k, v in os.environ.items() if k != "KAFKA_BOOTSTRAP_SERVERS"}
    env.update(CROUPIER_HOME=str(home), CROUPIER_KAFKA_BROKERS=str(NODES),
               CROUPIER_KAFKA_PORT=str(port), CROUPIER_KAFKA_CONTROLLER_PORT=str(controller),
               CROUPIER_KAFKA_METRICS_PORT=str(metrics), CROUPIER_KAFKA_HEAP="512m",
               CROUPIER_KAFKA_NODE_SESSION_MS=str(NODE_SESSION_MS),
               COLUMNS="200")
    return env


def croupier(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "services.cli", *args], env=env,
                          capture_output=True, text=True, timeout=240, cwd=ROOT)


def node_states(env: dict[str, str]) -> tuple[int, list[dict]]:
    done = croupier("kafka", "status", "--json", env=env)
    return done.returncode, json.loads(done.stdout)["nodes"]


@pytest.fixture(scope="module")
def shell(tmp_path_factory) -> dict[str, str]:
    if os.environ.get("KAFKA_BOOTSTRAP_SERVERS"):
        pytest.skip("the test kills and restarts its own nodes: not with an external cluster")
    step = NODE_PORT_STEP
    return cli_env(tmp_path_factory.mktemp("cluster-home"), free_stepped_ports(NODES, step),
                   free_stepped_ports(NODES, step), free_stepped_ports(NODES, step))


@pytest.fixture(scope="module")
def cluster(shell):
    """Three nodes started as an operator starts them (`croupier kafka up`), stopped with
    `croupier kafka down`; the test drives the same nodes through `cluster_from_settings`."""
    up = croupier("kafka", "up", env=shell)
    settings = Settings(home=Path(shell["CROUPIER_HOME"]), kafka_brokers=NODES,
                        kafka_port=int(shell["CROUPIER_KAFKA_PORT"]),
                        kafka_controller_port=int(shell["CROUPIER_KAFKA_CONTROLLER_PORT"]),
                        kafka_metrics_port=int(shell["CROUPIER_KAFKA_METRICS_PORT"]),
                        kafka_heap="512m", kafka_node_session_ms=NODE_SESSION_MS)
    local = cluster_from_settings(settings)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        yield local
    finally:
        down = croupier("kafka", "down", env=shell)
        local.down()  # whatever the command left
    assert down.returncode == 0 and "kafka stopped" in down.stdout, down.stdout + down.stderr


@dataclass
class Seen:
    """What the clients were answered, as they saw it."""

    bets: dict[str, int] = field(default_factory=dict)  # bet id: final status
    deposits: dict[str, int] = field(default_factory=dict)  # request id: final status
    inputs: dict[str, str] = field(default_factory=dict)  # input id: decision
    # (first 5xx, the answer that ended the streak) per request that met one
    streaks: list[tuple[float, float, str]] = field(default_factory=list)
    leaderless: list[float] = field(default_factory=list)  # seconds, per kill or stop
    events: list[str] = field(default_factory=list)  # each stamped with seconds into the run
    began: float = field(default_factory=time.monotonic)

    def note(self, event: str) -> None:
        self.events.append(f"{time.monotonic() - self.began:.0f} s: {event}")


def leaders(admin, topics=WATCHED) -> dict[tuple[str, int], int]:
    return {(t["name"], p["partition_index"]): p["leader_id"]
            for t in admin.describe_topics(list(topics)) for p in t["partitions"]}


def in_use(admin, bootstrap: str) -> set[tuple[str, int]]:
    """The watched partitions holding records."""
    from kafka import KafkaConsumer, TopicPartition

    from services.infra.kafka_security import kafka_python_options
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, **kafka_python_options(ADMIN))
    try:
        tps = [TopicPartition(t, p) for t, p in leaders(admin)]
        return {(tp.topic, tp.partition) for tp, end in consumer.end_offsets(tps).items()
                if end > 0}
    finally:
        consumer.close()


def wait_isr_full(admin, topics: list[str], timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        short = [(t["name"], p["partition_index"]) for t in admin.describe_topics(topics)
                 for p in t["partitions"] if len(p["isr_nodes"]) < NODES]
        if not short:
            return
        assert time.monotonic() < deadline, f"ISR not full after {timeout_s}s: {short[:5]}"
        time.sleep(0.5)


def leaderless_for(admin, partitions: set[tuple[str, int]], gone: int, since: float) -> float:
    """Seconds from `since` until every partition in `partitions` names a leader other than
    node `gone`."""
    while True:
        now = leaders(admin)
        if all(now.get(tp) not in (gone, -1, None) for tp in partitions):
            return time.monotonic() - since
        assert time.monotonic() - since < 60, f"no new leader after 60 s: {now}"
        time.sleep(0.05)


def acknowledged(seen: Seen) -> tuple[int, int, int]:
    """Bets answered 201, deposits answered 2xx and dealer inputs accepted, so far."""
    return (sum(1 for s in seen.bets.copy().values() if s == 201),
            sum(1 for s in seen.deposits.copy().values() if s < 300),
            sum(1 for s in seen.inputs.copy().values() if s == "accepted"))


def until_acknowledged_again(seen: Seen, what: str) -> None:
    """Until one more bet, deposit and dealer input each was acknowledged than now: the load
    runs (at a round's pace: a bet needs a betting window open)."""
    before = acknowledged(seen)
    wait_for(lambda: all(n > b for n, b in zip(acknowledged(seen), before, strict=True)),
             f"bets, deposits and dealer inputs acknowledged {what}", timeout_s=90,
             explain=lambda: f"before {before}, now {acknowledged(seen)}: {seen.events}")
    seen.note(f"a bet, a deposit and an input acknowledged {what}")


@pytest.fixture(scope="module")
def run(cluster: LocalCluster, tmp_path_factory):
    home = tmp_path_factory.mktemp("broker-loss-home")
    # a 3 s betting timer: two tables of 12 players (48 bets a round) are answered in it, and
    # each wait for a bet acknowledged, and the tables' last round, is shorter
    settings = platform_settings(cluster.bootstrap, home, betting_window_s=3).model_copy(
        update={"kafka_brokers": NODES})
    assert settings.replication_factor == NODES
    ensure_kafka(settings)
    stack = Stack(settings, workers=1).start()
    seen = Seen()
    mp = pytest.MonkeyPatch()

    async def noting_reply(session, method, url, **kwargs):
        """Every raw answer a player gets (the retried ones too), for the 5xx streaks."""
        reply = await read_reply(session, method, url, **kwargs)
        key = f"{method} {url}"
        if reply.status_code >= 500:
            streak_from.setdefault(key, time.monotonic())
        elif key in streak_from:
            seen.streaks.append((streak_from.pop(key), time.monotonic(), key))
        if method == "POST" and url.endswith("/bets"):
            seen.bets[kwargs["json"]["bet_id"]] = reply.status_code
        return reply

    streak_from: dict[str, float] = {}
    mp.setattr(players_module, "read_reply", noting_reply)
    original_send = HttpTransport.send

    async def noting_send(self, inp):
        report = await original_send(self, inp)
        seen.inputs[inp.input_id] = report.get("status", "?")
        return report

    mp.setattr(HttpTransport, "send", noting_send)
    admin = kafka_clients.admin_client(cluster.bootstrap, ADMIN)
    try:
        config = DemoConfig(forever=True, players=12, profiles=("sbo-baccarat", "triple-face-id"),
                            betting_pause=2.0, bets_per_player=2, seed=30)

        async def deposits(stop: asyncio.Event) -> None:
            """Deposits to accounts of their own, one every 100 ms, each sent again (same
            request id) while the wallet fails over, as an operator's back office would."""
            headers = {"Authorization": f"Bearer {settings.operator_token}"}
            async with aiohttp.ClientSession(base_url=stack.url("wallet")) as http:
                for i in range(3):
                    reply, _ = await with_retry(lambda i=i: read_reply(
                        http, "POST", "/accounts", headers=headers,
                        json={"player_id": f"bl-{i}", "currency": "IDR"}))
                    assert reply.status_code < 300, reply.text
                n = 0
                while not stop.is_set():
                    request_id = f"bl-dep-{n}"
                    reply, _ = await with_retry(lambda n=n, r=request_id: noting_reply(
                        http, "POST", f"/accounts/bl-{n % 3}/deposits", headers=headers,
                        json={"request_id": r, "amount": 1000 + n}))
                    seen.deposits[request_id] = reply.status_code
                    n += 1
                    await asyncio.sleep(0.1)

        def kill_and_roll() -> None:
            """In a thread, once the load runs: the kill -9 of the busiest leader, its
            return once the load carried on without it, then a rolling restart of every
            node, each awaited until every replica is in sync again, and the load on the
            restarted cluster."""
            until_acknowledged_again(seen, "before the kill")
            used = in_use(admin, cluster.bootstrap)
            now = leaders(admin)
            busiest = Counter(now[tp] for tp in used).most_common(1)[0][0]
            led = {tp for tp in used if now[tp] == busiest}
            seen.note(f"kill -9 node {busiest}, leading {sorted(led)}")
            node = cluster.node(busiest)
            since = time.monotonic()
            node.kill()
            seen.leaderless.append(leaderless_for(admin, led, busiest, since))
            until_acknowledged_again(seen, "with the node down")
            cluster.up()
            wait_isr_full(admin, list(WATCHED))
            seen.note(f"node {busiest} back, every replica in sync")
            for node in cluster.nodes:
                now = leaders(admin)
                led = {tp for tp, leader in now.items() if leader == node.node_id}
                since = time.monotonic()
                seen.note(f"node {node.node_id} asked to stop")
                node.stop()
                seen.note(f"node {node.node_id} stopped")
                seen.leaderless.append(leaderless_for(admin, led, node.node_id, since))
                cluster.up()
                seen.note(f"node {node.node_id} answers")
                wait_isr_full(admin, list(WATCHED))
                seen.note(f"node {node.node_id} restarted, every replica in sync")
            until_acknowledged_again(seen, "on the restarted cluster")

        async def scenario():
            stop = asyncio.Event()
            session = asyncio.create_task(play(settings, config, stack.url("dealer-event"),
                                               stack.url("wallet")))
            depositing = asyncio.create_task(deposits(stop))
            try:
                await asyncio.to_thread(kill_and_roll)
                assert not session.done(), "the session ended during the broker loss"
            finally:
                stop.set()
                await depositing
                session.cancel()  # a --forever session: every table ends its round
            return await session

        demo_run = asyncio.run(scenario())
        seen.note("the tables ended their rounds")
        summary, rebuilt = settle_and_rebuild(cluster.bootstrap, settings, stack, demo_run,
                                              timeout_s=180)
        seen.note("every round settled and the wallet rebuilt")
        print("broker loss:", json.dumps({
            "events": seen.events, "leaderless_s": [round(s, 2) for s in seen.leaderless],
            "longest_5xx_streak_s": round(max((b - a for a, b, _ in seen.streaks),
                                              default=0.0), 2),
            "bets": Counter(seen.bets.values()), "deposits": Counter(seen.deposits.values()),
            "inputs": Counter(seen.inputs.values())}, default=str))
        yield seen, summary, rebuilt, demo_run
    finally:
        admin.close()
        mp.undo()
        stack.stop()


def _values(bootstrap: str, topic: str) -> list[dict]:
    return [json.loads(r.value) for r in read_to_end(bootstrap, topic, principal=ADMIN)
            if r.value is not None]


def test_a_node_was_killed_and_every_node_restarted_under_load(run):
    seen, _, _, demo_run = run
    assert len(seen.leaderless) == 1 + NODES, seen.events
    assert sum(1 for s in seen.bets.values() if s == 201) > 50, Counter(seen.bets.values())
    assert sum(1 for s in seen.deposits.values() if s < 300) > 50
    assert sum(1 for s in seen.inputs.values() if s == "accepted") > 50
    assert all(not t.unexpected for t in demo_run.tables.values()), \
        {t: s.unexpected[:3] for t, s in demo_run.tables.items() if s.unexpected}


def test_every_acknowledged_bet_deposit_and_input_is_in_the_log_exactly_once(run, cluster):
    seen = run[0]
    placed = Counter(v["bet_id"] for v in _values(cluster.bootstrap, BETS_PLACED_TOPIC)
                     if v.get("type") == "bet_placed")
    answered = {b for b, status in seen.bets.items() if status == 201}
    assert not [b for b in answered if placed[b] != 1], \
        {b: placed[b] for b in answered if placed[b] != 1}
    assert not [b for b, n in placed.items() if n > 1]
    txs = Counter(v["tx_id"] for v in _values(cluster.bootstrap, WALLET_TRANSACTIONS_TOPIC)
                  if "tx_id" in v)
    deposited = {r for r, status in seen.deposits.items() if status < 300}
    assert not [r for r in deposited if txs[f"deposit:{r}"] != 1], \
        {r: txs[f"deposit:{r}"] for r in deposited if txs[f"deposit:{r}"] != 1}
    assert not [t for t, n in txs.items() if n > 1]
    events = _values(cluster.bootstrap, TABLE_EVENTS_TOPIC)
    assert not [e for e, n in Counter(v.get("event_id") for v in events).items()
                if e is not None and n > 1]
    with_events = {v.get("input_id") for v in events}
    accepted = {i for i, status in seen.inputs.items() if status == "accepted"}
    assert accepted <= with_events, sorted(accepted - with_events)[:5]


def test_every_invariant_holds_and_the_rebuild_equals_the_live_wallet(run):
    _, summary, rebuilt, _ = run
    failed = [f"{c.name}: {c.problems[:5]}" for c in summary.invariants if not c.ok]
    assert summary.invariants_ok, failed
    assert summary.bets == summary.bets_settled + summary.bets_voided + summary.bets_rejected
    assert rebuilt.clean, rebuilt.differences[:10]


def test_no_client_was_answered_5xx_for_longer_than_the_election(run):
    seen = run[0]
    longest = max((b - a for a, b, _ in seen.streaks), default=0.0)
    assert longest <= max(seen.leaderless) + FIND_NEW_LEADER_S, \
        (longest, seen.leaderless, sorted(seen.streaks, key=lambda s: s[0] - s[1])[:3])


def test_kafka_status_names_every_node_with_its_id_pid_and_port(cluster, shell):
    code, nodes = node_states(shell)
    first = int(shell["CROUPIER_KAFKA_PORT"])
    assert code == 0, nodes
    assert [(n["id"], n["port"], n["up"]) for n in nodes] == \
        [(n + 1, first + NODE_PORT_STEP * n, True) for n in range(NODES)]
    assert [n["pid"] for n in nodes] == [node.running_pid() for node in cluster.nodes]


def test_topics_check_shows_no_drift_and_names_a_drifted_config(run, cluster, shell):
    checked = croupier("topics", "check", env=shell)
    assert checked.returncode == 0 and "no drift" in checked.stdout \
        and "replication 3" in checked.stdout, checked.stdout + checked.stderr
    admin = kafka_clients.admin_client(cluster.bootstrap, ADMIN)
    try:
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, BETS_SETTLED_TOPIC,
                                            configs={"min.insync.replicas": ("SET", "1")})],
                            incremental=True)
        deadline = time.monotonic() + 15
        while True:
            drifted = croupier("topics", "check", env=shell)
            if drifted.returncode == 1 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert drifted.returncode == 1, drifted.stdout
        assert "bets.settled: min.insync.replicas 1 live, 2 declared" in drifted.stdout
        applied = croupier("topics", "apply", env=shell)
        assert applied.returncode == 0 and "min.insync.replicas 1 -> 2" in applied.stdout
    finally:
        admin.close()


def test_a_killed_node_is_down_in_status_and_kafka_up_brings_it_back(run, cluster, shell):
    """Last: the operator's way back from a lost node."""
    victim = cluster.nodes[-1]
    victim.kill()
    code, nodes = node_states(shell)
    assert code == 1 and [n["up"] for n in nodes] == [True] * (NODES - 1) + [False], nodes
    up = croupier("kafka", "up", env=shell)
    assert up.returncode == 0 and f"node {victim.node_id}: started" in up.stdout, up.stdout
    assert "node 1: running" in up.stdout
    code, nodes = node_states(shell)
    assert code == 0 and all(n["up"] for n in nodes), nodes
