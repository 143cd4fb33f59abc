"""Seeded crash schedules of today's wallet, their invariants, and their reproducers.

`run(seed)` builds a schedule step by step from `random.Random(seed)` (what a step may do
depends on what the log holds: bet-settlement decides only bets it read on
`bets.placed`), executes it on a fresh `Sim`, drains it (every worker back, every record
applied, every bet decided, every unanswered request retried) and checks the invariants.
A step is a plain tuple that carries every choice it needs (a kill's cut point and the seed
of what it loses), so `replay(steps)` repeats a schedule exactly, `shrink` drops the
steps a failure does not need, and `Result.reproducer()` prints it.

Steps:
- `("create", player)`, `("deposit", player, request_id, amount)`,
  `("bet", player, bet_id, stake)`: a player's request; `("retry", request_key)` resends one.
- `("end", bet_id, ending, returned)`: bet-settlement rejects, settles or voids a funded
  bet; `("annul", bet_id)`: a settled bet's payout reversed, its stake refunded;
  `("redeliver", bet_id)`: its endings re-published.
- `("process", worker, partition, most, kill_at, loss)`: the worker applies a batch of
  at most `most` commands; with `kill_at`, kill -9 at that cut point, and the records the
  kill loses drawn from the seed `loss` (or, a dict, `Kafka.kill`'s `keep`: how many of
  its unacknowledged records each named topic keeps).
- `("restart", worker, wipe)`: a killed worker back, on its own store or an empty disk.
- `("move", partition, worker, drop)`: a rebalance gives the partition to `worker`;
  `drop`: the old owner's stream drops the record it had fetched and acks it (scenario 4).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.crashsim.invariants import Failure, check
from tests.crashsim.kafka_model import Kafka
from tests.crashsim.old_wallet import Sim, World

Step = tuple[Any, ...]


@contextmanager
def quiet() -> Iterator[None]:
    """The wallet logs every breach and repair it sees; the invariants say what broke."""
    logger = logging.getLogger("croupier")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


@dataclass(frozen=True)
class Config:
    players: int = 2
    workers: int = 2
    partitions: int = 2
    steps: int = 60
    opening: int = 1_000_000  # every account's first deposit
    kill: float = 0.2  # chance a batch carries an armed kill
    wipe: float = 0.25  # chance a restart is on an empty disk (1: the drain's too)
    drop: float = 0.0  # chance a rebalance drops (and acks) a fetched record
    # relative weights of the steps
    weights: tuple[tuple[str, float], ...] = (
        ("deposit", 1), ("bet", 4), ("retry", 1), ("end", 3), ("annul", 0.5),
        ("redeliver", 1), ("process", 6), ("restart", 2), ("move", 0.7))


@dataclass
class Result:
    seed: int | None
    failures: list[Failure]
    steps: list[Step]
    trace: list[str] = field(default_factory=list)

    @property
    def names(self) -> set[str]:
        return {name for name, _ in self.failures}

    def reproducer(self, most: int = 6) -> str:
        """The schedule, a step a line with what it did, then the broken invariants."""
        head = f"seed {self.seed}" if self.seed is not None else "a schedule"
        lines = [f"{head}: {len(self.steps)} steps, then the drain"]
        lines += self.trace
        lines += [f"BROKEN {name}: {detail}" for name, detail in self.failures[:most]]
        if len(self.failures) > most:
            lines.append(f"... and {len(self.failures) - most} more")
        return "\n".join(lines)


def run(seed: int, config: Config = Config()) -> Result:
    """One seeded schedule: generated, executed, drained and checked."""
    with quiet():
        return _run(seed, config)


def _run(seed: int, config: Config) -> Result:
    rng = random.Random(seed)
    sim = Sim(Kafka(random.Random(seed)), config.workers, config.partitions)
    steps: list[Step] = []
    trace: list[str] = []
    players = [f"p{i}" for i in range(config.players)]
    for player in players:
        for step in (("create", player), ("deposit", player, "d0", config.opening)):
            _do(sim, step, steps, trace)
    names = [name for name, _ in config.weights]
    weights = [w for _, w in config.weights]
    counts = {"bet": 0, "deposit": 0}
    for _ in range(config.steps):
        step = _choose(rng.choices(names, weights)[0], rng, sim, players, counts, config)
        if step is not None:
            _do(sim, step, steps, trace)
    return _finish(sim, seed, steps, trace, config)


def replay(steps: Sequence[Step], config: Config = Config(), seed: int | None = None
           ) -> Result:
    """Execute a list of steps (a step that no longer applies is skipped)."""
    with quiet():
        return _replay(steps, config, seed)


def _replay(steps: Sequence[Step], config: Config, seed: int | None) -> Result:
    sim = Sim(Kafka(random.Random(0)), config.workers, config.partitions)
    done: list[Step] = []
    trace: list[str] = []
    for step in steps:
        _do(sim, step, done, trace)
    return _finish(sim, seed, done, trace, config)


def shrink(result: Result, broken: str, config: Config = Config()) -> Result:
    """Drop steps while `broken` still breaks: chunks first, then single steps."""
    if broken not in result.names:
        raise ValueError(f"{broken} is not broken by this schedule")
    steps = list(result.steps)
    best = result
    chunk = max(1, len(steps) // 2)
    while chunk >= 1:
        i = 0
        while i < len(steps):
            trial = steps[:i] + steps[i + chunk:]
            attempt = replay(trial, config, result.seed)
            if broken in attempt.names:
                steps, best = attempt.steps, attempt
            else:
                i += chunk
        chunk //= 2
    return best


def search(broken: str, seeds: range, config: Config = Config()) -> Result | None:
    """The first seed whose schedule breaks the named invariant."""
    for seed in seeds:
        result = run(seed, config)
        if broken in result.names:
            return result
    return None


def _finish(sim: Sim, seed: int | None, steps: list[Step], trace: list[str],
            config: Config) -> Result:
    sim.drain(wipe=config.wipe >= 1)
    trace.extend(sim.trace)
    sim.trace.clear()
    return Result(seed, check(sim), steps, trace)


def _choose(kind: str, rng: random.Random, sim: Sim, players: list[str],
            counts: dict[str, int], config: Config) -> Step | None:
    world = sim.world
    if kind == "deposit":
        counts["deposit"] += 1
        return ("deposit", rng.choice(players), f"d{counts['deposit']}",
                rng.choice((500, 1000, 2500, 5000)))
    if kind == "bet":
        counts["bet"] += 1
        return ("bet", rng.choice(players), f"b{counts['bet'] - 1}",
                rng.choice((500, 1000, 2500)))
    if kind == "retry":
        keys = [k for k in world.requests if not k.startswith("create:")]
        return ("retry", rng.choice(keys)) if keys else None
    if kind == "end":
        open_bets = world.open_bets()
        if not open_bets:
            return None
        bet_id = rng.choice(open_bets)
        stake = world.placed[bet_id][1]
        ending = rng.choices(("rejected", "voided", "settled"), (1, 1, 4))[0]
        returned = stake if ending != "settled" else rng.choice((0, 2 * stake, 3000))
        return ("end", bet_id, ending, returned)
    if kind == "annul":
        settled = [b for b, (e, _) in world.decided.items() if e == "settled"]
        return ("annul", rng.choice(settled)) if settled else None
    if kind == "redeliver":
        ended = sorted(world.endings)
        return ("redeliver", rng.choice(ended)) if ended else None
    alive = [name for name, w in sim.workers.items() if w.alive]
    if kind == "process":
        ready = [p for p in range(sim.partitions) if sim.workers[sim.owner[p]].alive]
        if not ready:
            return None
        partition = rng.choice(ready)
        most = rng.randint(1, 8)
        kill_at = rng.randint(1, 6 * most + 6) if rng.random() < config.kill else None
        return ("process", sim.owner[partition], partition, most, kill_at,
                rng.randrange(1 << 30))
    if kind == "restart":
        dead = [name for name, w in sim.workers.items() if not w.alive]
        return ("restart", rng.choice(dead), rng.random() < config.wipe) if dead else None
    if kind == "move" and alive:
        return ("move", rng.randrange(sim.partitions), rng.choice(alive),
                rng.random() < config.drop)
    return None


def _do(sim: Sim, step: Step, steps: list[Step], trace: list[str]) -> None:
    outcome = _execute(sim, step)
    if outcome is None:
        return
    steps.append(step)
    trace.append(f"{len(steps):3d}. {describe(step)}{': ' + outcome if outcome else ''}")
    trace.extend(sim.trace)
    sim.trace.clear()


def _execute(sim: Sim, step: Step) -> str | None:
    """Run one step; None when it does not apply (so it is not one of the schedule's)."""
    world = sim.world
    kind = step[0]
    if kind in _WORLD:
        applies, act = _WORLD[kind]
        if not applies(world, step):
            return None
        return "503 (no live owner), not sent" if act(world, step) is False else ""
    if kind == "process":
        _, worker, partition, most, kill_at, loss = step
        if sim.owner[partition] != worker or not sim.workers[worker].alive:
            return None
        if isinstance(loss, dict):
            return sim.process(worker, partition, most, kill_at, loss)
        sim.kafka.rng = random.Random(loss)
        return sim.process(worker, partition, most, kill_at)
    if kind == "restart":
        _, worker, wipe = step
        if sim.workers[worker].alive:
            return None
        sim.restart(worker, wipe)
        return f"owns {sim.owned(worker) or 'nothing'}"
    if kind == "move":
        _, partition, worker, drop = step
        if not sim.workers[worker].alive:
            return None
        dropped = sim.assign(partition, worker, drop)
        return "" if dropped is None else f"offset {dropped} dropped and acked"
    raise ValueError(f"unknown step {step!r} ({world})")


def _has_account(world: World, step: Step) -> bool:
    return step[0] == "create" or f"create:{step[1]}" in world.requests


# a world step: whether it applies now, and what it does (False: the request got a 503)
_WORLD: dict[str, tuple[Callable[[World, Step], bool], Callable[[World, Step], Any]]] = {
    "create": (_has_account, lambda w, s: w.create(s[1])),
    "deposit": (_has_account, lambda w, s: w.deposit(*s[1:])),
    "bet": (_has_account, lambda w, s: w.bet(*s[1:])),
    "retry": (lambda w, s: s[1] in w.requests,
              lambda w, s: w.request(s[1], w.requests[s[1]].command)),
    "end": (lambda w, s: s[1] in w.open_bets(), lambda w, s: w.end(*s[1:])),
    "annul": (lambda w, s: w.decided.get(s[1], ("",))[0] == "settled",
              lambda w, s: w.annul(s[1])),
    "redeliver": (lambda w, s: s[1] in w.endings, lambda w, s: w.redeliver(s[1])),
}


_SAYS: dict[str, Callable[..., str]] = {
    "create": lambda player: f"{player} opens an account",
    "deposit": lambda player, request, amount: f"{player} deposits {amount:,} ({request})",
    "bet": lambda player, bet_id, stake: f"{player} bets {stake:,} ({bet_id})",
    "retry": lambda key: f"retry of {key}",
    "end": lambda bet_id, ending, returned: f"settlement: {bet_id} {ending}, "
                                            f"returns {returned:,}",
    "annul": lambda bet_id: f"settlement: {bet_id} annulled (reversal, then refund)",
    "redeliver": lambda bet_id: f"settlement re-publishes the endings of {bet_id}",
    "restart": lambda worker, wipe: f"{worker} restarts "
                                    f"{'on an empty disk' if wipe else 'on its own store'}",
    "move": lambda partition, worker, drop: f"rebalance: partition {partition} to {worker}"
                                            f"{' (a fetched record dropped)' if drop else ''}",
}


def describe(step: Step) -> str:
    """A step, human-readable."""
    kind = step[0]
    if kind != "process":
        return _SAYS[kind](*step[1:])
    _, worker, partition, most, kill_at, loss = step
    kill = f", kill -9 at cut {kill_at}" if kill_at else ""
    if kill and isinstance(loss, dict):
        kill += " keeping " + ", ".join(f"{n} of its {t} records" for t, n in loss.items())
    return f"{worker} applies a batch of partition {partition} (at most {most}){kill}"
