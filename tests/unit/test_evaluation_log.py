"""game-evaluation on the kernel (issue 17, deliverable 5): its state is the fold of
`evaluation.log`, one entry per table event that changed a table's progress.

The real kernel batch (`kernel.apply_batch`), the real decisions (`decisions.Evaluations`)
and the real fold run against an in-memory log: the state a worker rebuilds from the
entries equals the live one, a result is published exactly from its entry, and a
redelivered table event writes nothing and counts nothing."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from services.game_evaluation.decisions import Evaluations
from services.game_evaluation.evaluation_fold import EVALUATION_FOLD, state_key, state_of, step
from services.game_evaluation.evaluator import EvaluationState, observe_verified
from services.infra import metrics
from services.infra.kernel import OwnLog, apply_batch
from services.infra.own_log import PartitionState, fold_entry
from shared.cards import parse_card
from shared.events.evaluation_log import EvaluationEntry
from shared.events.results import RoundResultPublished
from shared.events.table import CardDealt, RoundOpened, parse_table_event
from shared.topics import (
    DEAD_LETTERS_TOPIC,
    EVALUATION_LOG_TOPIC,
    ROUND_RESULTS_TOPIC,
    TABLE_EVENTS_TOPIC,
)
from tests.crashsim.consume import Event
from tests.crashsim.consume import Message as SimMessage
from tests.unit.dealer_support import MemoryLog
from tests.unit.test_table_event_auth import FORGED, KEY, REAL, T0, Chain, opened_round


@dataclass
class Message(SimMessage):
    key: bytes = b"T1"  # a dead letter keeps the record's key


class MemoryIO(MemoryLog):
    """`kernel.LogIO` on in-memory partitions (dealer_support's), read as game-evaluation's:
    `entries` and `logged` read evaluation.log (a record: a pack of entries, or one)."""

    own_topic = EVALUATION_LOG_TOPIC
    parse = staticmethod(EvaluationEntry.model_validate_json)

    def results(self) -> list[RoundResultPublished]:
        return [RoundResultPublished.model_validate_json(v)
                for topic, _, v in self.published if topic == ROUND_RESULTS_TOPIC]

    def dead_letters(self) -> list[bytes]:
        return [v for topic, _, v in self.published if topic == DEAD_LETTERS_TOPIC]


def worker(io: MemoryIO, name: str = "w1") -> tuple[OwnLog, Evaluations]:
    own: OwnLog = OwnLog("game-evaluation", EVALUATION_LOG_TOPIC, EVALUATION_FOLD,
                         EvaluationEntry.model_validate_json,
                         lambda e: e.state.table_id.encode(), name)
    own.io = io
    return own, Evaluations(KEY, now=lambda: T0)


def records(values: list[bytes], first: int = 0) -> list[Event]:
    return [Event(Message(TABLE_EVENTS_TOPIC, 0, first + i, v)) for i, v in enumerate(values)]


def run(own: OwnLog, evaluations: Evaluations, events: list[Event], batch: int = 3) -> None:
    async def go() -> None:
        for i in range(0, len(events), batch):
            await apply_batch(own, events[i:i + batch], evaluations.decide, evaluations.answer)
    asyncio.run(go())


def two_rounds() -> Chain:
    """R1 complete (player wins on 4 cards), then R2 opened and complete on 4 cards."""
    chain = opened_round()
    chain.card(REAL, 3)
    chain.add(RoundOpened, shoe_id="S1", round_id="R2", round_number=2, dealer="Ana",
              profile="sbo-baccarat", betting_closes_at=T0)
    for i, card in enumerate(["8H", "KD", "KC", "2S"]):
        chain.add(CardDealt, round_id="R2", card=parse_card(card), shoe_position=4 + i,
                  round_position=i)
    return chain


def wire(chain: Chain) -> list[bytes]:
    return [e.model_dump_json().encode() for e in chain.events]


def results_counted() -> float:
    return sum(s.value for m in metrics.RESULTS.collect() for s in m.samples
               if s.name.endswith("_total") and s.labels.get("table") == "T1")


def test_the_state_rebuilt_from_the_entries_equals_the_live_one():
    chain = two_rounds()
    io = MemoryIO()
    live, evaluations = worker(io)
    run(live, evaluations, records(wire(chain)))
    # the evaluator alone, event by event, ends where the live fold ends
    view = EvaluationState(table_id="T1")
    for event in chain.events:
        view = observe_verified(view, event, KEY).view
    assert state_of(live.states[0].kv, "T1") == view
    assert view.round is not None and view.round.round_id == "R2"
    assert view.round.status == "complete" and view.last_seq == chain.head.seq
    # a new worker (restart, partition moved) folds the log from its start: the same state
    rebuilt, _ = worker(io, "w2")
    state = asyncio.run(rebuilt.recover(0))
    assert state.kv == live.states[0].kv
    assert state.resume_at(TABLE_EVENTS_TOPIC, 0) == len(chain.events)
    # and so does the one fold run over the entries by hand
    by_hand: PartitionState = PartitionState(0)
    for offset, entry in io.logged():  # a pack's entries at its record's offset
        assert fold_entry(by_hand, offset, entry, EVALUATION_FOLD)
    assert by_hand.kv == {state_key("T1"): view}


def test_one_entry_per_event_that_changes_the_table_each_with_the_state_after_it():
    chain = two_rounds()
    io = MemoryIO()
    own, evaluations = worker(io)
    run(own, evaluations, records(wire(chain)))
    entries = io.entries()
    assert [e.source.offset for e in entries] == list(range(len(chain.events)))
    assert [e.state.last_seq for e in entries] == [e.seq for e in chain.events]
    assert [e.prev for e in entries] == ["", *(e.entry_id for e in entries[:-1])]


def test_a_result_is_published_exactly_from_its_entry():
    chain = two_rounds()
    io = MemoryIO()
    own, evaluations = worker(io)
    before = results_counted()
    run(own, evaluations, records(wire(chain)))
    with_result = [e for e in io.entries() if e.result is not None]
    assert [e.result.round_id for e in with_result] == ["R1", "R2"]
    assert io.results() == [e.result for e in with_result]
    published = [r for r in io.published if r[0] == ROUND_RESULTS_TOPIC]
    assert published == [r for e in io.entries() for r in EVALUATION_FOLD.outputs(e)]
    assert all(EVALUATION_FOLD.outputs(e) == [] for e in io.entries() if e.result is None)
    assert results_counted() - before == 2
    # the entry that completed R1 is the one of its fourth card
    assert with_result[0].source.offset == 6 and with_result[0].result.completed_seq == 7


def test_a_redelivered_table_event_writes_nothing_and_counts_nothing():
    chain = two_rounds()
    io = MemoryIO()
    own, evaluations = worker(io)
    run(own, evaluations, records(wire(chain)))
    entries, published, counted = len(io.entries()), list(io.published), results_counted()
    run(own, evaluations, records(wire(chain)))  # the same offsets again (a redelivery)
    run(own, evaluations, records(wire(chain)[3:], first=len(chain.events)))  # resent anew
    assert len(io.entries()) == entries
    assert io.published == published
    assert results_counted() == counted
    # decided against the folded state, an event already seen changes nothing
    seen = step(own.states[0].kv, chain.events[6], KEY)
    assert not seen.changed and seen.result is None


def test_an_unreadable_record_is_dead_lettered_and_the_next_one_evaluated():
    chain = opened_round()
    chain.card(REAL, 3)
    values = wire(chain)
    values.insert(3, b"{not a table event")
    io = MemoryIO()
    own, evaluations = worker(io)
    run(own, evaluations, records(values))
    assert len(io.dead_letters()) == 1
    assert [e.source.offset for e in io.entries()] == [0, 1, 2, 4, 5, 6, 7]
    assert [r.round_id for r in io.results()] == ["R1"]


def test_a_forged_event_is_dead_lettered_from_the_entry_that_flags_its_table():
    chain = opened_round()
    forged = chain.card(FORGED, 3, append=False)
    real = chain.card(REAL, 3)
    values = wire(chain)[:-1] + [forged.model_dump_json().encode(),
                                 real.model_dump_json().encode()]
    io = MemoryIO()
    own, evaluations = worker(io)
    refused = metrics.TABLE_EVENTS_REFUSED.labels("game-evaluation", "T1")
    flags = refused._value.get()
    run(own, evaluations, records(values))
    run(own, evaluations, records(values))  # redelivered: flagged once, not again
    assert refused._value.get() - flags == 1
    assert len(io.dead_letters()) == 1
    flagged = io.entries()[-2]
    assert flagged.source.offset == 6 and flagged.state.flagged
    # the dead letter is the entry's output: a crash before it was sent loses nothing
    assert flagged.dead_letter is not None and flagged.dead_letter.offset == 6
    assert EVALUATION_FOLD.outputs(flagged) == [r for r in io.published
                                                if r[0] == DEAD_LETTERS_TOPIC]
    assert flagged.state.last_seq == chain.events[-2].seq  # the forgery moved nothing
    assert io.results() == []  # the real card completes the round on a flagged table
    assert state_of(own.states[0].kv, "T1").flagged
    assert parse_table_event(values[-1]).seq == io.entries()[-1].state.last_seq


def test_a_dead_letter_lost_in_a_crash_is_published_again_from_its_entry():
    chain = opened_round()
    forged = chain.card(FORGED, 3, append=False)
    values = [*wire(chain), forged.model_dump_json().encode()]
    io = MemoryIO()
    own, evaluations = worker(io)

    async def crash(records):  # the entries landed; the worker dies before its outputs
        raise RuntimeError("kill -9")
    io.publish = crash
    try:
        run(own, evaluations, records(values), batch=len(values))
    except RuntimeError:
        pass
    del io.publish  # the broker again
    assert io.published == [] and io.entries()[-1].dead_letter is not None
    successor, _ = worker(io, "w2")
    asyncio.run(successor.recover(0))
    assert len(io.dead_letters()) == 1
