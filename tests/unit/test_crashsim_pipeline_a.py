"""Every service on the kernel under the crash simulator (tests/crashsim/pipeline.py), first
half of the schedules (the second: test_crashsim_pipeline_b.py; pytest-xdist runs the two
modules in two processes). CROUPIER_CRASHSIM_SCHEDULES sets how many in all (10,000);
a failing seed prints its reproducer (`python -m tests.crashsim --seed S --schedules 1`)."""

from __future__ import annotations

import os

import pytest

from tests.crashsim import schedules, suite

SCHEDULES = int(os.environ.get("CROUPIER_CRASHSIM_SCHEDULES", schedules.DEFAULT_SCHEDULES))


def test_the_first_half_of_the_schedules_keeps_every_invariant():
    suite.assert_range(schedules.DEFAULT_SEED, SCHEDULES // 2)


# Issue 29's two known bugs, caught by the simulator on the code before their fixes
# (233305b) and passing since (4961f6f, f6fcf3a): kept as reproducers. Their seeds were
# 1132 and 2357, then 53 and 70, until dealer-event became a stage (its inputs and
# decisions are in every schedule's stream now): these are seeds of today's stream with the
# same situation (a clock-ahead wallet worker that wrote entries, deposits resent in the
# drain; a settled round annulled, and its endings republished).
@pytest.mark.parametrize("seed", [7, 157])
def test_a_clock_ahead_of_the_window_applies_no_resent_deposit_twice(seed):
    """Bug (a): a wallet worker whose clock runs 30 h ahead writes an entry; before
    f6fcf3a the fold's clock jumped with it, every idempotency key expired, and the
    drain's resent deposits were applied (and answered 201) a second time."""
    result = schedules.run(seed)
    assert result.ahead, "the reproducer lost its clock-ahead worker"
    assert result.ok, result.reproducer


@pytest.mark.parametrize("seed", [254, 360])
def test_a_settlement_seen_again_after_its_annulment_is_no_breach(seed):
    """Bug (b): a round settled then annulled (reversal, refund: the bet voided), and its
    settlement published again on wallet.endings (an outbox republished); before 4961f6f
    the wallet raised bet_ended_twice, which fails a schedule."""
    result = schedules.run(seed)
    assert result.ok, result.reproducer
