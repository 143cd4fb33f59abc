"""`make bench`: run every benchmarks/bench_*.py in turn and stop on the first failure.

Each benchmark reports its figures as ratios against a baseline it measures in
the same run, so the numbers mean something on any machine. The end-to-end
benchmark (bench_e2e.py, the longest, with its own broker and the four services)
runs last, with the arguments in BENCH_E2E_ARGS (e.g. "--quick" or "--workers 2").
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LAST = "bench_e2e.py"


def main() -> int:
    benches = sorted(HERE.glob("bench_*.py"), key=lambda p: (p.name == LAST, p.name))
    for bench in benches:
        args = shlex.split(os.environ.get("BENCH_E2E_ARGS", "")) if bench.name == LAST else []
        print(f"== {bench.name} {' '.join(args)}".rstrip(), flush=True)
        done = subprocess.run([sys.executable, str(bench), *args], cwd=HERE.parent)
        if done.returncode != 0:
            print(f"{bench.name} failed with exit code {done.returncode}")
            return done.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
