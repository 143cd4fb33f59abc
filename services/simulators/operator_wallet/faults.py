"""The faults the reference operator wallet injects, and the seeded dice that pick which
call gets one, so a run that failed can be run again with the same faults.

Each signed call (debit, credit, rollback, of the kinds `kinds` names) rolls every rate
once, in a fixed order, whether or not an earlier one hit: the n-th call of a run with a
given seed always gets the same faults.
- `latency_ms`: every answer waits this long first (a slow operator: 5 ms, 50 ms);
- `error_rate`: a 500 before anything is written (croupier must ask again);
- `late_rate`: the call is applied, then answered `late_ms` later (past croupier's 3 s
  debit timeout: the debit croupier gave up on stands at the operator until rolled back);
- `drop_rate`: the call is applied, then the connection is closed with no answer;
- `duplicate_rate`: the call is processed twice at once (a redelivery racing the first),
  proving that money moves once.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from pydantic import Field

from shared.events.operator_wallet import CallKind
from shared.models import FrozenModel

Rate = Field(default=0.0, ge=0.0, le=1.0)


class Faults(FrozenModel):
    """The fault settings: at start (CLI flags, `OPERATOR_WALLET_FAULTS` as JSON) and at
    runtime (`PUT /admin/faults`). Rates are probabilities per call, not money."""


    latency_ms: int = Field(default=0, ge=0, le=600_000)
    error_rate: float = Rate
    late_rate: float = Rate
    late_ms: int = Field(default=3_500, ge=0, le=600_000, description=(
        "How late a late answer comes: past croupier's 3 s debit timeout by default."))
    drop_rate: float = Rate
    duplicate_rate: float = Rate
    seed: int | None = Field(default=None, description=(
        "Seeds the dice (none: a random seed); setting the faults reseeds them."))
    kinds: tuple[CallKind, ...] = ("debit", "credit", "rollback")


@dataclass(frozen=True)
class Roll:
    """The faults one call gets."""

    error: bool = False
    late: bool = False
    drop: bool = False
    duplicate: bool = False


class Dice:
    """The seeded random behind the rates; `roll` is called once per signed call."""

    def __init__(self, faults: Faults) -> None:
        self.faults = faults
        self._random = random.Random(faults.seed)

    def roll(self, kind: CallKind) -> Roll:
        f = self.faults
        draws = [self._random.random() for _ in range(4)]  # always four: reproducible
        if kind not in f.kinds:
            return Roll()
        return Roll(error=draws[0] < f.error_rate, late=draws[1] < f.late_rate,
                    drop=draws[2] < f.drop_rate, duplicate=draws[3] < f.duplicate_rate)
