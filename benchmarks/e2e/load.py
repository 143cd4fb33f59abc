"""Intake at the wallet: how many bets/s it accepts, and how fast it answers.

Closed loop (sustained): `clients` concurrent clients each place a bet as soon as the
previous one is answered, for a fixed duration; accepted bets/s = 2xx answers / duration.
Open loop (latency): bets are offered on a fixed schedule (`rate`/s) whatever the
answers, and each latency runs from the bet's scheduled time, so a stalled wallet
shows as latency instead of silently lowering the offered rate (coordinated omission).
Both are bounded: by duration, and the open loop by a cap on bets in flight.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter

from benchmarks.e2e.players import Players
from benchmarks.e2e.stats import summary
from benchmarks.e2e.tables import BenchTable

Target = tuple[str, str]  # table id, round id


async def open_targets(tables: list[BenchTable], players: Players) -> list[Target]:
    """A new round open on each table, once the wallet has seen it open (it refuses bets
    on a round it has not): the targets the intake phases bet on."""
    targets = [(table.table_id, await table.open_round()) for table in tables]
    for table_id, round_id in targets:
        await players.wait_round_open(table_id, round_id)
    return targets


def _status(answer) -> str:
    return str(answer.status) if answer.code is None else f"{answer.status} {answer.code}"


async def closed_loop(players: Players, targets: list[Target], clients: int, duration_s: float,
                      count: int | None = None) -> dict:
    """Bet i goes to player i and target i (round-robin) until `duration_s` passes or, with
    `count`, bets 0..count-1 are all answered."""
    answers: Counter[str] = Counter()
    latencies: list[float] = []
    accepted = 0
    began = time.monotonic()
    end = began + duration_s
    cpu0 = time.process_time()

    async def client(c: int) -> None:
        nonlocal accepted
        i = c
        while time.monotonic() < end and (count is None or i < count):
            player = players.roster[i % len(players.roster)]
            table_id, round_id = targets[i % len(targets)]
            i += clients
            answer = await players.bet(player, table_id, round_id)
            answers[_status(answer)] += 1
            latencies.append(answer.seconds)
            if 200 <= answer.status < 300:
                accepted += 1

    await asyncio.gather(*(client(c) for c in range(clients)))
    seconds = time.monotonic() - began
    lat = summary(latencies)
    return {"clients": clients, "seconds": seconds, "accepted": accepted,
            "accepted_per_s": accepted / seconds, "answers": dict(answers),
            "latency_p50_s": lat["p50"], "latency_p99_s": lat["p99"],
            "client_cpu_share": (time.process_time() - cpu0) / seconds,
            "client_cpu_ms_per_request": (time.process_time() - cpu0) * 1000 / max(1, len(latencies))}


async def open_loop(players: Players, targets: list[Target], rate: float, duration_s: float,
                    max_in_flight: int = 2000, drain_s: float = 30.0) -> dict:
    answers: Counter[str] = Counter()
    latencies: list[float] = []
    count = int(rate * duration_s)
    in_flight = 0
    dropped = 0
    tasks = []
    cpu0 = time.process_time()

    async def one(i: int, scheduled: float) -> None:
        nonlocal in_flight
        try:
            answer = await players.bet(players.roster[i % len(players.roster)],
                                       *targets[i % len(targets)])
            answers[_status(answer)] += 1
            latencies.append(time.perf_counter() - scheduled)
        finally:
            in_flight -= 1

    t0 = time.perf_counter() + 0.05
    for i in range(count):
        scheduled = t0 + i / rate
        await asyncio.sleep(max(0.0, scheduled - time.perf_counter()))
        if in_flight >= max_in_flight:
            dropped += 1  # the wallet is this far behind: counted, not waited for
            continue
        in_flight += 1
        tasks.append(asyncio.create_task(one(i, scheduled)))
    lag = time.perf_counter() - (t0 + count / rate)  # the generator's own lateness
    done, pending = await asyncio.wait(tasks, timeout=drain_s) if tasks else (set(), set())
    for task in pending:
        task.cancel()
    seconds = time.perf_counter() - t0
    lat = summary(latencies)
    return {"offered_per_s": rate, "offered": count, "answered": len(latencies),
            "dropped_in_flight_cap": dropped, "unanswered": len(pending),
            "answers": dict(answers), "latency_p50_s": lat["p50"], "latency_p99_s": lat["p99"],
            "latency_max_s": lat["max"], "generator_lag_s": lag,
            "client_cpu_share": (time.process_time() - cpu0) / seconds,
            "client_cpu_ms_per_request": (time.process_time() - cpu0) * 1000 / max(1, len(latencies))}
