"""Every service on the kernel under the crash simulator, second half of the schedules
(see test_crashsim_pipeline_a.py); that the simulator can fail; and the bug it found."""

from __future__ import annotations

import os

import pytest

from services.infra import own_log
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


@pytest.mark.parametrize("seed", [5, 11, 18, 22])
def test_every_unreadable_record_is_dead_lettered_whatever_the_crash(seed):
    """Bug (c), found by this simulator: a garbage record beside a record that writes an
    entry, in a batch killed after its send or whose other partition's send failed for a
    moment, was never dead-lettered (its dead letter travelled beside the entries, and a
    later record's checkpoint passed it). The kernel now publishes a batch's dead letters,
    acknowledged, before its entries. The seeds that broke before that (97, 276, 333, 497)
    are other schedules since dealer-event became a stage; these are schedules of today's
    stream with garbage records and batches killed after their send or failed for a
    moment."""
    result = schedules.run(seed)
    assert result.ok, result.reproducer
