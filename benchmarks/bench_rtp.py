"""Benchmark: `croupier rtp` on an 8-deck baccarat profile with all its bets.

Target (issue "The rule engine"): under 1 second on the 2-core dev machine.
Absolute seconds depend on the machine, so every figure is also given as a
ratio to baselines measured in the same run: the CLI's own start-up, a 6-deck
copy of the same profile, and a trivial pure-Python enumeration.

    python benchmarks/bench_rtp.py [--repeat 5] [--max-seconds 1.0] [--json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROFILE = "sbo-baccarat"

ENGINE = """
import sys, time
from shared.profile import load_profile, parse_profile
from shared.rtp import exact_rtp
raw = load_profile({profile!r}).model_dump(mode="json")
profile = parse_profile({{**raw, "decks": int(sys.argv[1])}})
start = time.perf_counter()
exact_rtp(profile)
print(time.perf_counter() - start)
"""

TRIVIAL = """
import itertools, time
start = time.perf_counter()
total = 0
for values in itertools.product(range(10), repeat=5):  # 100 000 value paths
    total += sum(values) % 10
print(time.perf_counter() - start)
"""


def _croupier() -> list[str]:
    script = Path(sys.executable).parent / "croupier"
    return [str(script)] if script.exists() else [sys.executable, "-m", "services.cli"]


def _wall(argv: list[str], repeat: int) -> float:
    """Best wall-clock seconds of `repeat` runs of a fresh process."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - start)
    return best


def _inner(code: str, args: list[str], repeat: int) -> float:
    """Best seconds a fresh process reports for the timed part of `code`."""
    return min(
        float(subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout)
        for _ in range(repeat)
    )


def measure(repeat: int) -> dict[str, float]:
    croupier = _croupier()
    figures = {
        "cli_rtp_8deck_s": _wall([*croupier, "rtp", "--profile", PROFILE, "--json"], repeat),
        "cli_startup_s": _wall([*croupier, "--help"], repeat),
        "engine_8deck_s": _inner(ENGINE.format(profile=PROFILE), ["8"], repeat),
        "engine_6deck_s": _inner(ENGINE.format(profile=PROFILE), ["6"], repeat),
        "trivial_enumeration_s": _inner(TRIVIAL, [], repeat),
    }
    figures["ratio_cli_rtp_to_startup"] = figures["cli_rtp_8deck_s"] / figures["cli_startup_s"]
    figures["ratio_engine_8_to_6_decks"] = figures["engine_8deck_s"] / figures["engine_6deck_s"]
    figures["ratio_engine_to_trivial"] = (
        figures["engine_8deck_s"] / figures["trivial_enumeration_s"])
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--max-seconds", type=float, default=None,
                        help="exit 1 if `croupier rtp` takes longer than this")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = measure(args.repeat)
    if args.json:
        print(json.dumps(figures))
    else:
        print(f"croupier rtp --profile {PROFILE} (8 decks, {_bets()} bets), best of {args.repeat}")
        for name, value in figures.items():
            unit = "x" if name.startswith("ratio") else "s"
            print(f"  {name:28} {value:8.3f} {unit}")
    if args.max_seconds is not None and figures["cli_rtp_8deck_s"] > args.max_seconds:
        print(f"FAIL: {figures['cli_rtp_8deck_s']:.3f} s > {args.max_seconds} s", file=sys.stderr)
        return 1
    return 0


def _bets() -> int:
    sys.path.insert(0, str(ROOT))
    from shared.profile import load_profile

    return len(load_profile(PROFILE).bets)


if __name__ == "__main__":
    sys.exit(main())
