"""Running schedules: one seed's configuration, the run, its result and reproducer, and
the two known service bugs of issue 29 told apart from everything else."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from prometheus_client.metrics import MetricWrapperBase

from services.infra import metrics, packs
from tests.crashsim import invariants
from tests.crashsim.pipeline import Sim
from tests.crashsim.stages import Config

DEFAULT_SEED = 1
DEFAULT_SCHEDULES = 10_000
LOW_START = 4_000  # a stake of 5,000 overdraws it by 1,000; two bets of 2,000 spend it
STACKED = 2  # seed % 50: a table scans a card its shoe no longer holds (no pinned seed is one)


def config_for(seed: int) -> Config:
    """A seed's configuration: one in four runs the wallet in seamless mode; one in
    twenty-five has wallet workers whose clock may run ahead by more than its window; one
    in five starts its players on a balance a few bets spend (the funds guard is met); one
    in fifty has its first table deal, in the drain, every copy of one card and then scan
    it again (dealer-event's card_not_in_shoe is met). Two in three send a batch's entries
    in packs of one or two (a batch over the production bound, in small)."""
    return Config(seamless=seed % 4 == 3, ahead_p=0.5 if seed % 25 == 7 else 0.0,
                  start_balance=LOW_START if seed % 5 == 4 else 30_000,
                  stacked=seed % 50 == STACKED, pack_records=(1, 2, 100)[seed % 3])


@dataclass
class Result:
    seed: int
    steps: list[str]
    problems: list[str]
    faults: set[str] = field(default_factory=set)
    seamless: bool = False
    ahead: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def reproducer(self) -> str:
        mode = "seamless" if self.seamless else "transfer"
        return (f"seed {self.seed} ({mode} wallet; reproduce: python -m tests.crashsim "
                f"--seed {self.seed} --schedules 1):\n  " + "\n  ".join(self.steps)
                + "\nviolated:\n  " + "\n  ".join(self.problems))


_loop: asyncio.AbstractEventLoop | None = None
_frozen = False


def _out_of_the_collectors_sight() -> None:
    """Once a process: what it built before its first schedule (modules, classes, pydantic's
    schemas: about 100,000 objects) is moved out of the cyclic collector's sight, as a
    service's worker does (`services.infra.gc_tuning`). A schedule's graph of workers is
    cyclic garbage once checked, so full collections come every 50 schedules or so; each
    walked all of it again (about 5 % of the run)."""
    global _frozen
    if not _frozen:
        _frozen = True
        gc.collect()
        gc.freeze()


class _Unmetered:
    """A Prometheus metric that counts nothing: a schedule's workers share one process's
    registry, and no invariant reads it (a breach is recorded apart, below)."""

    def labels(self, *_args: object, **_kwargs: object) -> _Unmetered:
        return self

    def inc(self, *_args: object, **_kwargs: object) -> None:
        pass

    set = observe = inc


_METRICS = {name: value for name, value in vars(metrics).items()
            if isinstance(value, MetricWrapperBase)}


@contextmanager
def quiet_and_watched(sim_breaches: list[str]) -> Iterator[None]:
    """Logging and the metrics off (the kernel logs every repair; the metrics only cost
    time), and every raised breach recorded."""
    original = metrics.breach

    def breach(invariant: str) -> None:
        sim_breaches.append(invariant)
        original(invariant)

    metrics.breach = breach
    unmetered = _Unmetered()
    for name in _METRICS:
        setattr(metrics, name, unmetered)
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        yield
    finally:
        metrics.breach = original
        for name, metric in _METRICS.items():
            setattr(metrics, name, metric)
        logging.disable(previous)


def run(seed: int, config: Config | None = None) -> Result:
    """One schedule: generated from `seed`, run, drained, checked."""
    global _loop
    if _loop is None or _loop.is_closed():
        _loop = asyncio.new_event_loop()
        _out_of_the_collectors_sight()
    sim = Sim(seed, config or config_for(seed))
    bound, packs.PACK_MAX_RECORDS = packs.PACK_MAX_RECORDS, sim.config.pack_records
    with quiet_and_watched(sim.breaches):
        try:
            _loop.run_until_complete(sim.run())
            problems = invariants.check(sim)
        except Exception as error:  # noqa: BLE001 - a crash of the run is a finding too
            problems = [f"the run raised {type(error).__name__}: {error}"]
        finally:
            packs.PACK_MAX_RECORDS = bound
    return Result(seed, sim.steps, problems, sim.faults, sim.seamless, sim.ahead)
