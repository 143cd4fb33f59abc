"""Benchmark: the seamless wallet's intake beside the transfer wallet's (issue 20).

Three platforms one after the other, each with its own broker: transfer mode (the
baseline), then seamless mode against the reference operator wallet answering every
call in 5 ms, then in 50 ms. For each: sustained accepted bets/s (closed loop) and the
bet POST's HTTP p50/p99 with the share answered 201 at a fixed offered rate (open
loop), the seamless figures as ratios to transfer mode in the same run
(benchmarks/e2e/seamless.py). On a machine that is not quiet, `--repeats 2` measures the
modes in turn twice and keeps each mode's best.

    python benchmarks/bench_seamless.py [--duration 15] [--rate 500] [--clients 64]
                                        [--latencies 5,50] [--repeats 1] [--quick]
                                        [--json FILE]

Exit code 0 when every mode was measured, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.e2e.cli import add_intake_arguments, intake_fields, print_figures  # noqa: E402
from benchmarks.e2e.seamless import Options, modes, render, run  # noqa: E402

QUICK = dict(duration_s=3.0, players=20, clients=16, paced_rate=100.0, load_tables=1)


def parse(argv: list[str] | None = None) -> tuple[Options, Path | None]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--latencies", help="the reference wallet's answer delays in ms, one "
                                       "seamless platform each (default 5,50)")
    p.add_argument("--repeats", type=int, help="measure the modes in turn this many times, "
                                               "each on a fresh platform, and keep each "
                                               "mode's best (default 1)")
    add_intake_arguments(p, duration_s=15)
    a = p.parse_args(argv)
    fields = intake_fields(a, QUICK, ("repeats", a.repeats))
    if a.latencies:
        fields["latencies_ms"] = tuple(int(s) for s in a.latencies.split(",") if s.strip())
    if any(v <= 0 for k, v in fields.items() if k != "latencies_ms") or \
            any(ms < 0 for ms in fields.get("latencies_ms", ())):
        p.error("durations, counts and the rate must be positive, latencies not negative")
    return Options(keep_home=a.keep_home, **fields), a.json


def main(argv: list[str] | None = None) -> int:
    opts, json_path = parse(argv)
    figures = run(opts)
    if not figures["modes"]:
        print(f"bench_seamless: nothing measured: {figures['errors']}", file=sys.stderr)
        return 1
    print_figures(figures, render, json_path)
    return 0 if len(figures["modes"]) == len(modes(opts)) else 1


if __name__ == "__main__":
    sys.exit(main())
