"""What the unit suite asserts of a range of schedules (tests/unit/test_crashsim_*.py):
every schedule keeps every invariant but for issue 29's bug (c), and the schedules reach
every fault they are meant to."""

from __future__ import annotations

from collections import Counter

from tests.crashsim.schedules import Result, run

# every fault the schedules are meant to reach (as `Sim.faults` names them)
FAULTS = ("killed mid-send", "killed after-send", "killed after-ack", "killed after-answer",
          "restart on cache", "restart wiped", "from a snapshot", "zombie", "race",
          "rebalance mid-batch", "transient", "commit anywhere", "fetch from the commit",
          "redelivery", "resend in flight", "clock ahead", "garbage", "back on cache",
          "snapshot", "timer tick", "dealer resend in flight", "wrongly keyed",
          "told it moved")


def run_range(first: int, count: int) -> tuple[list[Result], Counter[str]]:
    """The broken results and how often each fault was reached."""
    broken: list[Result] = []
    seen: Counter[str] = Counter()
    for seed in range(first, first + count):
        result = run(seed)
        seen.update(result.faults)
        if not result.ok:
            broken.append(result)
    return broken, seen


def assert_range(first: int, count: int) -> None:
    broken, seen = run_range(first, count)
    print(f"{count} schedules from seed {first}; faults reached: {dict(seen)}")
    assert not broken, (f"{len(broken)} of {count} schedules broke an invariant; the "
                        f"first:\n{broken[0].reproducer}")
    if count >= 1000:
        missing = [f for f in FAULTS if not seen[f]]
        assert not missing, f"faults never reached: {missing} ({dict(seen)})"
