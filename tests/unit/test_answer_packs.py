"""Seamless mode: the operator's answers packed by partition on their way to the ledger
(`services.wallet.answer_packs`), and the accounts agent deciding a pack of answers as the
record's parts (`CommandBatches.decide_parts`): each bet answered as if its answer had come
alone, one entry per answer, taking effect together."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import pytest

from services.infra import packs
from services.infra.clock import ManualClock
from services.infra.own_log import Batch, Landed, PartitionState
from services.infra.replies import Replies
from services.wallet.answer_packs import AnswerPacks
from services.wallet.batches import CommandBatches
from services.wallet.commands import CreateAccount, Envelope, OperatorAnswered, PlaceBet
from services.wallet.ledger_fold import WALLET_FOLD, Lookups
from services.wallet.seamless import SeamlessRules
from shared.events.operator_wallet import OperatorAnswer
from shared.topics import BETS_PLACED_TOPIC, DEAD_LETTERS_TOPIC, WALLET_OPERATOR_CALLS_TOPIC
from tests.unit.agent_loop_support import Event

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
COMMANDS = "test-wallet-commands"
PLAYERS = ("p1", "p2", "p3")


def answered(player: str, bet_id: str, outcome: str = "ok", code: str | None = None
             ) -> OperatorAnswered:
    return OperatorAnswered(player_id=player, transaction_id=f"debit:{bet_id}",
                            answer=OperatorAnswer(outcome=outcome, error_code=code,
                                                  balance=None if code else 9_000,
                                                  answered_at=NOW))


def boom():
    raise RuntimeError("boom")


class Partition:
    """One partition of the wallet in seamless mode, batches decided and landed as the
    kernel does, every waiter's answer kept."""

    def __init__(self) -> None:
        self.replies: Replies = Replies()
        self.batches = CommandBatches(self.replies, ManualClock(NOW), SeamlessRules())
        self.state = PartitionState(0)
        self.offset = 0
        self.outputs: list = []

    def run(self, *values: bytes, waiting: tuple[str, ...] = ()) -> dict:
        async def go():
            futures = {w: self.replies.expect(w) for w in waiting}
            batch = Batch(self.state, WALLET_FOLD, lambda: f"w:{self.offset}")
            decided = []
            for value in values:
                event = Event(COMMANDS, self.offset, b"p1", value)
                self.offset += 1
                d = self.batches.decide(batch.scratch, event)
                for make in d.entries:
                    batch.add(make)
                decided.append((event, d))
            for _, entry in batch.commit([Landed(o, NOW) for o in batch.expected]):
                self.outputs += WALLET_FOLD.outputs(entry)
            for event, d in decided:
                self.batches.answer(event, d, True)
            return {w: f.result() for w, f in futures.items() if f.done()}, decided

        answers, self.decided = asyncio.run(go())
        return answers


def command(cmd, reply_id: str | None = None) -> bytes:
    return Envelope(reply_id=reply_id, command=cmd).model_dump_json().encode()


@pytest.fixture
def wallet() -> Partition:
    w = Partition()
    bets = [command(PlaceBet(player_id=p, bet_id=f"b-{p}", table_id="T1", round_id="R1",
                             bet="player", stake=1_000, operator_session="s"), f"r-{p}")
            for p in PLAYERS]
    w.run(*(command(CreateAccount(player_id=p, currency="IDR")) for p in PLAYERS), *bets)
    return w


def test_a_pack_of_answers_answers_each_bet_as_its_answer_alone_would(wallet):
    pack = packs.pack_values([command(answered("p1", "b-p1")),
                              command(answered("p2", "b-p2", "refused", "insufficient_funds")),
                              command(answered("p3", "b-p3"))])
    answers = wallet.run(pack, waiting=tuple(f"r-{p}" for p in PLAYERS))
    assert {w: a.status for w, a in answers.items()} == {"r-p1": 201, "r-p2": 402,
                                                         "r-p3": 201}
    look = Lookups(wallet.state.kv)
    assert [look.bet_of(p, f"b-{p}").status for p in PLAYERS] == [
        "placed", "debit_failed", "placed"]
    # one entry per answer, the record's parts, taking effect together
    (_, decided), = wallet.decided
    sources = [make("e", "", -1).source for make in decided.entries]
    assert [(s.offset, s.part, s.last) for s in sources] == [
        (6, 0, False), (6, 1, False), (6, 2, True)]
    assert wallet.state.resume_at(COMMANDS, 0) == 7
    placed = [t for t, _, _ in wallet.outputs if t == BETS_PLACED_TOPIC]
    calls = [t for t, _, _ in wallet.outputs if t == WALLET_OPERATOR_CALLS_TOPIC]
    assert (len(placed), len(calls)) == (2, 3)


def test_a_pack_seen_again_changes_nothing(wallet):
    pack = packs.pack_values([command(answered(p, f"b-{p}")) for p in PLAYERS])
    wallet.run(pack)
    before = dict(wallet.state.kv)
    wallet.run(pack)  # a redelivered answer: only a pending call takes one
    assert wallet.state.kv == before
    (_, decided), = wallet.decided
    assert decided.entries == [] and decided.also == []


def test_an_answer_of_a_pack_that_cannot_be_applied_is_dead_lettered_alone(wallet,
                                                                           monkeypatch):
    real = wallet.batches.handle
    monkeypatch.setattr(wallet.batches, "handle", lambda env, now, look: (
        boom() if env.command.player_id == "p2" else real(env, now, look)))
    bad = command(answered("p2", "b-p2"))
    answers = wallet.run(packs.pack_values([command(answered("p1", "b-p1")), bad]),
                         waiting=("r-p1", "r-p2"))
    assert set(answers) == {"r-p1"} and answers["r-p1"].status == 201
    (_, decided), = wallet.decided
    assert len(decided.entries) == 1 and [t for t, _, _ in decided.also] == [
        DEAD_LETTERS_TOPIC]
    letter = json.loads(decided.also[0][2])  # the failed answer alone, to re-drive
    assert letter["value_size"] == len(packs.pack_values([bad])) and letter["error"] == "boom"


def test_an_unreadable_answer_of_a_pack_is_dead_lettered_and_the_others_applied(wallet):
    garbage = b'{"command": {"type": "operator_answered"}}'
    answers = wallet.run(packs.pack_values([garbage, command(answered("p3", "b-p3"))]),
                         waiting=("r-p3",))
    assert answers["r-p3"].status == 201
    (_, decided), = wallet.decided
    assert len(decided.entries) == 1
    letter = json.loads(decided.also[0][2])
    assert letter["value_size"] == len(packs.pack_values([garbage]))


def test_answers_of_one_partition_within_the_linger_share_a_record():
    sent: list[tuple[bytes, bytes]] = []

    async def send_record(key: bytes, value: bytes) -> None:
        sent.append((key, value))

    async def go():
        packer = AnswerPacks(send_record, lambda player: 0 if player in ("p1", "p2") else 1,
                             linger_s=0.01)
        await asyncio.gather(*(packer.send(answered(p, f"b-{p}")) for p in PLAYERS))
        await packer.send(answered("p1", "b-late"))  # alone: sent as it was before packs
    asyncio.run(go())
    assert [key for key, _ in sent] == [b"p1", b"p3", b"p1"]
    first = packs.unpack(sent[0][1])
    assert first is not None and [Envelope.model_validate_json(v).command.player_id
                                  for v in first] == ["p1", "p2"]
    assert packs.unpack(sent[1][1]) is None and packs.unpack(sent[2][1]) is None
    assert Envelope.model_validate_json(sent[2][1]).command.transaction_id == "debit:b-late"


def test_a_pack_past_the_bounds_is_split_in_order(monkeypatch):
    monkeypatch.setattr(packs, "PACK_MAX_RECORDS", 2)
    sent: list[bytes] = []

    async def send_record(key: bytes, value: bytes) -> None:
        sent.append(value)

    async def go():
        packer = AnswerPacks(send_record, lambda player: 0, linger_s=0.01)
        await asyncio.gather(*(packer.send(answered("p1", f"b{i}")) for i in range(5)))
    asyncio.run(go())
    ids = [Envelope.model_validate_json(v).command.transaction_id
           for value in sent for v in (packs.unpack(value) or [value])]
    assert ids == [f"debit:b{i}" for i in range(5)] and len(sent) == 3


def test_a_record_the_producer_refuses_fails_each_of_its_answers():
    async def send_record(key: bytes, value: bytes) -> None:
        raise ConnectionError("the broker, for a moment")

    async def go():
        packer = AnswerPacks(send_record, lambda player: 0, linger_s=0.001)
        return await asyncio.gather(*(packer.send(answered(p, f"b-{p}")) for p in PLAYERS),
                                    return_exceptions=True)
    assert [type(e) for e in asyncio.run(go())] == [ConnectionError] * 3
