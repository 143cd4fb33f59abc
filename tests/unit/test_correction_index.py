"""A replay finds a round's corrections after the fact on `table.corrections`, the index
dealer-event writes them to, without reading the table's events after the round
(docs/decisions/replay.md, "Corrections by their index"); a round recorded before the index
(or an index that does not reach back to it) is scanned for on `table.events` as before.
The real `RoundReader` over an in-memory log (no broker)."""

from __future__ import annotations

from collections import namedtuple
from datetime import datetime, timedelta

import pytest
from kafka import TopicPartition
from kafka.structs import OffsetAndTimestamp

from services.operator import round_reader
from services.operator.replay import replay_round
from services.operator.round_reader import RoundReader, partition_for
from shared.events.table import RoundCompleted
from shared.topics import TABLE_CORRECTIONS_TOPIC, TABLE_EVENTS_TOPIC, TOPIC_NAMES
from tests.round_builder import RecordedRound

PARTITIONS = 4
FILLER = 3_000  # other tables' events on the round's partition after it
Rec = namedtuple("Rec", "topic partition offset timestamp key value")


class MemoryConsumer:
    """What RoundReader asks of kafka-python's KafkaConsumer, over records in memory."""

    def __init__(self, topics: set[str]) -> None:
        self.logs: dict[TopicPartition, list[Rec]] = {
            TopicPartition(t, p): [] for t in topics for p in range(PARTITIONS)}
        self.begins: dict[TopicPartition, int] = {}  # a partition's first offset (retention)
        self.position: dict[TopicPartition, int] = {}
        self.paused: set[TopicPartition] = set()

    def put(self, topic: str, key: str, value: bytes, at: datetime) -> None:
        tp = TopicPartition(topic, partition_for(key, PARTITIONS))
        log = self.logs[tp]
        log.append(Rec(topic, tp.partition, len(log), int(at.timestamp() * 1000), key.encode(),
                       value))

    def _kept(self, tp: TopicPartition) -> list[Rec]:
        return self.logs[tp][self.begins.get(tp, 0):]

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        found = {tp.partition for tp in self.logs if tp.topic == topic}
        return found or None

    def assign(self, tps) -> None:
        pass

    def pause(self, *tps) -> None:
        self.paused.update(tps)

    def resume(self, *tps) -> None:
        self.paused.difference_update(tps)

    def beginning_offsets(self, tps):
        return {tp: self.begins.get(tp, 0) for tp in tps}

    def end_offsets(self, tps):
        return {tp: len(self.logs[tp]) for tp in tps}

    def offsets_for_times(self, times):
        return {tp: next((OffsetAndTimestamp(r.offset, r.timestamp, -1) for r in self._kept(tp)
                          if r.timestamp >= ms), None) for tp, ms in times.items()}

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.position[tp] = offset

    def poll(self, timeout_ms: int, max_records: int):
        out = {}
        for tp, at in self.position.items():
            batch = self.logs[tp][at:at + max_records]
            if tp not in self.paused and batch:
                out[tp] = batch
                self.position[tp] = at + len(batch)
        return out

    def close(self) -> None:
        pass


@pytest.fixture
def log(monkeypatch):
    consumer = MemoryConsumer(set(TOPIC_NAMES))
    monkeypatch.setattr(round_reader, "KafkaConsumer", lambda **_: consumer)
    monkeypatch.setattr(round_reader, "kafka_python_options", lambda _principal: {})
    return consumer


def _played(log: MemoryConsumer, rec: RecordedRound) -> RecordedRound:
    """The round on the log, then FILLER events of other tables on its partition of
    table.events (keys that share it) every 10 s from 5 minutes after the round, past its
    correction 3 hours after it."""
    for topic, key, value, at in rec.records():
        log.put(topic, key, value, at)
    mine = partition_for(rec.table_id, PARTITIONS)
    others = [k for k in (f"other-{i}" for i in range(200))
              if partition_for(k, PARTITIONS) == mine][:20]
    filler = RecordedRound(table_id="FILLER", round_id="F").events[0].model_dump_json().encode()
    start = rec.events[-1].occurred_at - timedelta(hours=3) + timedelta(minutes=5)
    for i in range(FILLER):
        log.put(TABLE_EVENTS_TOPIC, others[i % len(others)], filler,
                start + timedelta(seconds=10 * i))
    return rec


def _corrected_round(**fields) -> RecordedRound:
    rec = RecordedRound(**fields)
    rec.correct("9S,3H,KD,3C", after=timedelta(hours=3))  # Player's natural 9 now wins
    return rec


def _replay(rec: RecordedRound):
    reader = RoundReader("memory")
    records = reader.read_round(rec.table_id, rec.round_id, rec.t0)
    report = replay_round(rec.table_id, rec.round_id, records.events, records.anchor,
                          records.result, records.decisions, records.settlements,
                          records.wallet, corrections=records.corrections,
                          corrected_results=records.corrected_results)
    return records, report, reader


def test_a_correction_is_found_on_the_index_without_reading_the_tables_later_events(log):
    rec = _played(log, _corrected_round())
    records, report, reader = _replay(rec)
    assert [c.event_id for c in records.corrections] == [rec.corrections[0].event_id]
    assert report.verdict == "MATCH", report.differences[:5]
    assert report.status == "corrected" and len(report.corrections) == 1
    # table.events: the round's window alone (it ends at the round's surplus slack), once;
    # the index: its one record
    assert reader.window_reads[TABLE_EVENTS_TOPIC] == 1
    assert reader.records_by_topic[TABLE_EVENTS_TOPIC] < 20
    assert reader.records_by_topic[TABLE_CORRECTIONS_TOPIC] == 1
    assert records.records_read < 100  # the index's read is counted with the round's


def test_a_correction_published_again_on_the_index_is_found_once(log):
    rec = _corrected_round()
    correction = rec.corrections[0]
    log.put(TABLE_CORRECTIONS_TOPIC, rec.table_id, correction.model_dump_json().encode(),
            correction.occurred_at + timedelta(minutes=1))  # an outbox's republish
    records, report, _ = _replay(_played(log, rec))
    assert len(records.corrections) == 1 and report.verdict == "MATCH", report.differences[:5]


def test_a_round_recorded_before_the_index_is_scanned_for_on_table_events(log):
    rec = _played(log, _corrected_round(indexed=False))
    completed = next(e for e in rec.events if isinstance(e, RoundCompleted))
    assert completed.corrections_indexed is None  # as dealer-event wrote it then
    records, report, reader = _replay(rec)
    assert [c.event_id for c in records.corrections] == [rec.corrections[0].event_id]
    assert report.verdict == "MATCH", report.differences[:5]
    assert reader.records_by_topic[TABLE_CORRECTIONS_TOPIC] == 0
    assert reader.records_by_topic[TABLE_EVENTS_TOPIC] > FILLER / 2  # the old scan's cost


def test_an_index_that_no_longer_reaches_back_to_the_round_falls_back_to_the_scan(log):
    rec = _played(log, _corrected_round())
    tp = TopicPartition(TABLE_CORRECTIONS_TOPIC, partition_for(rec.table_id, PARTITIONS))
    log.begins[tp] = 1  # its one record deleted (a retention set behind the catalogue's back)
    records, report, reader = _replay(rec)
    assert [c.event_id for c in records.corrections] == [rec.corrections[0].event_id]
    assert report.verdict == "MATCH", report.differences[:5]
    assert reader.records_by_topic[TABLE_EVENTS_TOPIC] > FILLER / 2


def test_a_broker_without_the_index_is_scanned_as_before(log):
    rec = _played(log, _corrected_round())
    for tp in [tp for tp in log.logs if tp.topic == TABLE_CORRECTIONS_TOPIC]:
        del log.logs[tp]
    records, report, _ = _replay(rec)
    assert [c.event_id for c in records.corrections] == [rec.corrections[0].event_id]
    assert report.verdict == "MATCH", report.differences[:5]


def test_the_shoes_read_for_the_roads_stops_at_the_rounds_end(log):
    """The roads read the table's events from its shoe's start through the round: the record
    after the round's end stops that read, even when the table deals no more (it waited for
    the table's next event: after a table's last round, the partition's other tables to the
    log's end)."""
    rec = _played(log, RecordedRound())
    reader = RoundReader("memory")
    opened = rec.events[1]
    events, read = reader.read_shoe(rec.table_id, "S1", rec.round_id, opened.occurred_at)
    assert [e.event_id for e in events] == [e.event_id for e in rec.events]
    assert read < 20
