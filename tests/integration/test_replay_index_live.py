"""A round's corrections after the fact read on their index, `table.corrections`, against the
real broker, and an older round's (recorded before the index) by the scan of `table.events`
(docs/decisions/replay.md, "Corrections by their index"). A module of its own: its records
are stamped hours in the past, and a broker of its own holds nothing stamped after them."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from shared.topics import TABLE_CORRECTIONS_TOPIC, TABLE_EVENTS_TOPIC
from tests.integration.replay_support import apply_topics, produce_records
from tests.round_builder import RecordedRound

pytestmark = pytest.mark.kafka


def test_corrections_are_read_on_their_index_and_an_older_rounds_by_the_scan(platform_kafka):
    """Two rounds corrected 3 hours after they ended, each the last of its table, other
    tables dealing after them: the round dealer-event indexed has its correction read on
    table.corrections (table.events once, for the round itself); the round recorded before
    the index (no flag, no index record) is scanned for on table.events, as before. Both
    replay to MATCH with their correction."""
    from services.operator.replay import replay_round
    from services.operator.round_reader import RoundReader

    apply_topics(platform_kafka)
    run, start = uuid.uuid4().hex[:6], datetime.now(UTC) - timedelta(hours=4)
    rounds = [RecordedRound(table_id=f"K{run}-{indexed}", round_id=f"R-{run}-{indexed}", t0=start,
                            indexed=indexed, bets=((f"k{run}-{indexed}", f"kim-{run}", "banker", 1000),
                                                   (f"l{run}-{indexed}", f"lee-{run}", "player", 500)))
              for indexed in (True, False)]
    for rec in rounds:
        rec.correct("9S,3H,KD,3C", after=timedelta(hours=3))  # Player's natural 9 now wins
    others = [RecordedRound(table_id=f"O{run}-{i}", round_id=f"R{i}",
                            t0=start + timedelta(minutes=10 * (i + 1)),
                            bets=((f"o{run}-{i}", f"oli-{run}", "player", 1000),)) for i in range(16)]
    records = [r for rec in [*rounds, *others] for r in rec.records()]
    produce_records(platform_kafka, sorted(records, key=lambda r: r[3]))  # in time order
    for rec in rounds:
        reader = RoundReader(platform_kafka)
        try:
            read = reader.read_round(rec.table_id, rec.round_id, rec.t0)
        finally:
            reader.close()
        report = replay_round(rec.table_id, rec.round_id, read.events, read.anchor, read.result,
                              read.decisions, read.settlements, read.wallet,
                              corrections=read.corrections,
                              corrected_results=read.corrected_results)
        assert report.verdict == "MATCH", report.differences[:5]
        assert [c.event_id for c in read.corrections] == [rec.corrections[0].event_id]
        assert (reader.window_reads[TABLE_EVENTS_TOPIC],
                reader.window_reads[TABLE_CORRECTIONS_TOPIC]) == ((1, 1) if rec.indexed else (2, 0))
