"""Replay and rebuild from the archive: a round whose records the log no longer holds (its
partitions' start moved past them, as retention does) replays to the same MATCH, the same
JSON byte for byte, from the archive; the rebuild's reader finds the same books."""

from __future__ import annotations

import pytest
from kafka import KafkaConsumer, TopicPartition

from services.infra import topic_admin
from services.infra.archive_store import open_store
from services.infra.kafka_security import OPERATOR, kafka_python_options
from services.operator.audit import audit
from services.operator.event_reader import read_books
from shared.topics import TOPIC_NAMES
from tests.integration.replay_support import (
    apply_topics,
    croupier,
    record_round_among_others,
    replay_args,
)

pytestmark = pytest.mark.kafka
NO_ARCHIVE = {"CROUPIER_ARCHIVE_URL": "file:///nonexistent/croupier-archive"}


def age_out_everything(bootstrap: str) -> None:
    """Move every partition's start offset to its end, as retention would once the records
    are older than `retention.ms`: the log then holds none of them (delete_records is the
    broker's own way to do what the retention check does, without waiting minutes for it)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                             **kafka_python_options(OPERATOR))
    tps = [TopicPartition(t, p) for t in TOPIC_NAMES for p in consumer.partitions_for_topic(t)]
    ends = consumer.end_offsets(tps)
    consumer.close()
    admin = topic_admin.admin_client(bootstrap)
    try:
        admin.delete_records({tp: end for tp, end in ends.items() if end > 0})
    finally:
        admin.close()


@pytest.fixture(scope="module")
def topics(platform_kafka):
    apply_topics(platform_kafka)
    return platform_kafka


def test_an_aged_out_round_replays_from_the_archive_byte_for_byte(topics, archive_url):
    target = record_round_among_others(topics)
    from_log = croupier(topics, *replay_args(target, "--format", "json"), env=NO_ARCHIVE)
    assert from_log.returncode == 0, from_log.stderr
    store = open_store(archive_url)
    books_from_log, _ = read_books(topics)

    archived = croupier(topics, "archive", "run", "--url", archive_url, "--once")
    assert archived.returncode == 0, archived.stderr[-2000:]
    age_out_everything(topics)

    gone = croupier(topics, *replay_args(target, "--format", "json"), env=NO_ARCHIVE)
    assert gone.returncode == 2 and "was not opened" in gone.stderr
    from_archive = croupier(topics, *replay_args(target, "--format", "json"),
                            env={"CROUPIER_ARCHIVE_URL": archive_url})
    assert from_archive.returncode == 0, from_archive.stderr
    assert from_archive.stdout == from_log.stdout
    assert '"verdict": "MATCH"' in from_archive.stdout

    # the rebuild's reader: the same books from the archive as from the log before
    books_from_archive, unparsed = read_books(topics, archive=store)
    assert not unparsed
    assert audit(books_from_archive).model_dump() == audit(books_from_log).model_dump()
    assert read_books(topics)[0].results == {}  # the log alone holds none of it now
