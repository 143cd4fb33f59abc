"""`python -m tests.crashsim [--seed S] [--schedules N]`: run N schedules from seed S (the
defaults from CROUPIER_CRASHSIM_SEED, 1, and CROUPIER_CRASHSIM_SCHEDULES, 10000); print the
first broken seed's reproducer, then one line; exit 1 if any broke."""

from __future__ import annotations

import argparse
import os
import sys

from tests.crashsim.schedules import DEFAULT_SCHEDULES, DEFAULT_SEED, run
from tests.crashsim.stages import SIMULATED


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.crashsim")
    parser.add_argument("--seed", type=int, default=int(os.environ.get(
        "CROUPIER_CRASHSIM_SEED", DEFAULT_SEED)))
    parser.add_argument("--schedules", type=int, default=int(os.environ.get(
        "CROUPIER_CRASHSIM_SCHEDULES", DEFAULT_SCHEDULES)))
    args = parser.parse_args(argv)
    broken = 0
    for seed in range(args.seed, args.seed + args.schedules):
        result = run(seed)
        if not result.ok:
            if not broken:
                print(result.reproducer)
            broken += 1
    print(f"simulate: {args.schedules} schedules from seed {args.seed} over "
          f"{', '.join(SIMULATED)}: {broken} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
