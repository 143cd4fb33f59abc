"""bet-settlement's records on the kernel without a broker (issue 13, item 6; issue 17): the
real batch code (`kernel.apply_batch` over `SettlementRecords.decide/answer` and the fold of
`settlement.log`), with the own log in memory and the producer as a test double
(tests/unit/settlement_log_support.py). The round is the one tests/round_builder.py records
as the services write it, so what the service publishes is checked against that.

What a player relies on: every bet of a round is decided and then settled by the rules, in
the order the records were read, whatever the batches; a record the service cannot read is
dead-lettered and the round still settles; a redelivered batch moves nothing twice."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from services.infra.clock import ManualClock
from shared.events.bet_events import BetPlaced
from shared.events.dead_letters import DeadLetter
from shared.events.wallet_events import tx_id
from shared.topics import (
    BETS_DECISIONS_TOPIC,
    BETS_PLACED_TOPIC,
    BETS_SETTLED_TOPIC,
    DEAD_LETTERS_TOPIC,
    ROUND_RESULTS_TOPIC,
    TABLE_EVENTS_TOPIC,
    WALLET_ENDINGS_TOPIC,
)
from tests.round_builder import RecordedRound
from tests.unit.agent_loop_support import Event
from tests.unit.settlement_log_support import LogBroker, Worker, patch_kernel

# stakes within sbo-baccarat's limits; round_builder's cards (banker 6 on two cards): alice
# wins her banker bet and loses her player bet, bob's fortune six wins
BETS = (("b1", "alice", "banker", 1_000), ("b2", "alice", "player", 2_000),
        ("b3", "bob", "fortune_six", 1_000))


@pytest.fixture
def rec() -> RecordedRound:
    return RecordedRound(bets=BETS)


@pytest.fixture
def broker(monkeypatch) -> LogBroker:
    fake = LogBroker()
    patch_kernel(monkeypatch, fake)
    return fake


@pytest.fixture
def worker(rec, broker) -> Worker:
    return Worker(broker, ManualClock(rec.t0 + timedelta(minutes=1)))


def placed(rec: RecordedRound, bet_id: str, player: str, bet: str, stake: int) -> BetPlaced:
    return BetPlaced(bet_id=bet_id, player_id=player, table_id=rec.table_id,
                     round_id=rec.round_id, bet=bet, stake=stake, currency="IDR",
                     debit_tx_id=tx_id("stake_debit", bet_id),
                     placed_at=rec.t0 + timedelta(seconds=1))


def round_records(rec: RecordedRound, poison: bytes | None = None) -> list[Event]:
    """The round's records in the order the agent reads them: the shoe and the round open on
    table.events, the bets on bets.placed (`poison` among them if given), the close, the
    deal, and the result on round.results. Each topic's offsets count from 0."""
    opened, dealt = rec.events[:2], rec.events[2:]
    ordered = [(TABLE_EVENTS_TOPIC, e.model_dump_json().encode()) for e in opened]
    bets = [(BETS_PLACED_TOPIC, placed(rec, *b).model_dump_json().encode()) for b in rec.bets]
    if poison is not None:
        bets.insert(1, (BETS_PLACED_TOPIC, poison))
    ordered += bets
    ordered += [(TABLE_EVENTS_TOPIC, e.model_dump_json().encode()) for e in dealt]
    ordered.append((ROUND_RESULTS_TOPIC, rec.result.model_dump_json().encode()))
    offsets: dict[str, int] = {}
    events = []
    for topic, value in ordered:
        offsets[topic] = offsets.get(topic, -1) + 1
        events.append(Event(topic, offsets[topic], rec.table_id.encode(), value))
    return events


def decisions(broker: LogBroker) -> list[dict]:
    return [json.loads(v) for t, _, v in broker.published if t in (BETS_DECISIONS_TOPIC,
                                                                   BETS_SETTLED_TOPIC)]


def expected(rec: RecordedRound) -> list[tuple]:
    """What round_builder says bet-settlement writes for the round, in order."""
    out = [("bet_accepted", d.bet_id, None, None) for d in rec.decisions
           if d.type == "bet_accepted"]
    manifest = next(d for d in rec.decisions if d.type == "round_manifest")
    out.append(("round_manifest", manifest.digest, manifest.bet_count, manifest.total_stake))
    out += [("bet_settled", s.bet_id, s.outcome, s.returned) for s in rec.settlements]
    return out


def summary(records: list[dict]) -> list[tuple]:
    return [("round_manifest", r["digest"], r["bet_count"], r["total_stake"])
            if r["type"] == "round_manifest" else
            (r["type"], r["bet_id"], r.get("outcome"), r.get("returned")) for r in records]


def test_a_round_read_in_one_batch_is_decided_then_settled_by_the_rules(rec, worker, broker):
    worker.apply(round_records(rec))
    assert summary(decisions(broker)) == expected(rec)
    assert [o for _, _, o, _ in expected(rec)[-3:]] == ["win", "lose", "win"]  # not vacuous
    assert broker.kinds() == ["publish", "flush"]  # everything a batch decided, sent together
    assert {t for t, _, _ in broker.published} == {BETS_DECISIONS_TOPIC, BETS_SETTLED_TOPIC,
                                                    WALLET_ENDINGS_TOPIC}
    # each settlement again on wallet.endings, in order, packed by the wallet's partition
    # (one here), the pack keyed by one of its players
    settled = [json.loads(v) for t, _, v in broker.published if t == BETS_SETTLED_TOPIC]
    packs = [(k, json.loads(v)) for t, k, v in broker.published if t == WALLET_ENDINGS_TOPIC]
    assert len(packs) == 1 and [p["type"] for _, p in packs] == ["pack"]
    key, pack = packs[0]
    assert [r for r in pack["records"] if r["type"] == "bet_settled"] == settled and settled
    assert key == pack["records"][0]["player_id"].encode()


def test_the_same_records_in_batches_of_any_size_settle_the_same(rec, monkeypatch):
    records = round_records(rec)
    for size in (1, 3):
        broker = LogBroker()
        patch_kernel(monkeypatch, broker)
        worker = Worker(broker, ManualClock(rec.t0 + timedelta(minutes=1)))
        for start in range(0, len(records), size):
            worker.apply(records[start:start + size])
        assert summary(decisions(broker)) == expected(rec), size


def test_a_poison_record_is_dead_lettered_and_the_round_still_settles(rec, worker, broker):
    worker.apply(round_records(rec, poison=b'{"type": "bet_placed", "stake": "lots"'))
    assert summary(decisions(broker)) == expected(rec)
    (letter,) = [DeadLetter.model_validate_json(v) for t, _, v in broker.published
                 if t == DEAD_LETTERS_TOPIC]
    assert (letter.service, letter.topic, letter.offset) == ("bet-settlement", BETS_PLACED_TOPIC, 1)
    # the kernel sends a batch's dead letters with its entries, before their outputs
    assert broker.topics().index(DEAD_LETTERS_TOPIC) == 0


def test_a_redelivered_batch_publishes_nothing_again_and_changes_no_state(rec, worker, broker):
    records = round_records(rec)
    worker.apply(records)
    first, state, entries = decisions(broker), dict(worker.kv()), list(broker.log[0])
    broker.steps.clear()
    worker.apply(records)  # a crash before the offsets were committed: read again
    assert decisions(broker) == []  # the own log holds them: applied once, published once
    assert worker.kv() == state and broker.log[0] == entries
    # a new worker (the first one crashed before its outputs were acknowledged) folds the
    # log and publishes the same records again: same ids, the wallet pays once
    again = Worker(broker, ManualClock(rec.t0 + timedelta(minutes=2)), writer="w1")
    again.apply(records)
    assert [r.get("settlement_id") for r in decisions(broker)] == [
        r.get("settlement_id") for r in first]
    assert summary(decisions(broker)) == summary(first)
    assert again.kv() == state and broker.log[0] == entries
