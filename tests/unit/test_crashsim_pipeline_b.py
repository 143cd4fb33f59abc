"""Every service on the kernel under the crash simulator, second half of the schedules
(see test_crashsim_pipeline_a.py); that the simulator can fail; and the bug it found."""

from __future__ import annotations

import os

import pytest

from croupier.services.infra import own_log
from tests.crashsim import schedules, suite

SCHEDULES = int(os.environ.get("CROUPIER_CRASHSIM_SCHEDULES", schedules.DEFAULT_SCHEDULES))


def test_the_second_half_of_the_schedules_keeps_every_invariant():
    half = SCHEDULES // 2
    suite.assert_range(schedules.DEFAULT_SEED + half, SCHEDULES - half)


def test_the_simulator_finds_a_writer_that_trusts_its_acks(monkeypatch):
    """The simulator can fail: a writer that takes its acknowledged entries as valid
    without checking where they landed (a zombie's void entries then count in its state,
    its answers and its outputs) breaks the invariants, and the simulator says so."""
    def trusting_commit(self, landed):
        for (offset, appended_at), entry in zip(landed, self.entries, strict=True):
            own_log.fold_entry(self.state, offset, entry, self.fold, appended_at)
            self.state.kv.update(self.scratch.changes)  # what it decided, valid or not
        return [(at.offset, entry) for at, entry in zip(landed, self.entries, strict=True)]

    monkeypatch.setattr(own_log.Batch, "landed_as_chained", lambda self, landed: True)
    monkeypatch.setattr(own_log.Batch, "commit", trusting_commit)
    broken = next((r for r in map(schedules.run, range(1, 500)) if not r.ok), None)
    assert broken is not None, "the simulator found nothing wrong with a trusting writer"
    assert broken.reproducer.startswith(f"seed {broken.seed} ")
    assert "violated:" in broken.reproducer


@pytest.mark.xfail(strict=True, reason="issue 29 bug (c), found by this simulator: the dead "
                   "letter of an unreadable record is lost when the batch's entries landed "
                   "but its publish did not (kernel.apply_batch: Decided.also travels "
                   "beside the entries, not in the outbox); not fixed yet")
@pytest.mark.parametrize("seed", [163, 219, 386, 497])
def test_every_unreadable_record_is_dead_lettered_whatever_the_crash(seed):
    """Seeds 163, 219 (game-evaluation), 386 (the wallet) and 497 (bet-settlement, killed
    after the send): a garbage record beside a record that writes an entry, in a batch
    killed after its send or whose other partition's send failed for a moment, is never
    dead-lettered."""
    result = schedules.run(seed)
    assert result.ok, result.reproducer
