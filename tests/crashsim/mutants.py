"""`python -m tests.crashsim.mutants` (`make mutants`): plant one-line bugs in the real code,
one at a time, and run the crash simulator on each (issue 29, "Prove it" 4).

Each mutant is data (`MUTANTS`): an id, the file under services/, the exact text it replaces
(found exactly once in the file, else the mutant "does not apply": the code moved and the
mutant must be updated), the replacement, and the class of bug it plants. For each one the
runner copies a snapshot of the tree (taken once at the start: the working tree without
.git, .venv and runtime directories, or `--rev REV` from git) into a scratch directory,
plants the bug there and runs the simulator's schedules in it (`run(seed)` of
tests/crashsim/schedules.py, what `python -m tests.crashsim` runs) with the scratch
directory first on the path, so `services` and `shared` are the scratch copy's folders,
not the editable install's (a probe checks that before any mutant runs).

The unmutated snapshot runs the same schedules first (the baseline): a schedule it breaks
(a known, reported bug such as issue 29's (c)) kills no mutant unless the mutant breaks it
otherwise (other problems); with a clean baseline this is exactly `python -m tests.crashsim`
exiting 1. Outcomes: killed (a schedule breaks: the run stops at the first, and its first
violated invariant is reported), survived (none does), justified (survived, and in
`JUSTIFIED` with why it changes no money and no answer; at most three; never a dealer-event
one), or an error: the mutant does not apply, does not compile, or the simulator failed
otherwise. Errors and survivors fail the run (exit 1). It ends with one line:
`mutants: P planted, K killed, J justified, S survived`.

Settings: CROUPIER_MUTANTS_SCHEDULES (schedules per mutant, default `DEFAULT_SCHEDULES`),
CROUPIER_MUTANTS_SEED (first seed, default 1), CROUPIER_MUTANTS_JOBS (parallel runs,
default 2); `--only ID[,ID]`, `--list`, `--rev REV`, `--keep` (leave the scratch copies).

When code moves, update the mutant's `original` (and `replacement`): the unit test
tests/unit/test_mutants_runner.py fails on any mutant whose text is not found exactly once.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SCHEDULES = 2000
DEFAULT_SEED = 1
DEFAULT_JOBS = 2
MAX_JUSTIFIED = 3
MIN_MUTANTS = 30
MIN_PER_GROUP = 5
# not copied into a scratch tree: version control, the venv, caches, runtime state
SKIP = {".git", ".venv", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis",
        "var", "build", "node_modules", "croupier.egg-info"}


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str  # relative to the repository's root
    original: str  # the exact text replaced; found exactly once in `file`
    replacement: str
    bug: str  # the class of bug planted

    @property
    def group(self) -> str:
        return group_of(self.file)


def group_of(file: str) -> str:
    """The service a file belongs to (the kernel: its own log, snapshots and batch)."""
    if file in KERNEL_FILES:
        return "kernel"
    parts = file.split("/")
    if len(parts) > 2 and parts[0] == "services":
        return parts[1].replace("_", "-")
    return "other"


KERNEL_FILES = ("services/infra/kernel.py", "services/infra/own_log.py",
                "services/infra/snapshots.py", "services/infra/packs.py")
GROUPS = ("dealer-event", "game-evaluation", "bet-settlement", "wallet", "kernel")

_KERNEL, _OWN, _SNAP, _PACKS = KERNEL_FILES
_HANDLERS = "services/wallet/handlers.py"
_LEDGER = "services/wallet/ledger.py"
_FOLD = "services/wallet/ledger_fold.py"
_BATCHES = "services/wallet/batches.py"
_SEAMLESS = "services/wallet/seamless.py"
_BOOK = "services/bet_settlement/round_book.py"
_TERMS = "services/bet_settlement/settlement_terms.py"
_SFOLD = "services/bet_settlement/settlement_fold.py"
_RECORDS = "services/bet_settlement/records.py"
_EVAL = "services/game_evaluation/evaluator.py"
_EFOLD = "services/game_evaluation/evaluation_fold.py"
_EDEC = "services/game_evaluation/decisions.py"
_TABLE = "services/dealer_event/table_machine.py"
_DDEC = "services/dealer_event/decisions.py"
_DFOLD = "services/dealer_event/dealer_fold.py"
_DSTATE = "services/dealer_event/state.py"

MUTANTS: tuple[Mutant, ...] = (
    # ---- the kernel: its batch, its own log, its snapshots
    Mutant("K1", _OWN, "return max(self.inputs.get(key, -1), self.passed.get(key, -1)) + 1",
           "return max(self.inputs.get(key, -1), self.passed.get(key, -1)) + 2",
           "off-by-one in resume offsets: the record after the checkpoint is skipped"),
    Mutant("K2", _OWN, "if entry.prev != state.head_id or offset < state.head:",
           "if offset < state.head:",
           "chain check removed: a zombie's entry folds as valid"),
    Mutant("K3", _OWN, "[at.offset for at in landed] == self.expected and self.state.end == self.start",
           "len(landed) == len(self.packs.firsts)",
           "a writer trusts its acks: entries answered wherever they landed"),
    Mutant("K4", _OWN, "state.inputs[key] = max(ref.offset, state.inputs.get(key, -1))",
           "state.inputs[key] = max(ref.offset + 1, state.inputs.get(key, -1))",
           "a skipped offset: the checkpoint passes the record after the one applied"),
    Mutant("K5", _KERNEL, "            if state.unpublished:",
           "            if False:",
           "the outbox is not published again on recovery (outputs lost in a crash)"),
    Mutant("K6", _KERNEL, "conflicted[partition] = [x.event for x in part[kept:]]",
           "conflicted[partition] = []",
           "a lost race's records are never decided again (inputs lost)"),
    Mutant("K7", _KERNEL, "            kept = i + 1",
           "            kept = len(part)",
           "an answer the log does not back: a lost race answered as decided"),
    Mutant("K8", _KERNEL, "await own.publish(outputs)",
           "await own.publish(outputs[:-1])",
           "an output acknowledged that was never sent (the batch's last one)"),
    Mutant("K9", _OWN, "        if at > state.published_through:",
           "        if at > state.published_through + 1:",
           "off-by-one in the outbox: the entry after the last published one left out"),
    Mutant("K10", _SNAP, "lambda d, _c: {(str(t), int(p)): int(o) for t, p, o in d})",
           "lambda d, _c: {(str(t), int(p)): int(o) + 1 for t, p, o in d})",
           "a snapshot's input checkpoints restored one ahead: a record skipped"),
    Mutant("K11", _SNAP, "found.records, found.end = log_records, end",
           "found.records, found.end = [], end",
           "a restore drops the log's entries after the snapshot (state behind its log)"),
    Mutant("K12", _SNAP, "if at_head != manifest.head_id:",
           "if False:",
           "a snapshot check removed: one the log does not confirm is restored"),
    Mutant("K13", _PACKS, "else pack_values(self.values[a:b])",
           "else pack_values(self.values[a:b - 1])",
           "a pack loses its last record (an entry or an ending never sent)"),
    Mutant("K14", _PACKS, "where = (topic, partition_for(topic, key))",
           "where = (topic, 0)",
           "records of different partitions packed together (endings misrouted)"),
    # ---- the wallet (transfer and seamless)
    Mutant("W1", _HANDLERS, "    if cmd.returned == 0:",
           "    if cmd.returned == 0 or cmd.ending != \"settled\":",
           "a refund not applied: a rejected or voided bet ends with no credit"),
    Mutant("W2", _HANDLERS,
           "movement = Movement(kind, cause, cmd.returned, cmd.table_id, cmd.round_id)",
           'movement = Movement(kind, cause, cmd.returned - (kind == "payout"), cmd.table_id, '
           "cmd.round_id)",
           "a wrong amount credited: every payout one minor unit short"),
    Mutant("W3", _LEDGER, "and movement.amount > account.balance:",
           "and movement.amount > account.balance + 1000:",
           "a funds guard loosened: a debit may overdraw the account"),
    Mutant("W4", _FOLD, "kv[tx_id_key(player_id, entry.tx.tx_id)] = entry.account.tx_count",
           "pass",
           "an idempotency key not remembered: a resent movement applied again"),
    Mutant("W5", _HANDLERS,
           'if record.status == "voided" and cmd.ending == "settled" and \\',
           'if False and \\',
           "a false breach (issue 29 bug b): a settlement seen after its annulment"),
    Mutant("W6", _BATCHES, "        if not backed:",
           "        if False:",
           "an answer the log does not back: a zombie answers what it decided"),
    Mutant("W7", _FOLD, "kv[bet_key(player_id, entry.bet_id)] = entry.bet",
           "pass",
           "a bet record not remembered: its ending refused, a resend debited again"),
    Mutant("W8", _HANDLERS, "if existing.fingerprint != cmd.fingerprint():",
           "if existing.fingerprint == cmd.fingerprint():",
           "a resent bet answered bet_id_conflict though it was debited"),
    Mutant("W9", _SEAMLESS,
           'calls = (answered,) if answer.outcome == "refused" else (',
           'calls = (answered,) if answer.outcome != "ok" else (',
           "seamless: no rollback of a debit the operator may hold (it did not answer)"),
    Mutant("W10", _SEAMLESS,
           '"credit", credit_id(cmd.settlement_id or cmd.bet_id), account, cmd.returned,',
           '"credit", credit_id(cmd.settlement_id or cmd.bet_id), account, cmd.returned // 2,',
           "seamless: a wrong amount credited at the operator (half the return)"),
    # ---- bet-settlement
    Mutant("B1", _TERMS, "    return s.outcome, s.returned",
           "    return s.outcome, s.returned // 100 * 100",
           "a payout rounding error: returns rounded down to the hundred"),
    Mutant("B2", _TERMS, "return Refund(annul_refund_id(bet.bet_id), outcome, returned)",
           "return Refund(annul_refund_id(bet.bet_id), outcome, returned // 2)",
           "a refund of the wrong amount: an annulled bet gets half its stake back"),
    Mutant("B3", _BOOK, "and bet.placed_at >= h.closed_at:",
           "and bet.placed_at > h.closed_at.replace(year=9999):",
           "a status guard loosened: a bet placed after betting closed is accepted"),
    Mutant("B4", _BOOK,
           "back, refunded = take_back(original.settlement_id, original.returned), annul_refund(bet)",
           "back, refunded = take_back(original.settlement_id, bet.stake), annul_refund(bet)",
           "a reversal of the wrong amount: an annulment takes back the stake"),
    Mutant("B5", _BOOK, "            if not isinstance(entry.decision, BetAccepted):",
           "            if entry.decision is None:",
           "a rejected bet settled: a refused stake paid out"),
    Mutant("B6", _SFOLD, "kv[bet_key(table_id, round_id, bet.bet.bet_id)] = bet",
           "pass",
           "a bet's entry lost from the fold: its decision and settlement forgotten"),
    Mutant("B7", _BOOK, 'self.entries[entry.bet.bet_id] = entry.model_copy(update={"settlement": settled})',
           "pass",
           "a settlement not remembered: an annulment takes no payout back"),
    # ---- game-evaluation
    Mutant("G1", _EVAL, "    if cards_needed(profile, cards):",
           "    if cards_needed(profile, cards) > 1:",
           "a wrong result decided: a round completed one card early"),
    Mutant("G2", _EVAL, '(*rnd.cards, str(event.card))',
           '(str(event.card), *rnd.cards)',
           "a wrong result decided: the round's cards in the wrong order"),
    Mutant("G3", _EFOLD, "        if entry.result is not None:",
           "        if entry.result is not None and entry.result.cards[0] != entry.result.cards[1]:",
           "a result not published (a round whose first two cards are equal)"),
    Mutant("G4", _EDEC, "            return Decided(also=[give_up_on(SERVICE, event, error, now)])",
           "            return Decided()",
           "an unreadable event not dead-lettered (decided by no one)"),
    Mutant("G5", _EVAL, '{"last_seq": event.seq, "last_hash": event.hash, "round": rnd}',
           '{"last_seq": event.seq - 1, "last_hash": event.hash, "round": rnd}',
           "a table's chain checkpoint one behind: the next event seen as out of order"),
    Mutant("G6", _EFOLD, "        kv[state_key(entry.state.table_id)] = entry.state",
           "        pass",
           "a table's state not remembered by the fold: every event seen afresh"),
    # ---- dealer-event (a stage: its workers decide the dealer model's inputs on the kernel)
    Mutant("D1", _TABLE, "    if cards_needed(shoe.rules, cards) == 0:",
           "    if cards_needed(shoe.rules, cards) <= 1:",
           "a wrong result decided: RoundCompleted one card early"),
    Mutant("D2", _TABLE, '    if status == "completed":',
           "    if False:",
           "a status guard dropped: a completed round can be voided"),
    Mutant("D3", _TABLE, "    if inp.input_id in state.applied_inputs:",
           "    if False:",
           "an idempotency key not remembered: an input applied twice"),
    Mutant("D4", _TABLE, "    if em.now >= rnd.betting_closes_at:",
           "    if True:",
           "betting closed early by a dealer, without a supervisor"),
    Mutant("D5", _TABLE, "    if shoe.remaining.get(card, 0) <= 0:",
           "    if shoe.remaining.get(card, 0) < 0:",
           "a card not in the shoe accepted (a card dealt twice)"),
    Mutant("D6", _DDEC, "        if not backed:",
           "        if False:",
           "an answer the log does not back: a lost race's decision told to the device"),
    Mutant("D7", _DFOLD, "        if entry.rejection is not None:",
           "        if False:",
           "a refusal not published: dealer.rejections misses what the log refused"),
    Mutant("D8", _DDEC, 'e.model_copy(update={"auth": event_auth(key, e.hash)})',
           'e.model_copy(update={"auth": event_auth(key, e.prev_hash)})',
           "events authenticated over the wrong hash: the readers refuse the table's chain"),
    Mutant("D9", _DDEC, '"reason_code": refusal.code,',
           '"reason_code": "refused",',
           "a wrong answer: the device told a refusal's code the log does not hold"),
    Mutant("D10", _DSTATE, "        remember_input(state.applied_inputs, event.input_id, None)",
           "        pass",
           "an idempotency key not remembered by the fold: an input resent is applied twice"),
    Mutant("D11", _DSTATE,
           "    _shoe(state).take(str(e.card))\n    _round(state).cards.append(str(e.card))",
           "    pass\n    _round(state).cards.append(str(e.card))",
           "a dealt card not taken out of the shoe: a card scanned once too often accepted"),
    Mutant("D12", _DFOLD,
           "                remember_input(state.refused_inputs, refused.input_id, refused.reason_code)",
           "                pass",
           "a refused input not remembered: its resend decided again instead of a duplicate"),
    Mutant("D13", _DDEC, "            if partition is not None and partition in partitions:",
           "            if partition is not None and partition not in partitions:",
           "a moved partition's waiters left waiting (those of the partitions kept answered)"),
)

# id -> why the mutant, surviving, can change neither money nor an answer (at most three)
JUSTIFIED: dict[str, str] = {
    "K12": "a snapshot's head offset holds another entry only if its own log lost or "
           "rewrote acknowledged records, or was deleted and created again while its "
           "snapshots were kept; under the platform's settings neither happens (own logs "
           "keep every record, acks=all with min.insync.replicas=2 and no unclean leader "
           "election keep what was acknowledged through a lost broker, and nothing in "
           "croupier deletes a topic or records), and a zombie's snapshot is always of the "
           "log's chain: within them the check never fires, so removing it changes no money "
           "and no answer. It stays as the guard against a log recreated by hand",
}


# ------------------------------------------------------------------ the table's checks

def source_of(mutant: Mutant, root: Path = ROOT) -> str:
    return (root / mutant.file).read_text()


def located(mutant: Mutant, text: str) -> tuple[int, int]:
    """(how often its text is in the file, the line of the first)."""
    count = text.count(mutant.original)
    at = text.find(mutant.original)
    return count, (text.count("\n", 0, at) + 1 if at >= 0 else 0)


def planted(mutant: Mutant, text: str) -> str:
    return text.replace(mutant.original, mutant.replacement, 1)


def apply_error(mutant: Mutant, root: Path = ROOT) -> str | None:
    """Why the mutant cannot be planted in the tree at `root` (None: it can)."""
    path = root / mutant.file
    if not path.is_file():
        return f"{mutant.id}: {mutant.file} does not exist"
    text = path.read_text()
    count, _ = located(mutant, text)
    if count != 1:
        return (f"{mutant.id}: DOES NOT APPLY: {mutant.original!r} is in {mutant.file} "
                f"{count} times, not once (the code moved: update the mutant)")
    try:
        compile(planted(mutant, text), str(path), "exec")
    except SyntaxError as error:
        return f"{mutant.id}: the planted {mutant.file} does not compile ({error})"
    return None


def table_problems(mutants: tuple[Mutant, ...] = MUTANTS, root: Path = ROOT) -> list[str]:
    """Everything wrong with the mutant table against the tree at `root`."""
    out: list[str] = []
    ids = Counter(m.id for m in mutants)
    out += [f"{i}: id used {n} times" for i, n in ids.items() if n > 1]
    out += [f"{m.id}: replacement equals the original" for m in mutants
            if m.original == m.replacement]
    out += [f"{m.id}: not in services/" for m in mutants if not m.file.startswith("services/")]
    out += [f"{m.id}: no description" for m in mutants if not m.bug.strip()]
    out += [e for m in mutants if (e := apply_error(m, root)) is not None]
    if len(mutants) < MIN_MUTANTS:
        out.append(f"{len(mutants)} mutants, at least {MIN_MUTANTS} wanted")
    groups = Counter(m.group for m in mutants)
    out += [f"{g}: {groups[g]} mutants, at least {MIN_PER_GROUP} wanted" for g in GROUPS
            if groups[g] < MIN_PER_GROUP]
    if len(JUSTIFIED) > MAX_JUSTIFIED:
        out.append(f"{len(JUSTIFIED)} justified, at most {MAX_JUSTIFIED}")
    out += [f"JUSTIFIED names {i}, not a mutant" for i in JUSTIFIED if i not in ids]
    out += [f"{i}: a dealer-event mutant is not justified away" for i in JUSTIFIED
            if i in ids and next(m for m in mutants if m.id == i).group == "dealer-event"]
    return out


# ------------------------------------------------------------------ scratch trees

def _ignore(directory: str, names: list[str]) -> set[str]:
    return {n for n in names if n in SKIP or n.endswith(".egg-info")}


def snapshot(dest: Path, rev: str | None = None, root: Path = ROOT) -> None:
    """The tree to plant in: the working tree (without SKIP), or `rev` from git; its
    modules compiled once, so each scratch copy compiles only its mutated file."""
    if rev is None:
        shutil.copytree(root, dest, symlinks=True, ignore=_ignore)
    else:
        dest.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(root), "archive", rev],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", "services",
                    "shared", "tests"], cwd=dest, check=False, capture_output=True)


def scratch(base: Path, dest: Path, mutant: Mutant | None) -> None:
    """A copy of `base` with `mutant` planted (its file's stale bytecode removed)."""
    shutil.copytree(base, dest, symlinks=True)
    if mutant is None:
        return
    path = dest / mutant.file
    path.write_text(planted(mutant, path.read_text()))
    for pyc in (path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"):
        pyc.unlink()


def env_for(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CROUPIER_CRASHSIM_")}
    env.pop("PYTHONSAFEPATH", None)
    env.update(PYTHONPATH=str(tree), PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
    return env


def module_of(file: str) -> str:
    return file.removesuffix(".py").replace("/", ".")


def probe(tree: Path, mutants: tuple[Mutant, ...]) -> str | None:
    """Why a run in `tree` would not import `tree`'s copy of the mutated modules (None: it
    would)."""
    modules = sorted({module_of(m.file) for m in mutants} | {"tests.crashsim"})
    code = ("import importlib, sys\n"
            f"for m in {modules!r}:\n"
            "    print(m, importlib.import_module(m).__file__)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tree, env=env_for(tree),
                          capture_output=True, text=True)
    if done.returncode != 0:
        return f"the import probe failed:\n{done.stderr}"
    for line in done.stdout.splitlines():
        name, _, file = line.partition(" ")
        if not Path(file).resolve().is_relative_to(tree.resolve()) \
                and not Path(file).is_relative_to(tree):
            return f"{name} is imported from {file}, not from the scratch tree {tree}"
    return None


# ------------------------------------------------------------------ one run

@dataclass
class Run:
    outcome: str  # killed, survived, error
    note: str = ""  # killed: the first violated invariant; error: why
    seconds: float = 0.0


_VIOLATION_HEADS = ("violated:", "problems:")
SUMMARY = re.compile(r"^simulate: (\d+) schedules from seed (\d+)(?: over .*)?: (\d+) broken")
# a run that raised one of these ran a mutant that names what the code no longer has (a
# replacement left behind by a rename): an error of the mutant, never a kill
BROKEN = re.compile(r"the run raised (AttributeError|NameError)\b")


def runs_as_code(violation: str) -> bool:
    """The mutant ran as code: its schedule did not break on a name it no longer has."""
    return BROKEN.search(violation) is None


def first_violation(lines: list[str]) -> str | None:
    """The first violated invariant a reproducer names (the line after `violated:`), or a
    `BROKEN <invariant>` line."""
    for i, line in enumerate(lines):
        if line.strip() in _VIOLATION_HEADS:
            for after in lines[i + 1:]:
                if after.strip():
                    return after.strip()
        if line.startswith("BROKEN "):
            return line.removeprefix("BROKEN ").strip()
    return None


BASELINE_FILE = "mutants-baseline.json"  # in the snapshot: the unmutated tree's breaks


def schedule_runner() -> Callable[[int], Any]:
    """The simulator's `run(seed)`, as `python -m tests.crashsim` calls it (in a tree from
    before it, the wallet-only `ledger_sim.run`)."""
    try:
        from tests.crashsim.schedules import run
    except ImportError:
        from tests.crashsim.ledger_sim import run  # type: ignore[import-not-found,no-redef,unused-ignore]
    return cast(Callable[[int], Any], run)


def simulate_main(seed: int, schedules: int, baseline: Path | None, record: Path | None
                  ) -> int:
    """`python -m tests.crashsim`, told the unmutated tree's breaks: a schedule that breaks
    exactly as it did there (a known bug, e.g. issue 29's (c)) is no kill; the first that
    breaks otherwise prints its reproducer and ends the run, exit 1. `record`: run every
    schedule and write the breaks down (the baseline), exit 0."""
    run = schedule_runner()
    known: dict[str, list[str]] = json.loads(baseline.read_text()) if baseline else {}
    breaks: dict[str, list[str]] = {}
    for s in range(seed, seed + schedules):
        result = run(s)
        if result.ok:
            continue
        breaks[str(s)] = list(result.problems)
        if record is None and known.get(str(s)) != list(result.problems):
            print(result.reproducer, flush=True)
            print(f"simulate: broke at seed {s} of {schedules} schedules from seed {seed}")
            return 1
    if record is not None:
        record.write_text(json.dumps(breaks, indent=1))
    print(f"simulate: {schedules} schedules from seed {seed}: {len(breaks)} broken"
          f"{' as without the mutant' if baseline else ''}")
    return 0


def simulate(tree: Path, seed: int, schedules: int, timeout: float, stop_early: bool = True,
             record: bool = False) -> Run:
    """The simulator's schedules in `tree` (`simulate_main`); stopped once a reproducer
    names its first violation (the run exits 1 whatever follows)."""
    began = time.monotonic()
    told = ["--record", BASELINE_FILE] if record else ["--baseline", BASELINE_FILE]
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.crashsim.mutants", "--simulate", "--seed", str(seed),
         "--schedules", str(schedules), *told], cwd=tree,
        env=env_for(tree), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str | None] = queue.Queue()
    errors: list[str] = []

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    def pump_errors() -> None:
        assert process.stderr is not None
        errors.extend(line.rstrip("\n") for line in process.stderr)

    readers = [threading.Thread(target=pump, daemon=True),
               threading.Thread(target=pump_errors, daemon=True)]
    for reader in readers:
        reader.start()
    seen: list[str] = []
    quiet_since: float | None = None
    stopped = timed_out = False
    while True:
        try:
            line = lines.get(timeout=0.2)
        except queue.Empty:
            now = time.monotonic()
            if now - began > timeout:
                timed_out = True
                break
            if stop_early and quiet_since is not None and now - quiet_since > 1.0:
                stopped = True  # the reproducer is printed: it breaks
                break
            continue
        if line is None:
            break
        seen.append(line)
        if first_violation(seen) is not None:
            quiet_since = time.monotonic()
    if stopped or timed_out:
        process.kill()
    process.wait()
    for reader in readers:
        reader.join(timeout=5)
    seconds = time.monotonic() - began
    violation = first_violation(seen)
    if timed_out:
        return Run("killed", f"timed out after {timeout:.0f} s (the run never ended)",
                   seconds)
    if violation is not None and not runs_as_code(violation):  # not caught by the checks
        return Run("error", f"the mutant does not run as code: {violation}", seconds)
    if stopped:
        return Run("killed", violation or "", seconds)
    summary = next((m for line in seen if (m := SUMMARY.match(line))), None)
    if process.returncode == 0 and summary is not None:
        return Run("survived", summary.group(3), seconds)
    if process.returncode == 1 and violation is not None:
        return Run("killed", violation, seconds)
    if process.returncode == 1 and errors and errors[-1].strip():
        return Run("killed", f"raised: {errors[-1].strip()}", seconds)
    tail = "\n".join((seen + errors)[-15:])
    return Run("error", f"the simulator exited {process.returncode}:\n{tail}", seconds)


# ------------------------------------------------------------------ the run

def _int_env(name: str, default: int) -> int:
    return int(os.environ.get(name) or default)


def chosen(only: str | None) -> tuple[Mutant, ...]:
    if not only:
        return MUTANTS
    wanted = [i.strip() for i in only.split(",") if i.strip()]
    known = {m.id: m for m in MUTANTS}
    unknown = [i for i in wanted if i not in known]
    if unknown:
        raise SystemExit(f"mutants: unknown id(s) {', '.join(unknown)}")
    return tuple(known[i] for i in wanted)


def list_table(mutants: tuple[Mutant, ...]) -> int:
    failing = 0
    print(f"{'id':<5} {'service':<16} {'file:line':<46} bug")
    for m in mutants:
        count, line = located(m, source_of(m))
        where = f"{m.file.removeprefix('services/')}:{line}" if count == 1 else \
            f"{m.file.removeprefix('services/')} (found {count}x)"
        failing += count != 1
        print(f"{m.id:<5} {m.group:<16} {where:<46} {m.bug}"
              f"{'  [justified]' if m.id in JUSTIFIED else ''}")
    problems = table_problems()
    for problem in problems:
        print(f"TABLE: {problem}")
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.crashsim.mutants",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="ID[,ID]: run these mutants only")
    parser.add_argument("--list", action="store_true", help="print the table, run nothing")
    parser.add_argument("--rev", help="plant in this git revision instead of the working tree")
    parser.add_argument("--keep", action="store_true", help="keep the scratch trees")
    parser.add_argument("--simulate", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--baseline", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--record", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--schedules", type=int, default=_int_env(
        "CROUPIER_MUTANTS_SCHEDULES", DEFAULT_SCHEDULES))
    parser.add_argument("--seed", type=int, default=_int_env("CROUPIER_MUTANTS_SEED",
                                                             DEFAULT_SEED))
    parser.add_argument("--jobs", type=int, default=_int_env("CROUPIER_MUTANTS_JOBS",
                                                             DEFAULT_JOBS))
    args = parser.parse_args(argv)
    if args.simulate:
        return simulate_main(args.seed, args.schedules, args.baseline, args.record)
    mutants = chosen(args.only)
    if args.list:
        return list_table(mutants)
    began = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="croupier-mutants-"))
    try:
        return _run(mutants, args, work, began)
    finally:
        if args.keep:
            print(f"scratch trees kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def _run(mutants: tuple[Mutant, ...], args: argparse.Namespace, work: Path,
         began: float) -> int:
    base = work / "base"
    snapshot(base, args.rev)
    errors = {m.id: e for m in mutants if (e := apply_error(m, base)) is not None}
    lines = {m.id: located(m, source_of(m, base))[1] for m in mutants}
    why = probe(base, mutants)
    if why is not None:
        print(f"mutants: cannot run: {why}")
        return 1
    print(f"mutants: {len(mutants)} mutant(s), {args.schedules} schedules each from seed "
          f"{args.seed}, {args.jobs} at a time, in {work}", flush=True)
    baseline = simulate(base, args.seed, args.schedules, timeout=3600, stop_early=False,
                        record=True)
    if baseline.outcome != "survived":
        print(f"mutants: the simulator fails on the unmutated tree ({baseline.outcome}: "
              f"{baseline.note}); no mutant can be judged")
        return 1
    known = json.loads((base / BASELINE_FILE).read_text())
    print(f"baseline (no mutant): {len(known)} of {args.schedules} schedules break in "
          f"{baseline.seconds:.1f} s", flush=True)
    kinds: dict[str, list[str]] = {}
    for seed, problems in known.items():
        kinds.setdefault(re.sub(r"\d+", "N", problems[0]), []).append(seed)
    for kind, seeds in sorted(kinds.items(), key=lambda k: -len(k[1])):
        print(f"  BASELINE BREAKS {len(seeds)} schedule(s) (first problem: {kind}): seeds "
              f"{', '.join(seeds[:8])}{', ...' if len(seeds) > 8 else ''}")
    if known:
        print("  a mutant is killed only by a schedule that breaks otherwise than these")
    timeout = max(120.0, 5 * baseline.seconds)
    runs: dict[str, Run] = {i: Run("error", e) for i, e in errors.items()}

    def one(mutant: Mutant) -> None:
        tree = work / mutant.id
        scratch(base, tree, mutant)
        try:
            runs[mutant.id] = run = simulate(tree, args.seed, args.schedules, timeout)
        finally:
            if not args.keep:
                shutil.rmtree(tree, ignore_errors=True)
        print(f"  {mutant.id}: {run.outcome} in {run.seconds:.1f} s", flush=True)

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        list(pool.map(one, [m for m in mutants if m.id not in errors]))
    return report(mutants, runs, lines, time.monotonic() - began)


def report(mutants: tuple[Mutant, ...], runs: dict[str, Run], lines: dict[str, int],
           seconds: float) -> int:
    print()
    print(f"{'id':<5} {'file:line':<42} {'bug':<72} {'outcome':<10} first violated invariant")
    counts: Counter[str] = Counter()
    for m in mutants:
        run = runs[m.id]
        outcome = "justified" if run.outcome == "survived" and m.id in JUSTIFIED \
            else run.outcome
        counts[outcome] += 1
        note = run.note.splitlines()[0] if run.note and run.outcome == "killed" else ""
        where = f"{m.file.removeprefix('services/')}:{lines.get(m.id, 0)}"
        print(f"{m.id:<5} {where:<42} {m.bug[:72]:<72} {outcome:<10} {note[:100]}")
    for m in mutants:
        run = runs[m.id]
        if run.outcome == "error":
            print(f"\nERROR {m.id}: {run.note}")
        elif run.outcome == "survived" and m.id in JUSTIFIED:
            print(f"justified {m.id}: {JUSTIFIED[m.id]}")
    for i in JUSTIFIED:
        if i in runs and runs[i].outcome == "killed":
            print(f"note: {i} is justified but killed: drop it from JUSTIFIED")
    print(f"\nrun time {seconds:.0f} s")
    planted_count = len(mutants) - counts["error"]
    if counts["error"]:
        print(f"mutants: {counts['error']} mutant(s) could not be run (see ERROR above)")
    print(f"mutants: {planted_count} planted, {counts['killed']} killed, "
          f"{counts['justified']} justified, {counts['survived']} survived")
    return 1 if counts["survived"] or counts["error"] else 0


if __name__ == "__main__":
    sys.exit(main())
