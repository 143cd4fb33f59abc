"""Issue 11 finding 2: one bad record on table.events stopped dealer-event from starting.
Now the rebuild puts only that record's table out of play; every other table plays on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from services.dealer_event.rebuild import fold_events
from shared.events.canonical import GENESIS_HASH
from shared.events.table import RoundOpened, ShoeStarted, seal

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def _record(event) -> tuple[bytes, bytes]:
    return event.table_id.encode(), event.model_dump_json().encode()


def _healthy_table(table_id: str) -> list[tuple[bytes, bytes]]:
    shoe = seal(ShoeStarted, table_id=table_id, seq=1, prev_hash=GENESIS_HASH, occurred_at=NOW,
                shoe_id=f"{table_id}-S1", profile="sbo-baccarat", decks=8)
    return [_record(shoe)]


def test_garbage_bytes_put_only_their_own_table_out_of_play():
    states: dict = {}
    fold_events(states, [*_healthy_table("T2"), (b"T1", b"\x00\x01 seventeen bytes!"),
                         (b"T3", b"[" * 100_000 + b"]" * 100_000)])
    assert "unreadable" in states["T1"].corrupt
    assert "unreadable" in states["T3"].corrupt
    assert states["T2"].corrupt is None and states["T2"].seq == 1


def test_a_round_opened_on_a_table_with_no_shoe_puts_that_table_out_of_play():
    opened = seal(RoundOpened, table_id="T1", seq=1, prev_hash=GENESIS_HASH, occurred_at=NOW,
                  shoe_id="nope", round_id="R1", round_number=1, dealer="D",
                  profile="sbo-baccarat", betting_closes_at=NOW + timedelta(seconds=30))
    states: dict = {}
    fold_events(states, [_record(opened), *_healthy_table("T2")])
    assert states["T1"].corrupt and "round_opened" in states["T1"].corrupt
    assert states["T2"].corrupt is None


def test_a_record_with_no_readable_key_is_skipped():
    states: dict = {}
    fold_events(states, [(None, b"garbage"), (b"\xff\xfe", b"garbage"), *_healthy_table("T2")])
    assert set(states) == {"T2"}
