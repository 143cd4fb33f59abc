"""`croupier rebuild`'s fold against a real broker of its own: a generated floor (several
tables, hundreds of players) rebuilds with no difference; a live balance that disagrees is
named."""

from __future__ import annotations

import gc
from datetime import UTC, datetime, timedelta

import pytest

from services.operator.rebuild import cyclic_gc_paused, rebuild
from shared.topics import ROUTED_TOPICS
from tests.floor_builder import Floor
from tests.integration.replay_support import apply_topics

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def floor_log(platform_kafka):
    apply_topics(platform_kafka)
    floor = Floor(seed=31)
    floor.fill(3_000, ["RB1", "RB2", "RB3"], [f"rb-p{i}" for i in range(120)],
               datetime.now(UTC) - timedelta(hours=2), bets_per_round=30)
    rounds = floor.counts["rounds"]
    produced = sum(topic not in ROUTED_TOPICS for topic, *_ in floor.records)  # rebuild reads
    floor.produce(platform_kafka)
    return floor, rounds, produced


def test_a_floor_rebuilds_with_no_difference(platform_kafka, floor_log):
    floor, rounds, produced = floor_log
    totals: dict[str, int] = {}
    report = rebuild(platform_kafka, lambda players: {p: floor.balances[p] for p in players},
                     lambda topic, done, total: totals.__setitem__(topic, total))
    assert report.clean, report.differences[:5]
    assert report.tables == 3 and report.rounds_recomputed == rounds
    assert report.audit.balances == floor.balances and report.audit.invariants_ok
    assert report.audit.bets == floor.counts["bets"] and report.audit.pending == 0
    assert sum(totals.values()) == produced  # every record read once, each topic once


def test_a_live_balance_that_disagrees_is_named(platform_kafka, floor_log):
    floor, _, _ = floor_log
    live = dict(floor.balances, **{"rb-p7": floor.balances["rb-p7"] + 100})
    report = rebuild(platform_kafka, lambda players: {p: live[p] for p in players})
    assert report.differences == [f"player rb-p7: rebuilt balance {floor.balances['rb-p7']}, "
                                  f"live wallet {live['rb-p7']}"]


def test_the_cyclic_collector_is_restored_after_the_fold():
    assert gc.isenabled()
    with pytest.raises(RuntimeError), cyclic_gc_paused():
        assert not gc.isenabled()
        raise RuntimeError("fold failed")
    assert gc.isenabled()
