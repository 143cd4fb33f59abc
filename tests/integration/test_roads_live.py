"""The replay's roads against the real broker: the round's shoe is found back in the log
(further back than the round's own window) and read from its start through the round."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from kafka import KafkaProducer

from services.infra.kafka_security import ADMIN, kafka_python_options
from services.operator.replay_service import ReplayRequest, run_replay
from shared.topics import TABLE_EVENTS_TOPIC
from tests.integration.replay_support import apply_topics
from tests.shoe_builder import BANKER, PAIRS, PLAYER, TIE, Table

pytestmark = pytest.mark.kafka


def test_a_replay_draws_its_shoe_from_the_shoe_start_through_the_round(platform_kafka):
    apply_topics(platform_kafka)
    # events a minute apart: the shoe started 11 minutes before the round replayed, past
    # the first 2-minute look back; a round after it is not part of the roads
    table = Table(f"roads-{uuid.uuid4().hex[:8]}", t0=datetime.now(UTC) - timedelta(hours=1),
                  spacing=timedelta(minutes=1))
    table.shoe(f"{table.table_id}-s1")
    for cards in (TIE, BANKER, BANKER, PAIRS, PLAYER):
        replayed = table.play(cards)
    table.play(PLAYER)
    producer = KafkaProducer(bootstrap_servers=platform_kafka, **kafka_python_options(ADMIN))
    for event in table.events:
        producer.send(TABLE_EVENTS_TOPIC, key=table.table_id.encode(),
                      value=event.model_dump_json().encode(),
                      timestamp_ms=int(event.occurred_at.timestamp() * 1000))
    producer.flush()
    producer.close()
    opened = table.events[-4].occurred_at  # the replayed round's opening
    report, notes, _ = run_replay(platform_kafka,
                                  ReplayRequest(table.table_id, replayed, opened))
    roads = report.roads
    assert roads is not None and roads.complete and roads.shoe_id == f"{table.table_id}-s1"
    assert [c.winner for c in roads.roads.bead_plate.cells] == [
        "tie", "banker", "banker", "banker", "player"]
    assert [(c.col, c.row, c.ties) for c in roads.roads.big_road.cells] == [
        (0, 0, 1), (0, 1, 0), (0, 2, 0), (1, 0, 0)]
    assert not [n for n in notes if n.startswith("roads:")]
