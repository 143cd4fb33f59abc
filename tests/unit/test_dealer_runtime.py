"""dealer-event's worker runtime with a fake log: batches, publish-then-adopt, rebuild after a
failed publish, ownership of partitions and rebalances (no broker)."""

from __future__ import annotations

import asyncio

import pytest

from services.dealer_event.runtime import MOVED
from shared.cards import parse_card
from shared.events.inputs import NewShoe, OpenRound, ScanCard
from tests.unit.dealer_runtime_support import PARTITIONS, World, close


def run(coro):
    return asyncio.run(coro)


def test_a_batch_is_decided_in_order_published_once_and_then_adopted():
    w = World()

    async def go():
        batch = [w.raw("A", NewShoe, shoe_id="S1", profile="sbo-baccarat"),
                 w.raw("A", OpenRound, round_id="R1", dealer="Ayu"),
                 w.raw("B", OpenRound, round_id="R1", dealer="Ayu"),  # no shoe: refused
                 close(w, "R1")]
        return await w.runtime.handle_batch(batch)

    reports = run(go())
    assert [r["status"] for r in reports] == ["accepted", "accepted", "refused", "accepted"]
    assert reports[2]["reason_code"] == "no_shoe"
    assert w.log.publishes == 1, "one publish (one wait for acks) per batch"
    assert [r["seq"] for r in reports[3]["events"]] == [3]  # A's state moved within the batch
    assert w.runtime.tables["A"].seq == 3 and w.runtime.tables["A"].round.round_id == "R1"
    assert "B" in w.runtime.tables and w.runtime.tables["B"].seq == 0


def test_a_failed_publish_adopts_nothing_and_the_retry_decides_from_the_log():
    w = World()

    async def go():
        await w.runtime.handle_batch([w.raw("A", NewShoe, shoe_id="S1", profile="sbo-baccarat")])
        opened = w.raw("A", OpenRound, round_id="R1", dealer="Ayu")
        closed = close(w, "R1")
        w.log.fail_after = 1  # the open is written, the close is not, the batch fails
        with pytest.raises(ConnectionError):
            await w.runtime.handle_batch([opened, closed])
        assert w.runtime.tables["A"].seq == 1, "nothing adopted before the acks"
        assert not w.runtime.ready
        return await w.runtime.handle_batch([opened, closed])  # the agent's retry

    retried = run(go())
    assert retried[0]["reason_code"] == "duplicate_input", "in the log: never applied twice"
    assert retried[1]["status"] == "accepted"
    seqs = [int(v.split(b'"seq":')[1].split(b",")[0]) for v in w.events("A")]
    assert seqs == [1, 2, 3], "no gap, no duplicate"
    assert w.runtime.tables["A"].seq == 3


def test_inputs_of_partitions_not_owned_are_left_to_their_owner():
    w = World(owned=frozenset({0}))

    async def go():
        return await w.runtime.handle_batch([
            w.raw("B", NewShoe, shoe_id="S1", profile="sbo-baccarat"),
            w.raw("C", NewShoe, shoe_id="S1", profile="sbo-baccarat")])

    reports = run(go())
    assert reports[0] is None and reports[1]["status"] == "accepted"
    assert set(w.runtime.tables) == {"C"} and w.events("B") == []


def test_a_rebalance_rebuilds_only_the_owned_tables_and_the_timer_ticks_only_those():
    w = World()

    async def go():
        batch = []
        for table in ("A", "B"):
            batch += [w.raw(table, NewShoe, shoe_id="S1", profile="sbo-baccarat"),
                      w.raw(table, OpenRound, round_id="R1", dealer="Ayu")]
        await w.runtime.handle_batch(batch)
        # a rebalance: partition 1 goes to another worker
        await w.runtime.on_revoked()
        assert w.runtime.tables == {} and not w.runtime.ready
        w.clock.advance(10)
        await w.runtime.tick_all()  # revoked: decides nothing
        assert len(w.events("B")) == 2
        w.owned = frozenset({0})
        w.runtime.on_assigned()
        await w.runtime.ensure_ready()
        assert set(w.runtime.tables) == {"A"} and w.runtime.ready
        await w.runtime.tick_all()

    run(go())
    assert [b'"betting_closed"' in v for v in w.events("A")] == [False, False, True]
    assert len(w.events("B")) == 2, "the table of a partition given away is never touched"


def test_waiters_of_a_table_that_moved_are_told_to_retry():
    w = World()

    async def go():
        stay = w.runtime.expect("in-A", PARTITIONS["A"])
        moved = w.runtime.expect("in-B", PARTITIONS["B"])
        w.owned = frozenset({0})
        w.runtime.on_assigned()
        await w.runtime.ensure_ready()
        return stay, moved

    stay, moved = run(go())
    assert moved.done() and moved.result()["status"] == MOVED
    assert not stay.done()


def test_a_scan_is_answered_to_its_waiter_only_after_the_publish():
    w = World()
    seen = []

    async def publish(records):
        seen.append([f.done() for f in futures])
        w.log.records.extend(records)

    w.runtime._publish_all = publish
    futures = []

    async def go():
        await w.runtime.handle_batch([w.raw("A", NewShoe, shoe_id="S1", profile="sbo-baccarat"),
                                      w.raw("A", OpenRound, round_id="R1", dealer="Ayu"),
                                      close(w, "R1")])
        scan = w.make["A"].make(ScanCard, round_id="R1", card=parse_card("9S"))
        futures.append(w.runtime.expect(scan.input_id, signature=scan.signature))
        await w.runtime.handle_batch([(scan.model_dump_json().encode(), 0)])
        return futures[0]

    answered = run(go())
    assert seen[-1] == [False] and answered.result()["status"] == "accepted"


def test_a_forged_input_reusing_an_id_is_never_answered_to_the_genuine_device():
    """Issue 11 finding 8: waiters were keyed by input id alone, so a forged input with the
    genuine one's id, decided first, answered the genuine device 403 while its card was
    applied."""
    w = World()

    async def go():
        await w.runtime.handle_batch([w.raw("A", NewShoe, shoe_id="S1", profile="sbo-baccarat"),
                                      w.raw("A", OpenRound, round_id="R1", dealer="Ayu"),
                                      close(w, "R1")])
        genuine = w.make["A"].make(ScanCard, round_id="R1", card=parse_card("9S"))
        forged = genuine.model_copy(update={"card": parse_card("7C"), "signature": "f" * 64})
        mine = w.runtime.expect(genuine.input_id, signature=genuine.signature)
        theirs = w.runtime.expect(forged.input_id, signature=forged.signature)
        await w.runtime.handle_batch([(forged.model_dump_json().encode(), 0),
                                      (genuine.model_dump_json().encode(), 0)])
        return mine, theirs

    mine, theirs = run(go())
    assert theirs.result()["status"] == "refused"
    assert mine.result()["status"] == "accepted"
