"""What dealer-event copies per decided input, after a short and a long table history (a
measurement, not a test).

`python -m benchmarks.bench_table_state [rounds...]` deals each number of rounds (default
100, 1,000 and 10,000) through the pure table machine (`table_machine.step`, signed inputs,
sealed events: what the worker and the fold of dealer.log run), 60 rounds a shoe at
sbo-baccarat, then prints the sizes of the table's maps and the CPU of `TableState.copy()`
(the fold copies a table per entry) and of deciding one input (the next `open_round`), each
the best of several runs. State bounded by count (docs/decisions/tables.md, "Rounds a
table keeps") keeps the longest history's cost at the cost of a history that already
filled its windows: the input ids' (KEEP_INPUT_IDS, about 720 rounds) and the rounds'.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable

from services.dealer_event.admission import AdmissionPolicy
from services.dealer_event.state import TableState
from services.dealer_event.table_machine import MachineConfig, step
from services.infra.clock import ManualClock
from services.infra.table_keys import table_key
from services.simulators.tables.inputs import InputFactory
from shared.events.inputs import CloseBetting, EndShoe, InputBase, NewShoe, OpenRound, ScanCard
from shared.profile import load_profile
from shared.shoe import Shoe
from shared.simulate import deal_round

PROFILE = "sbo-baccarat"  # no burns: a round is open, close, its cards
PER_SHOE = 60  # 60 rounds of at most 6 cards fit 8 decks


def _key(table_id: str, role: str) -> bytes:
    return table_key("bench-secret", table_id, role)


class _Table:
    def __init__(self) -> None:
        self.clock = ManualClock()
        self.config = MachineConfig(AdmissionPolicy(_key))
        self.state = TableState("T1")
        self.make = InputFactory("T1", _key, self.clock.now, run_tag="b")

    def ok(self, command: type[InputBase], **fields: object) -> None:
        outcome = step(self.state, self.make.make(command, **fields), self.clock.now(),
                       self.config)
        assert outcome.refusal is None, outcome.refusal
        self.state = outcome.state


def dealt(rounds: int) -> _Table:
    t, profile, rng = _Table(), load_profile(PROFILE), random.Random(rounds)
    shoe: Shoe | None = None
    for n in range(rounds):
        if n % PER_SHOE == 0:
            if shoe is not None:
                t.ok(EndShoe, role="supervisor")
            t.ok(NewShoe, shoe_id=f"S{n // PER_SHOE + 1}", profile=PROFILE)
            shoe = Shoe(profile.decks)
            shoe.shuffle(rng)
        assert shoe is not None
        t.ok(OpenRound, round_id=f"R{n + 1}", dealer="D")
        t.ok(CloseBetting, round_id=f"R{n + 1}", role="supervisor", reason_text="bench")
        for card in deal_round(profile, shoe):
            t.ok(ScanCard, round_id=f"R{n + 1}", card=card)
    return t


def best_of(run: Callable[[], object], times: int = 200, repeats: int = 7) -> float:
    """The best CPU seconds per call of `run` over `repeats` runs of `times` calls."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(times):
            run()
        best = min(best, (time.process_time() - start) / times)
    return best


def measure(rounds: int) -> tuple[dict[str, int], float, float]:
    t = dealt(rounds)
    state = t.state
    sizes = {"round_status": len(state.round_status), "round_shoe": len(state.round_shoe),
             "completed": len(state.completed), "applied_inputs": len(state.applied_inputs)}
    nxt = t.make.make(OpenRound, round_id=f"R{rounds + 1}", dealer="D")
    now = t.clock.now()
    return (sizes, best_of(state.copy),
            best_of(lambda: step(state, nxt, now, t.config), times=50))


def main(histories: list[int]) -> None:
    costs = []
    for rounds in histories:
        sizes, copy, decide = measure(rounds)
        costs.append((copy, decide))
        print(f"{rounds:>7} rounds: copy {copy * 1e6:7.1f} µs, decide one input "
              f"{decide * 1e6:7.1f} µs; " + ", ".join(f"{k} {v}" for k, v in sizes.items()))
    (copy0, decide0), (copy1, decide1) = costs[0], costs[-1]
    print(f"ratio {histories[-1]} / {histories[0]} rounds: copy {copy1 / copy0:.2f}x, "
          f"decide {decide1 / decide0:.2f}x")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [100, 1_000, 10_000])
