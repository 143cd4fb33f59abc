"""The wallet applies a pack of endings (a record of wallet.endings: bet-settlement's
endings of one partition's players, `services.infra.packs`) as it applied them one record
at a time: each ending on the state the ones before it left, each its own entry, the
record's entries taking effect together; an ending refused for good is dead-lettered alone
and the others applied."""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import dataclass, field

import pytest

from services.infra import packs
from services.infra.clock import ManualClock
from services.infra.kernel import OwnLog
from services.infra.packs import pack_values
from services.infra.replies import Replies
from services.wallet.batches import CommandBatches
from services.wallet.commands import CreateAccount, Deposit
from services.wallet.ledger_fold import WALLET_FOLD
from shared.events.bet_events import BetRejected, BetSettled
from shared.events.wallet_ledger import LedgerEntry
from shared.topics import DEAD_LETTERS_TOPIC, WALLET_ENDINGS_TOPIC, WALLET_LEDGER_TOPIC
from tests.unit.agent_loop_support import Event
from tests.unit.test_wallet_agent_loop import NOW, FakeIO, balance, bet, commands, kernel_batch


@dataclass
class Wallet:
    """One wallet worker over one partition of wallet.ledger held in memory."""

    io: FakeIO = field(default_factory=FakeIO)
    replies: Replies = field(default_factory=Replies)
    own: OwnLog = field(init=False)
    batches: CommandBatches = field(init=False)

    def __post_init__(self) -> None:
        self.own = worker(self.io, "w0")
        self.batches = CommandBatches(self.replies, ManualClock(NOW))

    def apply(self, events: list[Event], own: OwnLog | None = None) -> None:
        kernel_batch(own or self.own, self.io, self.batches, self.replies, events)


def worker(io: FakeIO, name: str) -> OwnLog:
    own = OwnLog("wallet", WALLET_LEDGER_TOPIC, WALLET_FOLD, LedgerEntry.model_validate_json,
                 lambda e: e.account.player_id.encode(), name)
    own.io = io
    return own


@pytest.fixture
def w() -> Wallet:
    return Wallet()


def settled(bet_id: str, stake: int, returned: int, outcome: str = "win") -> BetSettled:
    return BetSettled(bet_id=bet_id, player_id="p1", table_id="T1", round_id="R1",
                      bet="player", stake=stake, currency="IDR", settlement_id=f"s-{bet_id}",
                      outcome=outcome, returned=returned, cause="result-R1", settled_at=NOW)


def rejected(bet_id: str, stake: int) -> BetRejected:
    return BetRejected(bet_id=bet_id, player_id="p1", table_id="T1", round_id="R1",
                       bet="player", stake=stake, currency="IDR", reason_code="too_late",
                       message="betting closed", decided_at=NOW)


def ending_record(offset: int, *records) -> Event:
    value = pack_values([r.model_dump_json().encode() for r in records])
    return Event(WALLET_ENDINGS_TOPIC, offset, b"p1", value)


def placed_three(w: Wallet) -> None:
    answers = kernel_batch(w.own, w.io, w.batches, w.replies, commands(
        CreateAccount(player_id="p1", currency="IDR"),
        Deposit(player_id="p1", request_id="d1", amount=10_000),
        bet("b1", 3_000), bet("b2", 2_000), bet("b3", 1_000)))
    assert [a.status for a in answers] == [201] * 5
    assert balance(w.own.states[0]) == 4_000


def test_a_packs_endings_each_see_the_ones_before_and_take_effect_together(w):
    placed_three(w)
    before, records = len(w.io.entries()), len(w.io.records)
    pack = (settled("b1", 3_000, 6_000), settled("b2", 2_000, 0, "lose"), rejected("b3", 1_000))
    w.apply([ending_record(0, *pack)])
    written = w.io.entries()[before:]
    # three entries, one per ending, the parts of one record, balances chained through them
    # (sent as one ledger record: a pack of the three)
    assert len(w.io.records) == records + 1
    assert [e.command for e in written] == ["end_bet", "end_bet", "end_bet"]
    assert [(e.source.part, e.source.last) for e in written] == [
        (0, False), (1, False), (2, True)]
    assert [e.account.balance for e in written] == [10_000, 10_000, 11_000]
    assert [e.bet.status for e in written] == ["settled", "settled", "rejected"]
    state = w.own.states[0]
    assert balance(state) == 11_000 and state.resume_at(WALLET_ENDINGS_TOPIC, 0) == 1
    # the same pack again (an outbox republished): nothing moves, nothing is written
    w.apply([ending_record(1, *pack)])
    assert len(w.io.entries()) == before + 3 and len(w.io.records) == records + 1
    assert balance(w.own.states[0]) == 11_000
    # and a worker folding the log alone gets the same account
    assert balance(asyncio.run(worker(w.io, "heir").recover(0))) == 11_000


def test_a_pack_cut_short_by_a_crash_changed_nothing_and_is_decided_again(w, monkeypatch):
    placed_three(w)
    # the ledger sends a batch's entries as one record (a pack) while they fit, landing
    # whole or not at all; past a pack's bounds they go as several records, and a crash can
    # land some of them: one entry a record here, to cut the endings' entries apart
    monkeypatch.setattr(packs, "PACK_MAX_RECORDS", 1)
    record = ending_record(0, settled("b1", 3_000, 6_000), settled("b2", 2_000, 4_000))
    w.apply([record])
    # as if the worker died after the pack's first entry landed, before its second did
    del w.io.records[-1], w.io.appended[-1]
    assert w.io.entries()[-1].source.last is False
    heir = worker(w.io, "heir")
    state = asyncio.run(heir.recover(0))
    assert balance(state) == 4_000 and state.resume_at(WALLET_ENDINGS_TOPIC, 0) == 0
    w.apply([record], own=heir)
    assert balance(heir.states[0]) == 14_000


def test_an_ending_that_cannot_be_applied_is_dead_lettered_alone_and_the_rest_applied(
        w, monkeypatch):
    placed_three(w)
    decide_one = w.batches.handle

    def handle(env, now, look):
        if env.command.bet_id == "b2":
            raise RuntimeError("a bug in ending b2")
        return decide_one(env, now, look)
    monkeypatch.setattr(w.batches, "handle", handle)
    w.apply([ending_record(0, settled("b1", 3_000, 6_000), settled("b2", 2_000, 4_000),
                           settled("ghost", 500, 1_000), settled("b3", 1_000, 2_000))])
    # b1 and b3 paid; the ghost (never debited here) moves nothing, as it always did
    assert balance(w.own.states[0]) == 12_000
    [letter] = [json.loads(v) for t, _, v in w.io.published if t == DEAD_LETTERS_TOPIC]
    assert (letter["topic"], letter["offset"], letter["error_type"]) == (
        WALLET_ENDINGS_TOPIC, 0, "RuntimeError")
    kept = json.loads(base64.b64decode(letter["value_b64"]))
    assert [r["bet_id"] for r in kept["records"]] == ["b2"]  # re-driven, b2 alone is applied
