"""Issue 11 finding 1: /health said 200 while dealer-event retried one record forever.
A consumer with records waiting and no batch finished for `stall_seconds` is unhealthy;
an idle one is not."""

from __future__ import annotations

from kafka import TopicPartition

from services.infra.observability import Progress, lag_by_topic


def test_idle_is_healthy_however_long():
    progress = Progress()
    progress.lag_measured(0)
    assert progress.stalled_for(progress.finished_at + 3600) == 0.0


def test_waiting_records_and_no_finished_batch_is_a_stall():
    progress = Progress()
    progress.lag_measured(5)
    start = progress.behind_since
    assert progress.stalled_for(start + 1) < 2
    assert progress.stalled_for(start + 120) >= 119


def test_records_arriving_after_a_quiet_hour_are_not_a_stall_yet():
    progress = Progress()
    progress.finished_at -= 3600  # the last batch was an hour ago
    progress.lag_measured(3)
    assert progress.stalled_for() < 1


def test_a_finished_batch_resets_the_clock_and_no_lag_clears_it():
    progress = Progress()
    progress.lag_measured(7)
    progress.batch_finished()
    assert progress.stalled_for(progress.finished_at + 10) == 10
    progress.lag_measured(0)
    assert progress.stalled_for(progress.finished_at + 1000) == 0.0


def test_lag_counts_only_the_given_partitions():
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    assert lag_by_topic({a: 5}, {a: 9, b: 100}) == {"t": 4}
