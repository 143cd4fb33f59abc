"""The command line the end-to-end benchmarks share (bench_e2e.py, bench_seamless.py):
the intake options, --quick, --keep-home and --json, and printing the figures."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from benchmarks.e2e.report import write_json


def add_intake_arguments(p: argparse.ArgumentParser, duration_s: float) -> None:
    p.add_argument("--duration", type=float,
                   help=f"seconds of each intake phase (default {duration_s:g})")
    p.add_argument("--players", type=int, help="player accounts (default 500)")
    p.add_argument("--clients", type=int, help="concurrent HTTP clients (default 64)")
    p.add_argument("--rate", type=float, help="offered bets/s of the latency phase (default 500)")
    p.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    p.add_argument("--keep-home", action="store_true",
                   help="keep the run's temp dirs (service logs, broker data)")
    p.add_argument("--json", type=Path, help="also write every figure to this file")


def intake_fields(a: argparse.Namespace, quick: dict, *more: tuple[str, object]) -> dict:
    """The Options fields the command line sets: --quick's, then every option given."""
    fields = dict(quick) if a.quick else {}
    for name, value in (("duration_s", a.duration), ("players", a.players),
                        ("clients", a.clients), ("paced_rate", a.rate), *more):
        if value is not None:
            fields[name] = value
    return fields


def print_figures(figures: dict, render: Callable[[dict], str], json_path: Path | None) -> None:
    print(render(figures))
    if json_path:
        write_json(figures, json_path)
        print(f"figures written to {json_path}")
