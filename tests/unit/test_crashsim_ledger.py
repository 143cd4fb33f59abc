"""The wallet on its own log under the crash simulator (`tests/crashsim/ledger_sim.py`):
10,000 seeded schedules of clients, bet-settlement and workers, with kills at every cut
point of a batch, zombies racing the new owner, partition moves, redeliveries and commits
past unprocessed offsets; after each, the invariants hold from the topics alone.

CROUPIER_CRASHSIM_SCHEDULES sets how many (a failing seed prints its reproducer)."""

from __future__ import annotations

import logging
import os
from collections import Counter

import pytest

from croupier.services.infra import own_log
from tests.crashsim import ledger_sim

SCHEDULES = int(os.environ.get("CROUPIER_CRASHSIM_SCHEDULES", "10000"))


@pytest.fixture(autouse=True)
def quiet():
    """The kernel logs every repair it makes; thousands of schedules make thousands."""
    logging.disable(logging.CRITICAL)
    yield
    logging.disable(logging.NOTSET)


def faults(result: ledger_sim.Result) -> Counter[str]:
    seen: Counter[str] = Counter()
    for step in result.steps:
        for kind in ("killed (mid-send)", "killed (before-ack)", "killed (mid-publish)",
                     "killed (before-answer)", "is a zombie", "on its cache", "redelivery",
                     "from the log"):
            if kind in step:
                seen[kind] += 1
    return seen


def test_every_schedule_keeps_every_invariant():
    failures = []
    seen: Counter[str] = Counter()
    for seed in range(SCHEDULES):
        result = ledger_sim.run(seed)
        seen += faults(result)
        if not result.ok:
            failures.append(result)
    print(f"{SCHEDULES} schedules; faults exercised: {dict(seen)}")
    assert not failures, (f"{len(failures)} of {SCHEDULES} schedules broke an invariant; "
                          f"the first:\n{failures[0].reproducer}")
    if SCHEDULES >= 1000:  # the schedules do reach every fault they are meant to
        assert all(seen[kind] > 0 for kind in (
            "killed (mid-send)", "killed (before-ack)", "killed (mid-publish)",
            "killed (before-answer)", "is a zombie", "on its cache", "redelivery",
            "from the log")), seen


def test_the_simulator_finds_a_writer_that_trusts_its_acks(monkeypatch):
    """The simulator can fail: a writer that takes its acknowledged entries as valid
    without checking where they landed (a zombie's void entries then count in its state,
    its answers and its outputs) breaks the invariants, and the simulator says so."""
    def trusting_commit(self, landed):
        for (offset, appended_at), entry in zip(landed, self.entries, strict=True):
            own_log.fold_entry(self.state, offset, entry, self.fold, appended_at)
            self.state.kv.update(self.scratch.changes)  # what it decided, valid or not
        return [(at.offset, entry) for at, entry in zip(landed, self.entries, strict=True)]

    monkeypatch.setattr(own_log.Batch, "landed_as_chained", lambda self, offsets: True)
    monkeypatch.setattr(own_log.Batch, "commit", trusting_commit)
    broken = next((r for r in map(ledger_sim.run, range(3000)) if not r.ok), None)
    assert broken is not None, "the simulator found nothing wrong with a trusting writer"
    assert broken.reproducer.startswith(f"seed {broken.seed}:")
    assert "problems:" in broken.reproducer
