"""`make bench`: run every benchmarks/bench_*.py in turn and stop on the first failure.

Each benchmark reports its figures as ratios against a baseline it measures in
the same run, so the numbers mean something on any machine.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    for bench in sorted(HERE.glob("bench_*.py")):
        print(f"== {bench.name}", flush=True)
        done = subprocess.run([sys.executable, str(bench)], cwd=HERE.parent)
        if done.returncode != 0:
            print(f"{bench.name} failed with exit code {done.returncode}")
            return done.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
