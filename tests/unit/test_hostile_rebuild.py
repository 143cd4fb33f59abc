"""Issue 11 finding 2: one bad record on table.events stopped dealer-event from starting.

dealer-event no longer reads table.events (nor dealer.rejections) at all: its state is the
fold of its own log, dealer.log (services/dealer_event/dealer_fold.py). So the old tests of
its rebuild of table.events (garbage bytes, a round opened on a table with no shoe, a
record with no readable key: each put only its own table out of play) are now one test:
nothing anyone writes on table.events or dealer.rejections moves a worker recovering its
tables. What is left of the finding is dealer.log itself: a record on it that is not an
entry is skipped, and every table plays on."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from services.dealer_event.dealer_fold import table_of
from shared.events.canonical import GENESIS_HASH
from shared.events.dealer_log import DealerEntry
from shared.events.inputs import NewShoe, OpenRound
from shared.events.rejections import InputRefused
from shared.events.sources import InputRef
from shared.events.table import BettingClosed, RoundOpened, RoundVoided, parse_table_event, seal
from shared.topics import (
    DEALER_INPUTS_TOPIC,
    DEALER_LOG_TOPIC,
    DEALER_REJECTIONS_TOPIC,
    TABLE_EVENTS_TOPIC,
)
from tests.unit.dealer_support import World, close

KEY = b"test-table-events-key"


def run(coro):
    return asyncio.run(coro)


def test_nothing_on_table_events_or_dealer_rejections_moves_a_recovering_worker():
    w = World(events_key=KEY)
    run(w.handle([w.raw("A", NewShoe, shoe_id="S1", profile="sbo-baccarat"),
                  w.raw("A", OpenRound, round_id="R1", dealer="Ayu"),
                  w.raw("C", NewShoe, shoe_id="S1", profile="sbo-baccarat")]))
    head = parse_table_event(w.events("A")[-1])
    now = w.clock.now()
    later = dict(table_id="A", seq=head.seq + 1, prev_hash=head.hash, occurred_at=now,
                 round_id="R1")
    hostile = [
        (b"A", b"\x00\x01 seventeen bytes!"),
        (b"C", b"[" * 100_000 + b"]" * 100_000),
        (None, b"garbage"), (b"\xff\xfe", b"garbage"),
        # a forgery continuing A's chain, and an event signed with the key (as a zombie of
        # the old runtime, or anything else holding the key, would write it)
        (b"A", seal(BettingClosed, **later, reason="dealer").model_dump_json().encode()),
        (b"A", seal(RoundVoided, **later, reason_code="misdeal", reason_text="x",
                    supervisor="Sam", key=KEY).model_dump_json().encode()),
        # a round on a table with no shoe
        (b"B", seal(RoundOpened, table_id="B", seq=1, prev_hash=GENESIS_HASH, occurred_at=now,
                    shoe_id="nope", round_id="R1", round_number=1, dealer="D",
                    profile="sbo-baccarat", betting_closes_at=now + timedelta(seconds=30),
                    key=KEY).model_dump_json().encode()),
    ]
    w.log.published += [(TABLE_EVENTS_TOPIC, k, v) for k, v in hostile]
    closing = close(w, "R1")  # on dealer.inputs, not decided yet
    # a refusal of that very input, never decided by dealer-event
    w.log.published.append((DEALER_REJECTIONS_TOPIC, b"A", InputRefused(
        rejection_id="rej:forged", table_id="A", input_id="A-rt-3", command="close_betting",
        reason_code="betting_already_closed", message="x", received_at=now,
    ).model_dump_json().encode()))
    tables = w.tables
    w.revoke({0, 1})

    after = World(log=w.log, events_key=KEY, writer="w2")  # the table's next worker
    run(after.recover())
    assert after.tables == tables and set(tables) == {"A", "C"}
    (report,) = run(after.handle([closing]))
    assert report["status"] == "accepted" and report["input_id"] == "A-rt-3"
    closed = parse_table_event(after.events("A")[-1])
    assert (closed.seq, closed.prev_hash, closed.type) == (3, head.hash, "betting_closed")


def test_a_record_on_dealer_log_that_is_not_an_entry_is_skipped_and_the_tables_play_on():
    w = World(events_key=KEY)
    run(w.handle([w.raw("A", NewShoe, shoe_id="S1", profile="sbo-baccarat")]))
    w.log.logs[(DEALER_LOG_TOPIC, 0)].append(b"\x00\x01 not an entry")
    reports = run(w.handle([w.raw("A", OpenRound, round_id="R1", dealer="Ayu"),
                            w.raw("C", NewShoe, shoe_id="S1", profile="sbo-baccarat")]))
    assert [r["status"] for r in reports] == ["accepted", "accepted"]
    tables = w.tables
    w.revoke({0, 1})
    after = World(log=w.log, events_key=KEY, writer="w2")
    run(after.recover())
    assert after.tables == tables and tables["A"].round.round_id == "R1"
    assert tables["C"].shoe is not None
    assert after.own.state(0).void == 1


def test_an_entry_whose_events_do_not_fold_puts_only_its_table_out_of_play():
    """A chained entry on dealer.log whose event does not fold (a round on a table with no
    shoe: a bug, or a profile since removed) should stop its own table, not the partition."""
    w = World(events_key=KEY)
    run(w.handle([w.raw("A", NewShoe, shoe_id="S1", profile="sbo-baccarat")]))
    state = w.own.state(0)
    now = w.clock.now()
    bad = seal(RoundOpened, table_id="C", seq=1, prev_hash=GENESIS_HASH, occurred_at=now,
               shoe_id="nope", round_id="R1", round_number=1, dealer="D",
               profile="sbo-baccarat", betting_closes_at=now + timedelta(seconds=30), key=KEY)
    entry = DealerEntry(entry_id="x:1", prev=state.head_id,
                        source=InputRef(topic=DEALER_INPUTS_TOPIC, partition=0, offset=0),
                        published_through=-1, recorded_at=now, table_id="C", events=(bad,))
    w.log.logs[(DEALER_LOG_TOPIC, 0)].append(entry.model_dump_json().encode())
    after = World(log=w.log, events_key=KEY, writer="w2")
    run(after.recover())
    assert table_of(after.own.state(0).kv, "C").corrupt
    (report,) = run(after.handle([w.raw("A", OpenRound, round_id="R1", dealer="Ayu")]))
    assert report["status"] == "accepted", "table A plays on"
