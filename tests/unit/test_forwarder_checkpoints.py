"""The endings forwarder's own checkpoints (services/wallet/forwarded.py): one per input
partition, past the batch's highest offset; the highest one read wins (a late, older one
from a worker that lost the partition forwards more again, never less); the group's commit
only where they name nothing."""

import pytest
from faust.types import TP
from pydantic import ValidationError

from croupier.services.wallet.forwarded import (
    checkpoint_records,
    fold_checkpoints,
    resume_points,
)

SETTLED, DECIDED = TP("bets.settled", 0), TP("bets.decisions", 2)


def test_a_batch_writes_one_checkpoint_per_input_partition_past_its_highest_offset():
    records = checkpoint_records("i-wallet-forwarded", [
        ("bets.settled", 0, 7), ("bets.decisions", 2, 3), ("bets.settled", 0, 5),
        ("bets.settled", 0, 9)])
    assert [(t, k) for t, k, _ in records] == [("i-wallet-forwarded", b"bets.decisions:2"),
                                               ("i-wallet-forwarded", b"bets.settled:0")]
    assert fold_checkpoints(v for _, _, v in records) == {DECIDED: 4, SETTLED: 10}


def test_the_highest_checkpoint_wins_and_the_commit_fills_in_only_what_they_do_not_name():
    older, newer = (checkpoint_records("t", [("bets.settled", 0, o)])[0][2] for o in (3, 11))
    own = fold_checkpoints([newer, older])  # a late writer's older checkpoint came after
    assert own == {SETTLED: 12}
    committed = {SETTLED: 40, DECIDED: 5}  # a commit past what was forwarded: not trusted
    assert resume_points(own, committed) == {SETTLED: 12, DECIDED: 5}
    assert resume_points({}, committed) == committed  # a first start


def test_a_record_that_is_not_a_checkpoint_is_refused_not_guessed():
    with pytest.raises(ValidationError):
        fold_checkpoints([b'{"topic": "bets.settled", "partition": 0}'])
