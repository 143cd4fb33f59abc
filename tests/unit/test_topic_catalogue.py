"""The topic catalogue as data: every architecture topic, sane configs, the 24 h floor."""

import pytest

from shared.topics import (
    DAY_MS,
    DEFAULT_RETENTION_MS,
    INDEXES,
    SNAPSHOT_TOPICS,
    SOURCE_OF_TRUTH,
    TOPIC_NAMES,
    RetentionTooShortError,
    topic_catalogue,
)

ARCHITECTURE_TOPICS = {
    "dealer.inputs", "table.events", "dealer.rejections", "round.results",
    "bets.placed", "bets.decisions", "bets.settled", "wallet.transactions",
    "dead.letters",  # issue 11: what a consumer could not apply, never dropped silently
    "wallet.ledger", "settlement.log", "evaluation.log",  # issue 17: own logs, their state
    "operator.actions",  # issue 19: each use of an operator override, a significant event
    "wallet.operator_calls",  # issue 20: each call to the operator's wallet and its answer
    "dealer.log",  # issue 29: dealer-event's own log, its state on the kernel
    "table.corrections",  # the index of corrections a replay reads (docs/decisions/replay.md)
}


def test_catalogue_names_every_topic_of_the_architecture():
    assert set(TOPIC_NAMES) == ARCHITECTURE_TOPICS
    assert {t.name for t in topic_catalogue()} == ARCHITECTURE_TOPICS | {
        "wallet.ledger.snapshots",  # a cache of wallet.ledger: neither events nor archived
        "wallet.endings"}  # bet-settlement's endings keyed by player: copies, not archived
    assert SNAPSHOT_TOPICS == ("wallet.ledger.snapshots",)


def test_snapshot_topics_are_compacted_and_not_archived():
    from services.archive.archiver import Archiver

    archived = Archiver.__init__.__defaults__[0]  # type: ignore[index]
    for spec in topic_catalogue():
        if spec.name in SNAPSHOT_TOPICS:
            assert spec.configs["cleanup.policy"] == "compact"
            assert "retention.ms" not in spec.configs
            assert spec.name not in archived and spec.name not in SOURCE_OF_TRUTH


def test_defaults_keep_a_week_and_delete_old_segments():
    for spec in topic_catalogue():
        if spec.name in SNAPSHOT_TOPICS:  # compacted (the test above)
            continue
        if spec.name in SOURCE_OF_TRUTH:  # a service's own log: its state, kept forever
            assert spec.configs["retention.ms"] == spec.configs["retention.bytes"] == "-1"
            continue
        if spec.name in INDEXES:  # complete only if nothing of it is deleted: kept forever
            assert spec.configs["retention.ms"] == spec.configs["retention.bytes"] == "-1"
            assert spec.configs["cleanup.policy"] == "delete"
            continue
        assert spec.configs["retention.ms"] == str(DEFAULT_RETENTION_MS) == str(7 * DAY_MS)
        assert spec.configs["cleanup.policy"] == "delete"
        assert int(spec.configs["segment.ms"]) <= DEFAULT_RETENTION_MS


def test_table_keyed_topics_are_co_partitioned():
    counts = {t.partitions for t in topic_catalogue(partitions=6) if t.key == "table id"}
    assert counts == {6}
    assert next(t for t in topic_catalogue() if t.name == "wallet.transactions").key == "player id"


@pytest.mark.parametrize("retention", [0, 1, DAY_MS - 1])
def test_retention_under_a_day_is_refused_with_the_reason(retention):
    with pytest.raises(RetentionTooShortError, match="below 24 hours") as err:
        topic_catalogue(retention_ms=retention)
    assert str(retention) in str(err.value)


def test_exactly_a_day_is_accepted_and_segments_never_outlive_retention():
    (spec, *_) = topic_catalogue(retention_ms=DAY_MS)
    assert spec.configs["retention.ms"] == str(DAY_MS)
    assert int(spec.configs["segment.ms"]) <= DAY_MS
