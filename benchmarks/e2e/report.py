"""Targets (issue 10, item 6), ratios to the pipe baseline, the printout and the JSON.

Ratios: a rate is divided by the pipe's messages/s (how much of the raw pipe's
throughput the platform reaches); a per-message latency by the pipe's latency at the
same percentile; the time to finish N items by the time the pipe needs to deliver N
messages through its 4 hops (its p50 latency + N ÷ its messages/s); CPU per bet by the pipe's CPU per
message (all 4 hops); a record's size by the pipe's 300-byte message.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.e2e.pipe import PAYLOAD_BYTES


def _ratio(value, base) -> float | None:
    if value is None or not base:
        return None
    return value / base


def _fmt(value, unit: str = "", digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}g}{unit}"
    return f"{value}{unit}"


def _x(ratio) -> str:
    return "" if ratio is None else f"  ({ratio:.3g}× pipe)"


def targets(fig: dict) -> list[dict]:
    out = []
    rounds = {r["size"]: r for r in fig.get("rounds", [])}
    big = rounds.get(10_000)
    out.append({"target": "10,000-bet round settles with no error, completion → last credit "
                          "p99 ≤ 3 s",
                "figure": None if big is None else
                f"errors={len(big['errors'])}, p99={_fmt(big['completion_to_end_p99_s'], ' s')}, "
                f"last={_fmt(big['completion_to_last_credit_s'], ' s')}",
                "pass": None if big is None else bool(
                    big["ok"] and big["completion_to_end_p99_s"] is not None
                    and big["completion_to_end_p99_s"] <= 3.0
                    and big["completion_to_last_credit_s"] <= 3.0)})
    intake, paced = fig.get("intake", {}).get("sustained"), fig.get("intake", {}).get("paced")
    out.append({"target": "sustained intake ≥ 1,000 accepted bets/s",
                "figure": None if not intake else _fmt(intake["accepted_per_s"], "/s"),
                "pass": None if not intake else intake["accepted_per_s"] >= 1000})
    out.append({"target": "HTTP p99 ≤ 250 ms at 500 bets/s offered (all answered 2xx, "
                          "offered on schedule)",
                "figure": None if not paced else
                f"p99={_fmt(paced['latency_p99_s'], ' s')}, answered "
                f"{paced['answered']}/{paced['offered']}",
                "pass": None if not paced else bool(
                    paced["latency_p99_s"] is not None and paced["latency_p99_s"] <= 0.25
                    and paced["answered"] == paced["offered"] and paced["generator_lag_s"] <= 1.0
                    and set(paced["answers"]) <= {"200", "201"})})
    rec = fig.get("records")
    out.append({"target": "no record above 64 KB on any topic or changelog",
                "figure": None if not rec else
                f"{rec['largest']['bytes']} B on {rec['largest']['topic']}",
                "pass": None if not rec else rec["ok"]})
    cpu = fig.get("cpu_scaling")
    out.append({"target": "per-bet CPU at 10,000 bets per round ≤ 1.5× that at 100",
                "figure": None if not cpu else
                f"{_fmt(cpu['ratio'], '×')} ({cpu['large']} vs {cpu['small']} bets)",
                "pass": None if not cpu or cpu["ratio"] is None else
                (cpu["ratio"] <= 1.5 if (cpu["small"], cpu["large"]) == (100, 10_000) else None)})
    life = fig.get("lifetime")
    out.append({"target": "a player with 100,000 lifetime bets costs per bet ≤ 1.5× a new one",
                "figure": None if not life or life.get("ratio") is None else
                f"{_fmt(life['ratio'], '×')} after {life['lifetime_bets']} bets",
                "pass": None if not life or life.get("ratio") is None else
                (life["ratio"] <= 1.5 if life["lifetime_bets"] >= 100_000 else None)})
    return out


def add_ratios(fig: dict) -> None:
    base = fig["baseline"]
    rate, p50, p99 = base["messages_per_s"], base["latency_p50_s"], base["latency_p99_s"]
    cpu_msg = base["cpu_ms_per_message"]
    for key in ("sustained", "paced"):
        part = fig.get("intake", {}).get(key)
        if part:
            part["ratio_accepted_per_s"] = _ratio(part.get("accepted_per_s"), rate)
            part["ratio_latency_p50"] = _ratio(part["latency_p50_s"], p50)
            part["ratio_latency_p99"] = _ratio(part["latency_p99_s"], p99)
    if fig.get("settlement"):
        fig["settlement"]["ratio_credits_per_s"] = _ratio(fig["settlement"].get("credits_per_s"),
                                                          rate)
    for r in fig.get("rounds", []):
        pipe_time = (p50 or 0.0) + r["size"] / rate if rate else None
        r["ratio_last_credit_to_pipe_time"] = _ratio(r["completion_to_last_credit_s"], pipe_time)
        r["ratio_end_p50"] = _ratio(r["completion_to_end_p50_s"], p50)
        r["ratio_end_p99"] = _ratio(r["completion_to_end_p99_s"], p99)
        r["ratio_cpu_per_bet"] = _ratio(r["cpu_ms_per_bet_total"], cpu_msg)
        rp = fig.get("replay", {}).get(str(r["size"]))
        if rp:
            rp["ratio_to_pipe_time"] = _ratio(rp["seconds"], pipe_time)
    if fig.get("records"):
        fig["records"]["ratio_to_pipe_record"] = _ratio(fig["records"]["largest"]["bytes"],
                                                        PAYLOAD_BYTES)
    life = fig.get("lifetime")
    if life and life.get("old_ms_per_bet") is not None:
        life["ratio_new_to_pipe_cpu"] = _ratio(life["new_ms_per_bet"], cpu_msg)
        life["ratio_old_to_pipe_cpu"] = _ratio(life["old_ms_per_bet"], cpu_msg)
    fig["targets"] = targets(fig)


def render(fig: dict) -> str:
    base = fig["baseline"]
    intake = fig.get("intake", {})
    cluster = fig.get("cluster", {"brokers": 1, "replication": 1})
    lines = ["", "end-to-end benchmark (baseline: raw 4-hop aiokafka consume→produce pipe, "
             "acks=all and idempotent, same cluster, same run)",
             f"  cluster: {cluster['brokers']} Kafka node(s), replication "
             f"{cluster['replication']}",
             f"  pipe: {_fmt(base['messages_per_s'], ' msg/s')}, latency at "
             f"{base['paced']['offered_rate']:g}/s p50 {_fmt(base['latency_p50_s'], ' s')} "
             f"p99 {_fmt(base['latency_p99_s'], ' s')}, CPU "
             f"{_fmt(base['cpu_ms_per_message'], ' ms/msg')}"]
    # The parts a run may lack (a skipped stage, an early failure), in print order: each
    # part's lines are printed only when the run has it.
    sections: list[tuple[Any, Callable[[Any], list[str]]]] = [
        (intake.get("sustained"), _sustained_lines),
        (intake.get("paced"), _paced_lines),
        (intake.get("cpu_ms_per_bet"), lambda per: _intake_cpu_lines(per, intake, base)),
        (fig.get("settlement"), _settlement_lines),
        (fig.get("rounds"), lambda rounds: [line for r in rounds for line in _round_lines(r)]),
        (fig.get("cpu_scaling"), _cpu_scaling_lines),
        (fig.get("records"), _records_lines),
        (fig.get("replay"), _replay_lines),
        (fig.get("lifetime"), _lifetime_lines),
        (fig.get("dead_services"), lambda dead: [f"  DEAD SERVICES: {dead}"]),
        (fig.get("errors"), lambda errors: [f"  RUN ERROR: {error[:600]}" for error in errors]),
    ]
    for part, lines_of in sections:
        if part:
            lines += lines_of(part)
    lines.append(f"  machine load average (1, 5, 15 min) at start {_load(fig.get('load_average_at_start'))}"
                 f", at end {_load(fig.get('load_average_at_end'))}; run took "
                 f"{fig.get('seconds', 0):.0f} s")
    lines.append("  targets:")
    for t in fig["targets"]:
        mark = {True: "PASS", False: "MISS", None: "n/a "}[t["pass"]]
        lines.append(f"    [{mark}] {t['target']}: {t['figure'] or 'not measured'}")
    return "\n".join(lines)


def _vs(value, ratio, unit: str = "") -> str:
    """A figure and, when there is one, its ratio to the pipe."""
    return _fmt(value, unit) + _x(ratio)


def _sustained_lines(s: dict) -> list[str]:
    return [f"  sustained intake ({s['clients']} clients, {s['seconds']:.0f} s): "
            f"{_vs(s['accepted_per_s'], s['ratio_accepted_per_s'], ' accepted bets/s')}; HTTP p50 "
            f"{_fmt(s['latency_p50_s'], ' s')} p99 {_fmt(s['latency_p99_s'], ' s')}; answers "
            f"{s['answers']}; client CPU {_fmt(s['client_cpu_ms_per_request'], ' ms/request')}"]


def _paced_lines(p: dict) -> list[str]:
    lines = [f"  HTTP at {p['offered_per_s']:g} bets/s offered: "
             f"p50 {_vs(p['latency_p50_s'], p['ratio_latency_p50'], ' s')}, "
             f"p99 {_vs(p['latency_p99_s'], p['ratio_latency_p99'], ' s')}; "
             f"answered {p['answered']}/{p['offered']}, answers {p['answers']}"]
    if p["generator_lag_s"] > 1.0:
        lines.append(f"    WARNING: the load generator fell {p['generator_lag_s']:.1f} s behind "
                     f"its schedule (client CPU {p['client_cpu_share']:.0%} of a core): the "
                     "offered rate was not reached")
    return lines


def _intake_cpu_lines(per_bet: dict, intake: dict, base: dict) -> list[str]:
    total = intake.get("cpu_ms_per_bet_total")
    ratio = _ratio(total, base["cpu_ms_per_message"])
    return [f"  intake CPU ms/bet: {_cpu(per_bet)}, total {_vs(total, ratio)}"]


def _settlement_lines(s: dict) -> list[str]:
    return [f"  settlements credited: {_vs(s.get('credits_per_s'), s.get('ratio_credits_per_s'), '/s')} "
            f"({s.get('credits')} credits of {s.get('settled')} settled bets, "
            f"{_fmt(s.get('bets_ended_per_s'), '/s')} bets ended; {s.get('note', '')})"]


def _round_lines(r: dict) -> list[str]:
    outcome = "ok" if r["ok"] else "ERRORS: " + "; ".join(r["errors"])
    return [f"  round of {r['size']:,} bets: completion → last credit "
            f"{_vs(r['completion_to_last_credit_s'], r['ratio_last_credit_to_pipe_time'], ' s')}; "
            f"per bet p50 {_fmt(r['completion_to_end_p50_s'], ' s')} "
            f"p99 {_vs(r['completion_to_end_p99_s'], r['ratio_end_p99'], ' s')}; "
            f"placed in {r['place_seconds']:.1f} s; {outcome}",
            f"    CPU ms/bet: {_cpu(r['cpu_ms_per_bet'])}, "
            f"total {_vs(r['cpu_ms_per_bet_total'], r['ratio_cpu_per_bet'])}"]


def _cpu_scaling_lines(c: dict) -> list[str]:
    return [f"  per-bet CPU at {c['large']:,} vs {c['small']:,} bets per round: {_fmt(c['ratio'], '×')}"]


def _records_lines(rec: dict) -> list[str]:
    largest, scan = rec["largest"], "" if rec["complete"] else ", scan INCOMPLETE"
    lines = [f"  largest record: {largest['bytes']:,} B on {largest['topic']} ({rec['records']:,} "
             f"records on {rec['topics']} topics{scan}){_x(rec.get('ratio_to_pipe_record'))}"]
    per_bet = rec.get("records_per_bet")
    if per_bet:
        shares = ", ".join(f"{t} {n}" for t, n in per_bet["by_topic"].items())
        lines.append(f"  records written per funded bet: {per_bet['per_bet']:.1f} "
                     f"({per_bet['records']:,} records, {per_bet['bets']:,} on bets.placed; "
                     f"{shares})")
    return lines


def _replay_lines(replay: dict) -> list[str]:
    return [f"  replay of the {int(size):,}-bet round: "
            f"{_vs(rp['seconds'], rp.get('ratio_to_pipe_time'), ' s')}, verdict {rp.get('verdict')}"
            + ("" if rp["seconds"] is not None else " (timed out)")
            for size, rp in replay.items()]


def _lifetime_lines(life: dict) -> list[str]:
    if life.get("ratio") is None:
        return [f"  lifetime player cost: not measured ({life.get('error')})"]
    return [f"  lifetime player cost (wallet pure handlers): new "
            f"{_fmt(life['new_ms_per_bet'], ' ms/bet')}, after {life['lifetime_bets']:,} bets "
            f"{_vs(life['old_ms_per_bet'], life.get('ratio_old_to_pipe_cpu'), ' ms/bet')} → "
            f"{_fmt(life['ratio'], '×')}; "
            f"ledger entry {life['entry_bytes_new']} → {life['entry_bytes_old']} B"]


def _load(avg) -> str:
    return "n/a" if not avg else "/".join(f"{x:.1f}" for x in avg)


def _cpu(per: dict) -> str:
    return ", ".join(f"{k} {_fmt(v, digits=3)}" for k, v in per.items())


def write_json(fig: dict, path: Path) -> None:
    path.write_text(json.dumps(fig, indent=2, default=str))
