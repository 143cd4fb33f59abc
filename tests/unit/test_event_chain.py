"""Table events form a hash chain; altering, dropping or swapping an event is caught at its seq."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from shared.cards import parse_card
from shared.events.canonical import GENESIS_HASH, canonical_bytes
from shared.events.chain import verify_chain
from shared.events.table import (
    CardDealt,
    RoundOpened,
    ShoeStarted,
    parse_table_event,
    seal,
)

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def _chain(n_cards: int = 4):
    events = [seal(ShoeStarted, table_id="T1", seq=1, prev_hash=GENESIS_HASH, occurred_at=T0,
                   shoe_id="S1", profile="sbo-baccarat", decks=8)]
    events.append(seal(RoundOpened, table_id="T1", seq=2, prev_hash=events[-1].hash,
                       occurred_at=T0, shoe_id="S1", round_id="R1", round_number=1,
                       dealer="Ana", profile="sbo-baccarat",
                       betting_closes_at=T0 + timedelta(seconds=30)))
    for i, token in enumerate(["9H", "TS", "4C", "KD"][:n_cards]):
        events.append(seal(CardDealt, table_id="T1", seq=3 + i, prev_hash=events[-1].hash,
                           occurred_at=T0, round_id="R1", card=token, shoe_position=i,
                           round_position=i))
    return events


def test_a_sealed_chain_verifies_and_ids_are_deterministic():
    events = _chain()
    assert verify_chain(events) == []
    assert [e.event_id for e in events] == [f"T1:{s}" for s in range(1, 7)]
    assert _chain() == events, "sealing the same facts gives the same hashes"


def test_json_round_trip_keeps_the_hash():
    for event in _chain():
        again = parse_table_event(event.model_dump_json())
        assert again == event and again.computed_hash() == event.hash


def test_a_changed_card_breaks_the_chain_at_its_seq():
    events = _chain()
    events[3] = events[3].model_copy(update={"card": parse_card("QS")})
    breaks = verify_chain(events)
    assert [b.seq for b in breaks] == [4]
    assert "altered" in breaks[0].problem


def test_a_dropped_event_is_named_by_the_seq_after_the_gap():
    events = _chain()
    del events[2]
    breaks = verify_chain(events)
    assert {b.seq for b in breaks} == {4}
    assert any("seq 3 missing" in b.problem for b in breaks)


def test_swapped_events_are_caught():
    events = _chain()
    events[3], events[4] = events[4], events[3]
    breaks = verify_chain(events)
    assert breaks[0].seq == 5 and "seq 4 missing" in breaks[0].problem
    assert {b.seq for b in breaks} <= {4, 5, 6}, "nothing outside the swap is blamed"


def test_a_run_in_the_middle_verifies_against_the_event_before_it():
    events = _chain()
    assert verify_chain(events[3:], prev_hash=events[2].hash, prev_seq=events[2].seq) == []
    assert verify_chain(events[3:], prev_hash=events[1].hash, prev_seq=events[2].seq) != []


def test_canonical_encoding_is_order_independent_and_compact():
    assert canonical_bytes({"b": 1, "a": [1, 2]}) == b'{"a":[1,2],"b":1}'


def test_events_are_frozen():
    event = _chain()[0]
    with pytest.raises(ValidationError):
        event.seq = 9


# A RoundOpened and a BettingClosed exactly as croupier wrote them before RoundOpened gained
# profile_version/profile_digest and BettingClosed a supervisor and reason_text.
RECORDED_BEFORE_THE_NEW_FIELDS = [
    b'{"schema_version":1,"event_id":"T1:1","table_id":"T1","seq":1,'
    b'"occurred_at":"2026-01-01T00:00:00Z","input_id":null,"prev_hash":"' + b"0" * 64 + b'",'
    b'"hash":"1545c3041b9611d27c754df18d3207ed72ced3133f975869f51c042e057a8783",'
    b'"type":"round_opened","shoe_id":"S1","round_id":"R1","round_number":1,"dealer":"D",'
    b'"profile":"sbo-baccarat","betting_closes_at":"2026-01-01T00:00:30Z"}',
    b'{"schema_version":1,"event_id":"T1:2","table_id":"T1","seq":2,'
    b'"occurred_at":"2026-01-01T00:00:00Z","input_id":null,'
    b'"prev_hash":"1545c3041b9611d27c754df18d3207ed72ced3133f975869f51c042e057a8783",'
    b'"hash":"9cdb4b8f57569128c8e26fc86d695de0b292eca6bf5c8b54d92c7be5a67328e3",'
    b'"type":"betting_closed","round_id":"R1","reason":"timer"}',
]


def test_events_recorded_before_a_field_was_added_keep_their_hashes():
    """An optional field added to an event must be left out of the hash when absent, or
    every log written before it fails its chain check."""
    events = [parse_table_event(raw) for raw in RECORDED_BEFORE_THE_NEW_FIELDS]
    assert [e.computed_hash() for e in events] == [e.hash for e in events]
    assert verify_chain(events) == []


def test_a_valid_events_record_read_again_is_repeated_not_a_break_nor_a_race():
    """dealer-event's outbox publishes the entries a recovering worker cannot know were
    acknowledged again (issue 29): the log may hold a batch's events twice, after later
    ones. That is neither tampering nor a zombie's lost race."""
    from shared.events.chain import follow_chain
    from tests.unit.test_table_event_auth import opened_round

    events = opened_round().events
    again = [*events, *events[2:4], *events[4:]]  # a batch of three published twice
    for authenticated in (True, False):
        followed = follow_chain(again, authenticated=authenticated)
        assert followed.valid == events and followed.breaks == [] and followed.void == []
        assert followed.repeated == events[2:4] + events[4:]
    assert verify_chain(again) == []
    altered = events[3].model_copy(update={"hash": "0" * 64})  # same seq, not the same record
    assert verify_chain([*events, altered]) != []
