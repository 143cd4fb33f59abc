"""One round of N bets, from opening to its last credit, with the CPU it cost.

Open the round, place N bets through the wallet (bounded concurrency, bounded time),
wait until bet-settlement has decided every one (so none races the close), close
betting, deal, then wait until every bet has ended on wallet.transactions. The CPU
of each service is read before the first bet and after the last credit.
"""

from __future__ import annotations

import time
from collections import Counter

from benchmarks.e2e import cpu
from benchmarks.e2e.load import closed_loop
from benchmarks.e2e.players import Players
from benchmarks.e2e.stats import summary
from benchmarks.e2e.tables import BenchTable
from benchmarks.e2e.watch import LogWatcher


async def place_many(players: Players, table_id: str, round_id: str, count: int, clients: int,
                     timeout_s: float) -> tuple[Counter, int, float]:
    """N bets spread round-robin over the players; returns answers, accepted, seconds."""
    placed = await closed_loop(players, [(table_id, round_id)], clients, timeout_s, count=count)
    return Counter(placed["answers"]), placed["accepted"], placed["seconds"]


async def play_round(table: BenchTable, players: Players, watcher: LogWatcher, size: int,
                     clients: int, pids: dict[str, int], idle_rate: dict[str, float],
                     settle_timeout_s: float, abort=None) -> dict:
    round_id = await table.open_round()
    track = watcher.track(round_id)
    await players.wait_round_open(table.table_id, round_id)
    cpu_before, t_before = cpu.snapshot(pids), time.monotonic()
    place_timeout = 30 + size * 0.05
    answers, accepted, place_s = await place_many(players, table.table_id, round_id, size,
                                                  clients, place_timeout)
    decided = await watcher.wait(lambda: track.decided >= accepted, settle_timeout_s,
                                 abort=abort)
    await table.close_and_deal(round_id)
    ended = await watcher.wait(track.done, settle_timeout_s, abort=abort)
    cpu_after, seconds = cpu.snapshot(pids), time.monotonic() - t_before
    ends = summary(track.end_latencies_s())
    per_bet = cpu.per_item(cpu_before, cpu_after, len(track.settled) or accepted, seconds,
                           idle_rate)
    known = [v for v in per_bet.values() if v is not None]
    errors = []
    if accepted < size:
        errors.append(f"{size - accepted} of {size} bets not accepted: "
                      f"{dict((k, v) for k, v in answers.items() if not k.startswith('2'))}")
    if track.rejected:
        errors.append(f"{len(track.rejected)} bets rejected by bet-settlement: "
                      f"{dict(Counter(track.rejected.values()))}")
    if not decided:
        errors.append(f"only {track.decided} of {accepted} bets decided before the close")
    if not ended:
        errors.append(f"{track.outstanding()} bets had not ended after {settle_timeout_s:.0f}s "
                      f"(completed: {track.completed_ms is not None})")
    return {
        "size": size, "table_id": table.table_id, "round_id": round_id, "accepted": accepted,
        "answers": dict(answers), "place_seconds": place_s,
        "settled": len(track.settled), "credits": len(track.credits),
        "completed_at_ms": track.completed_ms,
        "completion_to_last_credit_s": track.last_credit_s(),
        "completion_to_end_p50_s": ends["p50"], "completion_to_end_p99_s": ends["p99"],
        "cpu_ms_per_bet": cpu.by_service(per_bet), "cpu_ms_per_bet_by_worker": per_bet,
        "cpu_ms_per_bet_total": sum(known) if len(known) == len(per_bet) else None,
        "seconds": seconds, "errors": errors, "ok": not errors,
    }
