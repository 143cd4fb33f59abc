"""The order of the phases, and cleaning up whatever happens.

broker → pipe baseline (before the services, so nothing competes with it) → services
→ players → idle CPU → intake (closed loop, then open loop at a fixed rate) on one
round per load table → those rounds dealt and settled (credits/s) → one round per
size → replays → services stopped → largest record on every topic → broker stopped.
The lifetime-player figure runs without the platform, after everything else.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
import traceback
import uuid
from dataclasses import dataclass

from benchmarks.e2e import cpu, lifetime
from benchmarks.e2e.load import closed_loop, open_loop, open_targets
from benchmarks.e2e.pipe import baseline
from benchmarks.e2e.platform import Platform
from benchmarks.e2e.players import Players
from benchmarks.e2e.records import largest_records
from benchmarks.e2e.replay import timed_replay
from benchmarks.e2e.report import add_ratios
from benchmarks.e2e.rounds import play_round
from benchmarks.e2e.tables import BenchTable
from benchmarks.e2e.watch import LogWatcher

log = logging.getLogger("bench_e2e")


@dataclass(frozen=True)
class Options:
    sizes: tuple[int, ...] = (100, 1_000, 10_000)
    duration_s: float = 20.0  # each intake phase
    workers: int = 1
    brokers: int = 1  # nodes of the run's cluster; 3: replication 3, min.insync.replicas 2
    players: int = 500
    clients: int = 64
    paced_rate: float = 500.0
    load_tables: int = 4
    pipe_messages: int = 20_000
    settle_timeout_s: float = 300.0
    replay_timeout_s: float = 300.0
    lifetime_bets: int = 100_000
    budget_s: float = 2700.0  # no new measured round starts after this (the run still ends)
    keep_home: bool = False


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


async def idle_rate(pids: dict[str, int], seconds: float = 5.0) -> dict[str, float]:
    """CPU seconds per second each process burns with no load (timers, lag probes)."""
    before = cpu.snapshot(pids)
    await asyncio.sleep(seconds)
    return {k: (v or 0.0) / seconds for k, v in cpu.delta(before, cpu.snapshot(pids)).items()}


async def _intake(opts: Options, plat: Platform, players: Players, watcher: LogWatcher,
                  tables: list[BenchTable], idle: dict[str, float], fig: dict) -> None:
    targets = await open_targets(tables, players)
    for _, round_id in targets:
        watcher.track(round_id)
    pids = plat.pids()
    watcher.pause()
    before, t0 = cpu.snapshot(pids), time.monotonic()
    say(f"intake: closed loop, {opts.clients} clients for {opts.duration_s:g} s")
    sustained = await closed_loop(players, targets, opts.clients, opts.duration_s)
    say(f"  {sustained['accepted_per_s']:.0f} accepted bets/s; open loop at "
         f"{opts.paced_rate:g}/s for {opts.duration_s:g} s")
    paced = await open_loop(players, targets, opts.paced_rate, opts.duration_s)
    accepted = sustained["accepted"] + sum(v for k, v in paced["answers"].items()
                                           if k.startswith("2"))
    per_worker = cpu.per_item(before, cpu.snapshot(pids), accepted, time.monotonic() - t0, idle)
    fig["intake"] = {"sustained": sustained, "paced": paced,
                     "cpu_ms_per_bet": cpu.by_service(per_worker),
                     "cpu_ms_per_bet_by_worker": per_worker,
                     "cpu_ms_per_bet_total": None if None in per_worker.values()
                     else sum(per_worker.values())}
    watcher.resume()
    say(f"  p99 {paced['latency_p99_s']}; settling the {accepted} intake bets")
    tracks = [watcher.track(r) for _, r in targets]
    decided = await watcher.wait(lambda: sum(t.decided for t in tracks) >= accepted,
                                 opts.settle_timeout_s, abort=plat.dead)
    # requests the open loop gave up on may still be in the wallet's queue: let them land
    # (no new debit for 2 s) before the close, so they do not spill into the next phases
    quiet_until = time.monotonic() + opts.settle_timeout_s
    seen = -1
    while time.monotonic() < quiet_until and not plat.dead():
        now_seen = sum(t.debits + t.decided for t in tracks)
        if now_seen == seen:
            break
        seen = now_seen
        await asyncio.sleep(2.0)
    for table, (_, round_id) in zip(tables, targets, strict=True):
        await table.close_and_deal(round_id)
    ended = await watcher.wait(lambda: all(t.done() for t in tracks), opts.settle_timeout_s,
                               abort=plat.dead)
    firsts = [t.completed_ms for t in tracks if t.completed_ms]
    lasts = [t.last_credit_ms for t in tracks if t.last_credit_ms is not None]
    credits = sum(len(t.credits) for t in tracks)
    settled = sum(len(t.settled) for t in tracks)
    span = (max(lasts) - min(firsts)) / 1000 if firsts and lasts else None
    fig["settlement"] = {
        "credits": credits, "settled": settled,
        "rejected": sum(len(t.rejected) for t in tracks), "decided_before_close": decided,
        "all_ended": ended, "seconds": span,
        "credits_per_s": credits / span if span else None,
        "bets_ended_per_s": settled / span if span else None,
        "note": "intake rounds: credits ÷ (first completion → last credit)"}


async def _run(opts: Options, plat: Platform, fig: dict) -> None:
    deadline = time.monotonic() + opts.budget_s
    say(f"broker: starting a private cluster of {opts.brokers} node(s)")
    bootstrap = await asyncio.to_thread(plat.start_broker)
    fig["cluster"] = {"brokers": opts.brokers, "replication": plat.settings.replication_factor}
    say(f"baseline: 4-hop pipe, {opts.pipe_messages} messages, then {opts.paced_rate:g}/s")
    fig["baseline"] = await baseline(bootstrap, opts.pipe_messages, opts.paced_rate,
                                     min(opts.duration_s, 10.0),
                                     replication=plat.settings.replication_factor)
    say(f"  {fig['baseline']['messages_per_s']:.0f} msg/s; starting the services "
         f"({opts.workers} worker(s) each)")
    await asyncio.to_thread(plat.start_services)
    settings = plat.settings
    tag = uuid.uuid4().hex[:6]
    players = Players(plat.stack.url("wallet"), settings.operator_token, tag, opts.clients)
    watcher = LogWatcher(bootstrap)
    tables = [BenchTable(f"bench-{tag}-{i}", plat.stack.url("dealer-event"),
                         settings.table_signing_secret, seed=i)
              for i in range(opts.load_tables + 1)]
    try:
        await watcher.start()
        say(f"players: {opts.players} accounts")
        await players.setup(opts.players)
        for table in tables:
            await table.new_shoe()
        pids = plat.pids()
        idle = await idle_rate(pids)
        fig["idle_cpu_share"] = idle
        await _intake(opts, plat, players, watcher, tables[:-1], idle, fig)
        fig["rounds"] = []
        for size in opts.sizes:
            if plat.dead():
                fig["errors"].append(f"round of {size} skipped: dead services {plat.dead()}")
                continue
            if time.monotonic() > deadline:
                fig["errors"].append(f"round of {size} skipped: the run's budget of "
                                     f"{opts.budget_s:.0f} s is spent")
                continue
            say(f"round of {size} bets")
            r = await play_round(tables[-1], players, watcher, size, opts.clients, plat.pids(),
                                 idle, opts.settle_timeout_s + size * 0.02, abort=plat.dead)
            fig["rounds"].append(r)
            say(f"  last credit {r['completion_to_last_credit_s']} s after completion, "
                 f"{'ok' if r['ok'] else r['errors']}")
        by_size = {r["size"]: r for r in fig["rounds"] if r["cpu_ms_per_bet_total"]}
        if len(by_size) >= 2:
            small, large = min(by_size), max(by_size)
            fig["cpu_scaling"] = {"small": small, "large": large, "ratio":
                                  by_size[large]["cpu_ms_per_bet_total"]
                                  / by_size[small]["cpu_ms_per_bet_total"]
                                  if by_size[small]["cpu_ms_per_bet_total"] else None}
        fig["replay"] = {}
        for r in fig["rounds"]:
            if r["completed_at_ms"] is None:
                continue
            say(f"replay of the {r['size']}-bet round")
            fig["replay"][str(r["size"])] = await asyncio.to_thread(
                timed_replay, settings, r["table_id"], r["round_id"], r["completed_at_ms"],
                opts.replay_timeout_s)
        fig["dead_services"] = {label: plat.log_tail(label, 5) for label in plat.dead()}
    finally:
        await watcher.stop()
        await players.close()
        for table in tables:
            await table.close()
    say("stopping the services; scanning every topic for the largest record")
    await asyncio.to_thread(plat.stop_services)
    fig["records"] = await asyncio.to_thread(largest_records, bootstrap)


def _terminate(signum, _frame) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def prepare_process() -> None:
    """SIGTERM unwinds like Ctrl-C (so every platform is stopped), and the Kafka clients'
    logs are quiet: fresh topics make aiokafka log leader elections as warnings, and the
    figures are the output."""
    signal.signal(signal.SIGTERM, _terminate)
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    logging.getLogger("kafka").setLevel(logging.CRITICAL)


def run(opts: Options) -> dict:
    """Every figure as a dict; the platform is stopped and removed on any outcome."""
    prepare_process()
    fig: dict = {"options": opts.__dict__, "errors": [], "load_average_at_start": os.getloadavg()}
    plat = Platform(workers=opts.workers, brokers=opts.brokers)
    began = time.monotonic()
    try:
        asyncio.run(_run(opts, plat, fig))
    except Exception as exc:  # a figure set with the error beats no figures
        fig["errors"].append(f"{type(exc).__name__}: {exc}")
        traceback.print_exc()
    finally:
        say("stopping the broker")
        plat.close(keep_home=opts.keep_home)
    say("lifetime player cost through the wallet's pure handlers")
    fig["lifetime"] = lifetime.measure(opts.lifetime_bets)
    fig["seconds"] = time.monotonic() - began
    fig["load_average_at_end"] = os.getloadavg()
    if "baseline" in fig:
        add_ratios(fig)
    return fig
