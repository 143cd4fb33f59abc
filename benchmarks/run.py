"""`make bench`: run every benchmarks/bench_*.py in turn and stop on the first failure.

Each benchmark reports its figures as ratios against a baseline it measures in
the same run, so the numbers mean something on any machine. The two that start whole
platforms run last: the seamless wallet beside the transfer wallet (bench_seamless.py,
three platforms, a few minutes) with the arguments in BENCH_SEAMLESS_ARGS, then the
end-to-end benchmark (bench_e2e.py, the longest, with its own broker and the four
services) with the arguments in BENCH_E2E_ARGS (e.g. "--quick" or "--workers 2").
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# the platform benchmarks, in the order they run after every other one, and their arguments
LAST = {"bench_seamless.py": "BENCH_SEAMLESS_ARGS", "bench_e2e.py": "BENCH_E2E_ARGS"}
ORDER = list(LAST)


def main() -> int:
    benches = sorted(HERE.glob("bench_*.py"),
                     key=lambda p: (ORDER.index(p.name) if p.name in LAST else -1, p.name))
    for bench in benches:
        args = shlex.split(os.environ.get(LAST[bench.name], "")) if bench.name in LAST else []
        print(f"== {bench.name} {' '.join(args)}".rstrip(), flush=True)
        done = subprocess.run([sys.executable, str(bench), *args], cwd=HERE.parent)
        if done.returncode != 0:
            print(f"{bench.name} failed with exit code {done.returncode}")
            return done.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
