"""dealer-event and game-evaluation as two workers each, on the real broker.

Six tables are split between the workers by partition. Every input goes to ONE
dealer-event worker's port and is forwarded to the owner of its table; rounds play to
results on `round.results`, each table's results computed by the game-evaluation worker
owning its partition. Then one dealer-event worker is killed mid-play: the other takes
its partitions once the session times out, rebuilds those tables from the log, and play
goes on with every table's hash chain whole and one result per completed round. A
game-evaluation worker is killed at the same moment: the other recovers the progress of
its tables from the changelog and publishes the remaining results, each once.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest
from kafka.partitioner.default import murmur2

from services.simulators.tables.driver import SimConfig
from services.simulators.tables.run import run_tables
from tests.integration.tables_live_support import (
    check_results_match_rules,
    results,
    running_workers,
)

pytestmark = pytest.mark.kafka

BETTING_WINDOW_S = 2
PARTITIONS = 4  # the catalogue's default for dealer.inputs / table.events
TABLES = 6
ROUNDS = 10  # per table in the run a worker is killed in


@pytest.fixture(scope="module")
def workers(platform_kafka, tmp_path_factory):
    home: Path = tmp_path_factory.mktemp("croupier-workers")
    with running_workers(platform_kafka, home, {"dealer-event": 2, "game-evaluation": 2},
                         CROUPIER_BETTING_WINDOW_SECONDS=str(BETTING_WINDOW_S)) as procs:
        yield procs


def _partition(table_id: str) -> int:
    return (murmur2(table_id.encode()) & 0x7FFFFFFF) % PARTITIONS


def _health(proc) -> dict:
    return httpx.get(f"{proc.base_url}/health", timeout=5).json()


def _settled_health(proc, timeout_s: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        response = httpx.get(f"{proc.base_url}/health", timeout=5)
        if response.status_code == 200 or time.monotonic() > deadline:
            return response.json()
        time.sleep(0.3)


def _settled_split(procs, timeout_s: float = 60.0) -> list[set[int]]:
    """The partitions each worker owns once the group has settled: every worker healthy,
    each with some partitions, none twice, all covered (bounded wait)."""
    deadline = time.monotonic() + timeout_s
    while True:
        owned = [set(_settled_health(p)["partitions"]) for p in procs]
        settled = (all(owned) and sum(map(len, owned)) == PARTITIONS
                   and set().union(*owned) == set(range(PARTITIONS)))
        if settled:
            return owned
        assert time.monotonic() < deadline, f"the group did not settle: {owned}"
        time.sleep(0.5)


def _tables_split(owned: list[set[int]]) -> list[str]:
    """Six table ids, at least two in the partitions of each dealer-event worker."""
    tag = uuid.uuid4().hex[:6]
    chosen: list[str] = []
    per_worker = [0] * len(owned)
    n = 0
    while len(chosen) < TABLES:
        n += 1
        table_id = f"W{tag}-{n}"
        worker = next(i for i, parts in enumerate(owned) if _partition(table_id) in parts)
        if per_worker[worker] < TABLES // len(owned):
            per_worker[worker] += 1
            chosen.append(table_id)
    return chosen


def test_two_workers_split_the_tables_and_survive_a_kill(workers, platform_kafka):
    dealer0, dealer1 = workers["dealer-event"], workers["dealer-event/1"]
    evals = [workers["game-evaluation"], workers["game-evaluation/1"]]
    # each dealer-event worker owns some partitions, none twice; and the game-evaluation
    # workers split table.events the same way
    owned = _settled_split([dealer0, dealer1])
    _settled_split(evals)

    # phase 1: every table plays through worker 0's door, half of them forwarded
    warmup = [SimConfig(profile="sbo-baccarat", table_id=t, rounds=2, seed=10 + i)
              for i, t in enumerate(_tables_split(owned))]
    summaries = asyncio.run(run_tables(warmup, url=dealer0.base_url))
    for summary in summaries:
        assert summary.unexpected == [], summary.unexpected
        assert summary.rounds_completed == 2
    profiles = {c.table_id: c.profile for c in warmup}
    assert check_results_match_rules(platform_kafka, profiles) == 2 * TABLES
    # each worker decided the tables of its own partitions (it holds their states)
    assert _health(dealer1)["tables"] >= TABLES // 2
    assert _health(dealer0)["tables"] >= TABLES // 2
    for table_id in profiles:
        owner = dealer0 if _partition(table_id) in owned[0] else dealer1
        other = dealer1 if owner is dealer0 else dealer0
        mine = httpx.get(f"{owner.base_url}/tables/{table_id}", timeout=10)
        routed = httpx.get(f"{other.base_url}/tables/{table_id}", timeout=10)
        assert mine.status_code == 200 and routed.json() == mine.json()

    # phase 2: a longer run on fresh tables; worker 1 is killed mid-play
    tables = _tables_split(owned)
    configs = [SimConfig(profile="sbo-baccarat", table_id=t, rounds=ROUNDS, seed=100 + i,
                         betting_pause=0.3,
                         faults=frozenset({"duplicate_scan"}) if i % 2 else frozenset())
               for i, t in enumerate(tables)]
    done: list = []

    failed: list[BaseException] = []

    def play() -> None:
        try:
            done.append(asyncio.run(run_tables(configs, url=dealer0.base_url)))
        except BaseException as exc:  # reported by the assert below
            failed.append(exc)

    player = threading.Thread(target=play, daemon=True)
    player.start()
    # wait until every table has a result, so the kill lands mid-play on each worker
    deadline = time.monotonic() + 120
    while {r.table_id for r in results(platform_kafka, set(tables))} != set(tables):
        assert time.monotonic() < deadline and player.is_alive(), "no result on some table"
        time.sleep(0.5)
    assert len(results(platform_kafka, set(tables))) < ROUNDS * TABLES, "play ended before the kill"
    dealer1.kill()
    evals[1].kill()  # and a game-evaluation worker: the other recovers its tables' progress
    player.join(240)
    assert not player.is_alive(), "play did not finish after the fail-over"
    assert done, f"the simulator run failed: {failed!r}"
    # the survivors own every partition now
    for survivor in (dealer0, evals[0]):
        health = _settled_health(survivor)
        assert set(health["partitions"]) == set(range(PARTITIONS)), (survivor.label, health)
    for config, summary in zip(configs, done[0], strict=True):
        assert summary.unexpected == [], (config.table_id, summary.unexpected)
        assert summary.rounds_completed == ROUNDS, (config.table_id, summary)
    checked = check_results_match_rules(platform_kafka, {c.table_id: c.profile
                                                          for c in configs})
    assert checked == ROUNDS * TABLES
    assert len(results(platform_kafka, set(tables))) >= checked
