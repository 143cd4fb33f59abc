"""dealer-event on the kernel (issue 29): its state is the fold of `dealer.log`, one entry
per decided input; its events and refusals are published from the entries once they are in
the log; a restarted worker folds the log and resumes each partition of `dealer.inputs`
after the last input it decided; the timer's ticks are decided like inputs. The real
kernel batch (`kernel.apply_batch`), the real decisions and fold, an in-memory log (no
broker)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import timedelta

import pytest

from services.dealer_event.dealer_fold import DEALER_FOLD, tables_of
from services.dealer_event.decisions import LOST_RACE, MOVED
from services.dealer_event.state import KEEP_INPUT_IDS, remember_input
from services.infra import packs
from services.infra.own_log import PartitionState, fold_entry
from services.infra.settings import Settings
from shared.cards import parse_card, parse_cards
from shared.events.inputs import CorrectRound, NewShoe, OpenRound, ScanCard, TimerTick
from shared.topics import DEAD_LETTERS_TOPIC, DEALER_INPUTS_TOPIC, TABLE_CORRECTIONS_TOPIC
from tests.unit.dealer_support import PARTITIONS, World, close

SHOE = {"shoe_id": "S1", "profile": "sbo-baccarat"}


def run(coro):
    return asyncio.run(coro)


def seqs(w: World, table: str) -> list[int]:
    return [json.loads(v)["seq"] for v in w.events(table)]


def test_a_batch_is_decided_in_order_one_send_per_partition_and_published_from_the_log():
    w = World()
    reports = run(w.handle([w.raw("A", NewShoe, **SHOE),
                            w.raw("A", OpenRound, round_id="R1", dealer="Ayu"),
                            w.raw("B", OpenRound, round_id="R1", dealer="Ayu"),  # no shoe
                            close(w, "R1")]))
    assert [r["status"] for r in reports] == ["accepted", "accepted", "refused", "accepted"]
    assert reports[2]["reason_code"] == "no_shoe"
    assert w.log.sends == 2, "one send (one wait for acks) per partition per batch"
    assert [e["seq"] for e in reports[3]["events"]] == [3], "A's state moved within the batch"
    assert w.tables["A"].seq == 3 and w.tables["A"].round.round_id == "R1"
    assert w.kinds("A") == ["shoe_started", "round_opened", "betting_closed"]
    assert [r["reason_code"] for r in w.rejections("B")] == ["no_shoe"]
    # every decided input is one entry, naming its record of dealer.inputs
    entries = w.log.entries(PARTITIONS["A"])
    assert [(e.source.topic, e.source.offset) for e in entries] == [
        (DEALER_INPUTS_TOPIC, 0), (DEALER_INPUTS_TOPIC, 1), (DEALER_INPUTS_TOPIC, 2)]
    assert [len(e.events) for e in entries] == [1, 1, 1]
    # the partition's three entries in one record (a pack), at its offset
    assert [o for o, _ in w.log.logged(PARTITIONS["A"])] == [0, 0, 0]


def test_a_worker_folding_the_log_has_the_live_state_and_resumes_after_what_it_decided():
    w = World()
    run(w.handle([w.raw("A", NewShoe, **SHOE), w.raw("C", NewShoe, **SHOE),
                  w.raw("A", OpenRound, round_id="R1", dealer="Ayu"),
                  w.raw("B", OpenRound, round_id="R1", dealer="Ayu"),  # refused: no shoe
                  w.raw("B", NewShoe, **SHOE)]))
    run(w.handle([w.raw("C", OpenRound, round_id="R1", dealer="Ayu"), close(w, "R1"),
                  w.raw("A", NewShoe, shoe_id="S2", profile="sbo-baccarat"),  # refused
                  w.put("B", b'{"table_id": "B", "input_id": "junk"}')]))  # malformed
    again = World(log=w.log, writer="w2")  # a restart, or the partitions moved
    run(again.recover())
    assert {t: s.seq for t, s in again.tables.items()} == {t: s.seq for t, s in w.tables.items()}
    assert again.tables["B"].refused_inputs == w.tables["B"].refused_inputs != {}
    for partition in (0, 1):
        state = again.own.state(partition)
        inputs = w.log.logs[(DEALER_INPUTS_TOPIC, partition)]
        assert state.resume_at(DEALER_INPUTS_TOPIC, partition) == len(inputs)
        # and the one fold, by hand over the entries, gives the same tables
        by_hand: PartitionState = PartitionState(partition)
        for offset, entry in w.log.logged(partition):  # a pack's entries at its offset
            assert fold_entry(by_hand, offset, entry, DEALER_FOLD)
        assert {t: s.seq for t, s in tables_of(by_hand.kv).items()} == {
            t: s.seq for t, s in tables_of(state.kv).items()}
    # a redelivered input writes nothing more and is not applied twice
    before = len(w.log.entries(0))
    redelivered = again.log.append_input("A", w.log.logs[(DEALER_INPUTS_TOPIC, 0)][2])
    assert run(again.handle([redelivered]))[0]["reason_code"] == "duplicate_input"
    assert len(w.log.entries(0)) == before + 1  # its refusal, and nothing else
    # the recovering worker published its outbox again (at least once): the same records
    by_seq = {json.loads(v)["seq"]: v for v in w.events("A")}
    assert sorted(by_seq) == [1, 2, 3] and set(w.events("A")) == set(by_seq.values())


def test_a_send_cut_short_is_decided_again_only_for_what_the_log_lacks(monkeypatch):
    # a batch's entries go as one record (a pack) while they fit, and a pack lands whole or
    # not at all; a batch past a pack's bounds is sent as several records, and a send can
    # then be cut short between two of them: here one entry a record, to cut between them
    monkeypatch.setattr(packs, "PACK_MAX_RECORDS", 1)
    w = World()
    run(w.handle([w.raw("A", NewShoe, **SHOE)]))
    opened, closed = w.raw("A", OpenRound, round_id="R1", dealer="Ayu"), close(w, "R1")
    w.log.fail_after = 1  # the open's entry lands, the close's does not, the batch fails
    with pytest.raises(ConnectionError):
        run(w.handle([opened, closed]))
    assert seqs(w, "A") == [1], "nothing published before its entry is verified"
    w.own.revoke({0})  # what the kernel does before it retries: fold the log again
    retried = run(w.handle([opened, closed]))
    assert retried[0]["status"] == LOST_RACE, "the log decided it before: not answered now"
    assert retried[1]["status"] == "accepted"
    assert seqs(w, "A") == [1, 2, 3], "no gap, no duplicate: the open's event from its entry"
    assert w.tables["A"].seq == 3


def test_waiters_are_answered_only_once_the_entry_is_in_the_log_and_only_their_own():
    w = World()
    run(w.handle([w.raw("A", NewShoe, **SHOE), w.raw("A", OpenRound, round_id="R1",
                                                     dealer="Ayu"), close(w, "R1")]))
    genuine = w.make["A"].make(ScanCard, round_id="R1", card=parse_card("9S"))
    forged = genuine.model_copy(update={"card": parse_card("7C"), "signature": "f" * 64})
    seen: list[list[bool]] = []

    async def go():
        mine = w.decisions.expect(genuine.input_id, 0, genuine.signature)
        theirs = w.decisions.expect(forged.input_id, 0, forged.signature)

        async def before_send():
            seen.append([mine.done(), theirs.done()])
        w.log.before_send = before_send
        await w.handle([w.put("A", forged.model_dump_json().encode()),
                        w.put("A", genuine.model_dump_json().encode())])
        return mine, theirs

    mine, theirs = run(go())
    assert seen == [[False, False]], "nobody is answered before the send is acknowledged"
    assert theirs.result()["status"] == "refused", "the forgery's sender gets the refusal"
    assert mine.result()["status"] == "accepted", "the genuine device its card"


def test_waiters_of_a_partition_that_moved_are_told_to_resend():
    w = World()

    async def go():
        stay = w.decisions.expect("in-A", PARTITIONS["A"])
        moved = w.decisions.expect("in-B", PARTITIONS["B"])
        w.revoke({PARTITIONS["B"]})
        return stay, moved

    stay, moved = run(go())
    assert moved.done() and moved.result()["status"] == MOVED
    assert not stay.done()


def test_the_timer_asks_and_the_tick_is_decided_on_the_log_once():
    w = World()
    run(w.handle([w.raw("A", NewShoe, **SHOE), w.raw("A", OpenRound, round_id="R1",
                                                     dealer="Ayu"),
                  w.raw("B", NewShoe, **SHOE), w.raw("B", OpenRound, round_id="R1",
                                                     dealer="Ayu")]))
    assert run(w.tick()) == [] and w.kinds("A")[-1] == "round_opened", "nothing due yet"
    w.clock.advance(6)  # the window (5 s) ran out
    w.revoke({PARTITIONS["B"]})  # B's partition went to another worker
    run(w.tick())
    assert w.kinds("A")[-1] == "betting_closed" and w.kinds("B")[-1] == "round_opened"
    ticks = [json.loads(v) for v in w.log.logs[(DEALER_INPUTS_TOPIC, 0)]
             if b"timer_tick" in v]
    assert [TimerTick.model_validate(t).table_id for t in ticks] == ["A"]
    # a tick that finds nothing due (read again, or sent by anyone) writes nothing
    entries = len(w.log.entries(0))
    run(w.handle([w.put("A", TimerTick(table_id="A", seq=2).model_dump_json().encode())]))
    assert len(w.log.entries(0)) == entries
    assert w.kinds("A").count("betting_closed") == 1


def test_the_watch_decides_once_by_the_workers_own_monotonic_clock_and_a_restart_not_again():
    w = World()
    w.config = replace(w.config, stall_after=timedelta(seconds=300),
                       abandon_after=timedelta(seconds=3600))
    run(w.handle([w.raw("A", NewShoe, **SHOE), w.raw("A", OpenRound, round_id="R1",
                                                     dealer="Ayu"), close(w, "R1")]))
    run(w.tick())  # the worker starts watching table A
    w.clock.reset_to(w.clock.now() + timedelta(hours=2))  # its wall clock jumps
    run(w.tick())
    assert w.kinds("A")[-1] == "betting_closed", "watched for no time: nothing decided"
    w.clock.advance(300)
    run(w.tick())
    w.clock.advance(3300)
    run(w.tick())
    run(w.tick())
    again = World(log=w.log, writer="w2")  # a restarted worker on the same log
    again.config = w.config
    run(again.recover())
    again.clock.advance(7200)
    run(again.tick())
    again.clock.advance(7200)
    run(again.tick())
    kinds = w.kinds("A")
    assert kinds[-2:] == ["round_stalled", "round_voided"] and kinds.count("round_voided") == 1
    assert again.tables["A"].round.abandoned


def test_a_record_that_cannot_be_decided_is_dead_lettered_and_the_rest_decided(monkeypatch):
    w = World()
    boom = w.raw("A", NewShoe, **SHOE)
    real = w.decisions._decide

    def failing(scratch, event, now):
        if event is boom:
            raise RuntimeError("a bug, not a refusal")
        return real(scratch, event, now)

    monkeypatch.setattr(w.decisions, "_decide", failing)
    reports = run(w.handle([boom, w.raw("C", NewShoe, **SHOE)]))
    assert reports[0] is None and reports[1]["status"] == "accepted"
    assert [t for t, _, _ in w.log.published].count(DEAD_LETTERS_TOPIC) == 1
    assert w.tables["C"].seq == 1 and "A" not in w.tables
    again = World(log=w.log, writer="w2")
    run(again.recover())
    assert again.own.state(0).resume_at(DEALER_INPUTS_TOPIC, 0) == 2, "decided, once"


def test_an_input_keyed_onto_another_tables_partition_is_refused_and_forks_nothing():
    """A writer keying by anything but the table id puts table A's input on partition 1:
    deciding it there would start a second chain of A beside the real one."""
    w = World()
    run(w.handle([w.raw("A", NewShoe, **SHOE)]))
    stray = w.make["A"].make(OpenRound, round_id="R1", dealer="Ayu")
    misplaced = w.log.append_input("B", stray.model_dump_json().encode())  # partition 1
    (report,) = run(w.handle([misplaced]))
    assert report["reason_code"] == "wrong_partition" and "partition 1" in report["message"]
    assert "A" not in tables_of(w.own.state(1).kv) and w.tables["A"].seq == 1
    assert seqs(w, "A") == [1]
    # refused without deciding the input: sent right, it is decided
    (again,) = run(w.handle([w.put("A", stray.model_dump_json().encode())]))
    assert again["status"] == "accepted" and seqs(w, "A") == [1, 2]


def test_a_tables_input_ids_stay_bounded_whatever_its_history():
    """A table decides thousands of inputs a day; it keeps the ids of the last
    KEEP_INPUT_IDS (each kind), enough to refuse any resend still inside the time window,
    and copying its state costs the same after a year as after a day."""
    ids: dict[str, None] = {}
    for i in range(KEEP_INPUT_IDS + 10):
        remember_input(ids, f"in-{i}", None)
    assert len(ids) == KEEP_INPUT_IDS and "in-9" not in ids and "in-10" in ids
    remember_input(ids, "in-10", None)  # seen again: the newest now
    remember_input(ids, "in-new", None)
    assert "in-10" in ids and "in-11" not in ids
    with pytest.raises(ValueError, match="input_max_age_seconds"):
        Settings(input_max_age_seconds=3600)


def test_a_correction_is_published_on_the_index_of_corrections_too():
    """The index a replay reads for a round's corrections (docs/decisions/replay.md): the
    round's round_completed says it is indexed, and each round_corrected goes on
    table.corrections as the very bytes table.events carries, from the same entry's outbox;
    nothing else goes there."""
    w = World()
    run(w.handle([w.raw("A", NewShoe, **SHOE), w.raw("A", OpenRound, round_id="R1", dealer="Ayu"),
                  close(w, "R1")]))
    run(w.handle([w.raw("A", ScanCard, round_id="R1", card=parse_card(c))
                  for c in ("9S", "2H", "KD", "5C")]))
    fix = {"reason_code": "mis_scan", "reason_text": "the video shows the 2 of spades",
           "role": "supervisor"}
    (report,) = run(w.handle([w.raw("A", CorrectRound, round_id="R1",
                                    cards=parse_cards("2S,2H,KD,5C,3D"), **fix)]))
    assert report["status"] == "accepted", report
    completed = [json.loads(v) for v in w.events("A") if b'"round_completed"' in v]
    assert [c["corrections_indexed"] for c in completed] == [True]
    corrected = [v for v in w.events("A") if b'"round_corrected"' in v]
    assert len(corrected) == 1 and w.log.on(TABLE_CORRECTIONS_TOPIC, "A") == corrected
    assert [t for t, _, _ in w.log.published].count(TABLE_CORRECTIONS_TOPIC) == 1
