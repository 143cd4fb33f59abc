"""The crash simulator's model of Kafka (tests/crashsim/kafka_model.py): acks, kills,
commits as Faust makes them, compacted topics, disks."""

from __future__ import annotations

import random

from tests.crashsim.kafka_model import Kafka, faust_new_offset


def kafka(partitions: int = 1) -> Kafka:
    k = Kafka(random.Random(1))
    k.create("t", partitions)
    k.create("c", partitions, compacted=True)
    return k


def test_a_record_is_read_only_once_acknowledged_and_acking_one_makes_the_ones_before_durable():
    k = kafka()
    assert k.append("t", 0, "a", 1, "w") == 0
    assert k.read("t", 0) == [] and k.end("t", 0) == 0
    k.append("t", 0, "b", 2, "v")
    k.ack("v")  # the broker committed offset 1, so offset 0 (w's) too
    assert k.read("t", 0) == [(0, "a", 1), (1, "b", 2)]
    assert k.kill("w") == [("t", 0, 0, 0)]  # nothing left to lose
    assert k.end("t", 0) == 2


def test_a_kill_loses_a_suffix_of_each_partitions_unacknowledged_records_and_keeps_the_acked():
    for seed in range(20):
        k = Kafka(random.Random(seed))
        k.create("t", 2)
        k.append("t", 0, "acked", 0, "w")
        k.ack("w")
        for i in range(5):
            k.append("t", 0, f"k{i}", i, "w")
            k.append("t", 1, f"k{i}", i, "w")
        report = k.kill("w")
        kept = {p: n for _, p, n, _ in report}
        assert [key for _, key, _ in k.read("t", 0)] == ["acked", *[f"k{i}" for i in range(kept[0])]]
        assert [key for _, key, _ in k.read("t", 1)] == [f"k{i}" for i in range(kept[1])]
        assert len(k.logs["t"][0]) == k.end("t", 0)  # what was not kept is gone


def test_ack_of_some_topics_leaves_the_others_unacknowledged_and_keep_crafts_a_kill():
    k = kafka()
    k.append("t", 0, "out", 1, "w")
    k.append("c", 0, "state", 1, "w")
    k.append("c", 0, "state2", 2, "w")
    k.ack("w", ["t"])
    assert k.end("t", 0) == 1 and k.end("c", 0) == 0
    assert k.kill("w", keep={"c": 1}) == [("c", 0, 1, 1)]
    assert k.latest("c", 0) == {"state": 1}


def test_another_writers_unacknowledged_record_moves_down_when_one_before_it_is_lost():
    k = kafka()
    k.append("t", 0, "lost", 0, "w")
    k.append("t", 0, "other", 1, "v")
    k.kill("w", keep={"t": 0})
    k.ack("v")
    assert k.read("t", 0) == [(0, "other", 1)]


def test_latest_folds_a_compacted_partition_from_an_offset_on():
    k = kafka()
    for key, value in [("a", 1), ("b", 2), ("a", 3), ("b", None)]:
        k.append("c", 0, key, value, "w")
    k.ack("w")
    assert k.latest("c", 0) == {"a": 3, "b": None}
    assert k.latest("c", 0, 2) == {"a": 3, "b": None}
    assert k.latest("c", 0, 4) == {}


def test_a_disk_survives_a_kill_and_not_a_wipe():
    k = kafka()
    k.disk("w")["x"] = 1
    k.kill("w")
    assert k.disk("w") == {"x": 1}
    k.wipe("w")
    assert k.disk("w") == {}


def test_faust_commits_past_an_unprocessed_offset_at_the_head_of_a_partition():
    """faust-streaming 0.15.3's `_new_offset` (issue #606): `min(acked) - committed > 1`."""
    assert faust_new_offset(5, [6, 7]) == 8  # offset 5 never acked: committed past
    assert faust_new_offset(5, [7, 8]) is None  # a gap of two is caught
    assert faust_new_offset(None, [3, 4]) == 5  # None or 0: no check at all
    assert faust_new_offset(0, [3, 4]) == 5
    acked = [9, 3, 4, 6]
    assert faust_new_offset(3, acked) == 5 and acked == [6, 9]  # the run is consumed
    k = kafka()
    k.commit("g", "t", 0, 5)
    assert k.commit_acked("g", "t", 0, [6, 7]) == 8 and k.committed_offset("g", "t", 0) == 8
