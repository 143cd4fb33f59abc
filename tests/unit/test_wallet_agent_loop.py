"""The wallet's accounts agent without a broker (issue 13, item 6): the real decisions and
answers (`CommandBatches.decide` / `answer`) driven as the kernel drives them, through the
pure own-log pieces the kernel uses (`own_log.Batch` chains a batch's entries on the
partition's folded state, `Batch.commit` / `fold_entry` fold them once they landed), and
the kernel's own `apply_batch` over an in-memory `LogIO` (the log, the outbox).

What a player relies on: one player's commands apply in the order they were sent; nobody
is answered before the command's entry landed where its chain said and its outputs were
published (a 201 means "in the log"); one bad command never stops the others; a retried
command moves money once and writes nothing; two workers writing one partition never
both move the money."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from services.infra import kernel, packs
from services.infra.clock import ManualClock
from services.infra.kernel import Decided, OwnLog
from services.infra.own_log import (
    Batch,
    Landed,
    Logged,
    PartitionState,
    Record,
    entries_of,
    fold_entry,
)
from services.infra.replies import Replies
from services.wallet.batches import CommandBatches
from services.wallet.commands import CreateAccount, Deposit, Envelope, PlaceBet, Withdraw
from services.wallet.ledger_fold import WALLET_FOLD, Lookups, account_key
from shared.events.dead_letters import DeadLetter
from shared.events.wallet_ledger import LedgerEntry
from shared.topics import (
    BETS_PLACED_TOPIC,
    DEAD_LETTERS_TOPIC,
    WALLET_LEDGER_TOPIC,
    WALLET_TRANSACTIONS_TOPIC,
)
from tests.unit.agent_loop_support import Event

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
BROKER_AHEAD = datetime(2100, 1, 1, tzinfo=UTC)  # a broker's clock behind no writer's
COMMANDS = "test-wallet-commands"


@pytest.fixture
def replies() -> Replies:
    return Replies()


@pytest.fixture
def batches(replies) -> CommandBatches:
    return CommandBatches(replies, ManualClock(NOW))


def commands(*cmds, first_offset: int = 0) -> list[Event]:
    """Each command as the HTTP view sends it (replying to `r<offset>`), at consecutive
    offsets of the commands topic; a `bytes` item is a record as it stands."""
    out = []
    for i, cmd in enumerate(cmds, start=first_offset):
        value = cmd if isinstance(cmd, bytes) else Envelope(
            reply_id=f"r{i}", command=cmd).model_dump_json().encode()
        out.append(Event(COMMANDS, i, b"p1", value))
    return out


def bet(bet_id: str, stake: int, player: str = "p1") -> PlaceBet:
    return PlaceBet(player_id=player, bet_id=bet_id, table_id="T1", round_id="R1",
                    bet="player", stake=stake)


@dataclass
class Step:
    """One batch of one partition, decided: its chained entries and every decision."""

    batch: Batch
    decided: list[tuple[Event, Decided]]
    dead: list[Record] = field(default_factory=list)
    landed: list[int] = field(default_factory=list)  # where its entries landed

    def land(self) -> list[Record]:
        """The entries landed as chained: fold them; their outputs (the outbox)."""
        outputs: list[Record] = []
        self.landed = self.batch.expected  # one offset per record (a pack of entries)
        for _, entry in self.batch.commit([Landed(o, BROKER_AHEAD) for o in self.landed]):
            outputs += WALLET_FOLD.outputs(entry)
        return outputs

    def log(self) -> list[tuple[int, LedgerEntry]]:
        return [(self.landed[self.batch.record_of(i)], e)
                for i, e in enumerate(self.batch.entries)]


IDS = itertools.count(1)  # entry ids: never two alike, as a writer's life makes them


def decide(batches: CommandBatches, state: PartitionState, events: list[Event],
           writer: str = "w0") -> Step:
    """Decide every event in order on the batch's scratch state, chaining their entries
    (each entry's id names its writer)."""
    batch = Batch(state, WALLET_FOLD, lambda: f"{writer}:{next(IDS)}")
    step = Step(batch, [])
    for event in events:
        decided = batches.decide(batch.scratch, event)
        for make in decided.entries:
            batch.add(make)
        step.dead += decided.also
        step.decided.append((event, decided))
    return step


def run(batches: CommandBatches, replies: Replies, state: PartitionState,
        events: list[Event]) -> tuple[list, list[Record], Step]:
    """A batch as the kernel runs it, with a waiter per event as the HTTP views wait:
    decide, land, fold, answer. (answers (None: never answered), outputs, the step)"""
    async def go():
        waiting = [replies.expect(f"r{e.message.offset}") for e in events]
        step = decide(batches, state, events)
        outputs = step.land()
        for event, decided in step.decided:
            batches.answer(event, decided, True)  # landed as chained: backed
        return [f.result() if f.done() else None for f in waiting], outputs, step

    return asyncio.run(go())


def writer_of(entry: LedgerEntry) -> str:
    return entry.entry_id.rsplit(":", 1)[0]


def balance(state: PartitionState, player: str = "p1") -> int:
    return Lookups(state.kv).account(player).balance


def on(records: list[Record], topic: str) -> list[dict]:
    return [json.loads(v) for t, _, v in records if t == topic]


def test_a_batchs_commands_are_applied_in_the_order_they_were_sent(batches, replies):
    state = PartitionState(0)
    batch = commands(CreateAccount(player_id="p1", currency="IDR"),
                     Deposit(player_id="p1", request_id="d1", amount=5_000),
                     bet("b1", 4_000),
                     bet("b2", 2_000),  # 1 000 left: refused
                     Deposit(player_id="p1", request_id="d2", amount=3_000),
                     bet("b3", 2_000))  # after the second deposit: taken
    answers, outputs, step = run(batches, replies, state, batch)
    assert [a.status for a in answers] == [201, 201, 201, 402, 201, 201]
    assert balance(state) == 5_000 - 4_000 + 3_000 - 2_000
    assert [tx["kind"] for tx in on(outputs, WALLET_TRANSACTIONS_TOPIC)] == [
        "deposit", "stake_debit", "deposit", "stake_debit"]
    assert [b["bet_id"] for b in on(outputs, BETS_PLACED_TOPIC)] == ["b1", "b3"]
    # one entry per command that changed anything, chained in the order sent...
    entries = step.batch.entries
    assert [e.source.offset for e in entries] == [0, 1, 2, 4, 5]
    assert [e.prev for e in entries] == ["", *(e.entry_id for e in entries[:-1])]
    # ... and sent as one record (a pack) at offset 0: the head is its offset, and its
    # last entry's id
    assert [offset for offset, _ in step.log()] == [0] * 5
    assert state.head == 0 and state.head_id == entries[-1].entry_id
    assert state.resume_at(COMMANDS, 0) == 6  # a restart resumes after the last applied


def test_nobody_is_answered_before_the_entries_landed_and_were_folded(batches, replies):
    state = PartitionState(0)
    events = commands(CreateAccount(player_id="p1", currency="IDR"),
                      Deposit(player_id="p1", request_id="d1", amount=10_000),
                      bet("b1", 3_000))

    async def go():
        waiting = [replies.expect(f"r{e.message.offset}") for e in events]
        step = decide(batches, state, events)
        assert not any(f.done() for f in waiting) and len(replies) == 3
        assert state.kv == {} and state.head == -1  # decided on scratch: nothing folded
        step.land()
        assert not any(f.done() for f in waiting)  # landed: still answered only by `answer`
        for event, decided in step.decided:
            batches.answer(event, decided, True)  # landed as chained: backed
        return [f.result() for f in waiting]

    answers = asyncio.run(go())
    assert [a.status for a in answers] == [201, 201, 201] and len(replies) == 0
    assert balance(state) == 7_000


def test_an_unreadable_command_is_dead_lettered_and_the_rest_of_the_batch_applied(batches,
                                                                                   replies):
    state = PartitionState(0)
    batch = commands(CreateAccount(player_id="p1", currency="IDR"),
                     b"\x00 not an envelope \xff",
                     Deposit(player_id="p1", request_id="d1", amount=2_500))
    answers, outputs, step = run(batches, replies, state, batch)
    assert [None if a is None else a.status for a in answers] == [201, None, 201]
    assert balance(state) == 2_500
    (letter,) = [DeadLetter.model_validate(d) for d in on(step.dead, DEAD_LETTERS_TOPIC)]
    assert (letter.service, letter.topic, letter.offset) == ("wallet", COMMANDS, 1)
    unreadable = step.decided[1][1]
    assert unreadable.entries == [] and unreadable.reply is None  # no entry, no answer
    assert [e.source.offset for e in step.batch.entries] == [0, 2]


def test_a_command_that_fails_to_apply_is_dead_lettered_answered_500_and_others_go_on(
        batches, replies):
    state = PartitionState(0)
    state.kv[account_key("p2")] = {"balance": "corrupt"}  # a value the code cannot read
    batch = commands(CreateAccount(player_id="p1", currency="IDR"),
                     Deposit(player_id="p2", request_id="d2", amount=1_000),
                     Deposit(player_id="p1", request_id="d1", amount=2_500))
    answers, _, step = run(batches, replies, state, batch)
    assert [a.status for a in answers] == [201, 500, 201]
    assert answers[1].body["error"]["code"] == "command_failed"
    assert state.kv[account_key("p2")] == {"balance": "corrupt"}  # nothing written for it
    assert balance(state) == 2_500
    (letter,) = [DeadLetter.model_validate(d) for d in on(step.dead, DEAD_LETTERS_TOPIC)]
    assert letter.offset == 1
    assert [e.source.offset for e in step.batch.entries] == [0, 2]


def test_a_retried_command_moves_money_once_writes_no_entry_and_gets_the_same_answer(
        batches, replies):
    state = PartitionState(0)
    deposit = Deposit(player_id="p1", request_id="d1", amount=1_000)
    first, _, _ = run(batches, replies, state, commands(
        CreateAccount(player_id="p1", currency="IDR"), deposit))
    head = state.head
    again, outputs, step = run(batches, replies, state, commands(deposit, first_offset=2))
    assert [first[1].status, again[0].status] == [201, 200]
    assert first[1].body == again[0].body
    assert step.batch.entries == [] and outputs == [] and state.head == head
    assert balance(state) == 1_000


def test_a_retry_in_the_same_batch_reads_what_the_first_attempt_wrote(batches, replies):
    """The scratch state carries the batch's earlier commands: the second attempt, decided
    before the first one's entry landed, is still a duplicate."""
    state = PartitionState(0)
    deposit = Deposit(player_id="p1", request_id="d1", amount=1_000)
    answers, outputs, step = run(batches, replies, state, commands(
        CreateAccount(player_id="p1", currency="IDR"), deposit, deposit))
    assert [a.status for a in answers] == [201, 201, 200]
    assert len(step.batch.entries) == 2 and len(on(outputs, WALLET_TRANSACTIONS_TOPIC)) == 1
    assert balance(state) == 1_000


def test_a_batch_that_lost_its_partition_to_another_writer_is_decided_again_from_the_log(
        batches, replies):
    """Two workers both took the same deposit (a rebalance): the other's entry landed first.
    Ours did not land where its chain said, so it is void for every fold and nobody is
    answered for it; on the log folded again the deposit is the other's, and the request
    sent again is answered from it: 200, the money moved once."""
    state = PartitionState(0)
    _, _, created = run(batches, replies, state,
                        commands(CreateAccount(player_id="p1", currency="IDR")))
    log = created.log()
    other = PartitionState(0)
    for offset, entry in log:
        fold_entry(other, offset, entry, WALLET_FOLD, entry.recorded_at)
    deposit = commands(Deposit(player_id="p1", request_id="d1", amount=700), first_offset=1)
    theirs = decide(CommandBatches(Replies(), ManualClock(NOW)), other, deposit, "w1")
    ours = decide(batches, state, deposit)
    log.append((1, theirs.batch.entries[0]))  # theirs landed first, at offset 1
    log.append((2, ours.batch.entries[0]))  # ours after it, at 2: chained on 0, not 1
    assert not ours.batch.landed_as_chained([Landed(2, NOW)])
    for offset, entry in log[1:]:  # fold the log again (the kernel's `recover`)
        fold_entry(state, offset, entry, WALLET_FOLD, entry.recorded_at)
    assert state.void == 1 and state.head == 1 and balance(state) == 700
    assert state.applied(COMMANDS, 0, 1)  # the log says the record was applied: by w1
    resent = commands(Deposit(player_id="p1", request_id="d1", amount=700), first_offset=2)
    again, outputs, step = run(batches, replies, state, resent)
    assert again[0].status == 200 and step.batch.entries == [] and outputs == []
    assert again[0].body["transaction"]["tx_id"] == "deposit:d1" and balance(state) == 700


def _interleavings(a: list, b: list):
    if not a or not b:
        yield [*a, *b]
        return
    for rest in _interleavings(a[1:], b):
        yield [a[0], *rest]
    for rest in _interleavings(a, b[1:]):
        yield [b[0], *rest]


@pytest.mark.parametrize("per_record", [1, 2, 100])
def test_two_workers_deciding_the_same_commands_fold_to_one_consistent_account(
        per_record, monkeypatch):
    """A zombie and the new owner both decide the same commands from the same head (the
    same checkpoint, the same records of one input partition), at different times. However
    their records interleave in the log, every fold is an account its history adds up to
    (balance = the sum of its movements, every seq present and indexed), and once the
    commands the log did not apply are decided again, money moved once per command."""
    # a batch's entries go as packs of at most `per_record` (PACK_MAX_RECORDS): 1, one entry
    # a record, gives the finest interleavings of the two writers' records; 100, each
    # writer's batch in one record
    monkeypatch.setattr(packs, "PACK_MAX_RECORDS", per_record)
    state = PartitionState(0)
    first = commands(CreateAccount(player_id="p1", currency="IDR"))
    _, _, created = run(CommandBatches(Replies(), ManualClock(NOW)), Replies(), state,
                        first)
    base = created.log()
    cmds = commands(Deposit(player_id="p1", request_id="d1", amount=5_000), bet("b1", 2_000),
                    Deposit(player_id="p1", request_id="d2", amount=300), first_offset=1)
    later = ManualClock(NOW)
    later.advance(5)
    deciders = {"zombie": CommandBatches(Replies(), ManualClock(NOW)),
                "owner": CommandBatches(Replies(), later)}
    sent = []  # each writer's records, each a list of its entries
    for writer, decider in deciders.items():
        own = PartitionState(0)
        for offset, e in base:
            fold_entry(own, offset, e, WALLET_FOLD, e.recorded_at)
        batch = decide(decider, own, cmds, writer).batch
        ends = [*batch.packs.firsts[1:], len(batch.entries)]
        sent.append([batch.entries[a:b] for a, b in zip(batch.packs.firsts, ends, strict=True)])
    assert [len(records) for records in sent] == [-(-3 // per_record)] * 2
    start = base[-1][0] + 1  # the records after the head both folded
    balances = set()
    for order in _interleavings(*sent):
        folded = PartitionState(0)
        kept = set()
        log = [*base, *((offset, e) for offset, record in enumerate(order, start=start)
                        for e in record)]
        for offset, e in log:
            if fold_entry(folded, offset, e, WALLET_FOLD, e.recorded_at) and offset >= start:
                kept.add(writer_of(e))
        assert kept == {writer_of(order[0][0])}  # the first to land after the head: all of it
        look = Lookups(folded.kv)
        account = look.account("p1")
        history = [look.tx_at("p1", seq) for seq in range(1, account.tx_count + 1)]
        assert all(tx is not None for tx in history), order
        assert sum(tx.signed_amount for tx in history) == account.balance
        assert [look.seq_of("p1", tx.tx_id) for tx in history] == list(
            range(1, account.tx_count + 1))
        # what the log did not apply (a writer's later entries chained on its void ones)
        # the writers decide again on the fold, as the kernel does after a lost race
        rest = [e for e in cmds if not folded.applied(COMMANDS, 0, e.message.offset)]
        again = decide(deciders["owner"], folded, rest, "owner")
        again.land()
        account = Lookups(folded.kv).account("p1")
        balances.add((account.balance, account.tx_count))
    assert balances == {(3_300, 3)}


# --- the kernel's own batch step, over an in-memory LogIO ----------------------------------

class FakeIO:
    """The kernel's `LogIO` over one partition of wallet.ledger held in memory: what is sent
    lands at the next offset (after anything `foreign` says another writer sends first);
    `steps` logs the publishes, and how many waiters were answered at each."""

    def __init__(self, waiting: list[asyncio.Future] | None = None,
                 broker: Callable[[], datetime] | None = None) -> None:
        self.records: list[tuple[int, bytes]] = []
        self.appended: list[datetime] = []  # when the broker appended each record
        # the broker's clock (by default one that never holds a writer's back)
        self.broker = broker or (lambda: BROKER_AHEAD)
        self.foreign: list[bytes] = []  # sent by another writer just before our next send
        self.steps: list[tuple] = []
        self.waiting: list[asyncio.Future] = waiting or []

    def append(self, value: bytes) -> int:
        self.records.append((len(self.records), value))
        self.appended.append(self.broker())
        return len(self.records) - 1

    async def send(self, topic, partition, records):
        assert (topic, partition) == (WALLET_LEDGER_TOPIC, 0)
        while self.foreign:
            self.append(self.foreign.pop(0))
        return [Landed(o, self.appended[o]) for o in (self.append(v) for _, v in records)]

    async def read(self, topic, partition, start):
        return [Logged(o, v, self.appended[o]) for o, v in self.records if o >= start], len(
            self.records)

    async def end(self, topic, partition):
        return len(self.records)

    async def publish(self, records):
        self.steps.append(("publish", list(records),
                           sum(f.done() for f in self.waiting)))

    @property
    def published(self) -> list[Record]:
        return [r for step in self.steps for r in step[1]]

    def logged(self) -> list[tuple[int, LedgerEntry]]:
        """(offset, entry) for every entry of the ledger, in order: a pack's entries all at
        its record's offset (`own_log.entries_of`)."""
        return [(o, e) for o, v in self.records
                for e in entries_of(v, LedgerEntry.model_validate_json)]

    def entries(self) -> list[LedgerEntry]:
        return [e for _, e in self.logged()]


@pytest.fixture
def io() -> FakeIO:
    return FakeIO()


@pytest.fixture
def own(io) -> OwnLog:
    log = OwnLog("wallet", WALLET_LEDGER_TOPIC, WALLET_FOLD, LedgerEntry.model_validate_json,
                 lambda e: e.account.player_id.encode(), "w0")
    log.io = io
    return log


def kernel_batch(own: OwnLog, io: FakeIO, batches, replies, events) -> list:
    """`kernel.apply_batch` over `events`, a waiter per event; the answers."""
    async def go():
        io.waiting = [replies.expect(f"r{e.message.offset}") for e in events]
        await kernel.apply_batch(own, events, batches.decide, batches.answer)
        return [f.result() if f.done() else None for f in io.waiting]

    return asyncio.run(go())


def test_the_kernel_answers_only_after_the_entries_outputs_are_published(
        own, io, batches, replies):
    answers = kernel_batch(own, io, batches, replies, commands(
        CreateAccount(player_id="p1", currency="IDR"),
        Deposit(player_id="p1", request_id="d1", amount=10_000), bet("b1", 3_000)))
    assert [a.status for a in answers] == [201, 201, 201]
    ((_, outputs, answered_then),) = io.steps  # one publish for the batch...
    assert answered_then == 0  # ... and nobody was answered before it returned
    assert [t for t, _, _ in outputs] == [WALLET_TRANSACTIONS_TOPIC, WALLET_TRANSACTIONS_TOPIC,
                                          BETS_PLACED_TOPIC]
    assert [e.command for e in io.entries()] == ["create_account", "deposit", "place_bet"]
    assert len(io.records) == 1  # the batch's three entries in one record (a pack)
    state = own.states[0]
    # the head is the pack's offset; every entry in it published
    assert (state.head, state.published_through, state.unpublished) == (0, 0, [])
    assert balance(state) == 7_000


def test_the_kernel_skips_a_redelivered_record_and_a_resend_gets_the_first_answer(
        own, io, batches, replies):
    events = commands(CreateAccount(player_id="p1", currency="IDR"),
                      Deposit(player_id="p1", request_id="d1", amount=1_000))
    first = kernel_batch(own, io, batches, replies, events)
    # the same record again (Faust handing on from behind the log): nothing is written, and
    # it is not this decision's to answer (a waiter is told to retry)
    again = kernel_batch(own, io, batches, replies, events[1:])
    assert (again[0].status, again[0].body["error"]["code"]) == (503, "rebalancing")
    assert len(io.entries()) == 2 and len(io.records) == 1  # the first batch's, one pack
    # the request sent again (a new record): answered from the log as it was the first time
    resent = kernel_batch(own, io, batches, replies, commands(
        Deposit(player_id="p1", request_id="d1", amount=1_000), first_offset=2))
    assert (first[1].status, resent[0].status) == (201, 200)
    assert resent[0].body == first[1].body
    assert len(io.entries()) == 2 and len(io.records) == 1 and balance(own.states[0]) == 1_000


def test_a_worker_recovering_a_partition_folds_it_and_publishes_its_outbox_again(
        own, io, batches, replies):
    """A worker crashed after its entries landed, before their outputs were acknowledged:
    the next owner folds the log and publishes them again (consumers are idempotent)."""
    kernel_batch(own, io, batches, replies, commands(
        CreateAccount(player_id="p1", currency="IDR"),
        Deposit(player_id="p1", request_id="d1", amount=500)))
    heir = OwnLog("wallet", WALLET_LEDGER_TOPIC, WALLET_FOLD, LedgerEntry.model_validate_json,
                  lambda e: e.account.player_id.encode(), "heir")
    heir.io = io
    io.steps.clear()
    state = asyncio.run(heir.recover(0))
    assert balance(state) == 500 and state.resume_at(COMMANDS, 0) == 2
    # the entries carry published_through as their writer knew it (-1: nothing yet)
    assert [t for t, _, _ in io.published] == [WALLET_TRANSACTIONS_TOPIC]
    # both entries in one record (a pack) at offset 0: published through it
    assert [o for o, _ in io.logged()] == [0, 0]
    assert state.published_through == state.head == 0 and state.unpublished == []


def test_the_kernel_decides_again_when_another_writer_came_in_between(
        own, io, batches, replies):
    """A zombie wrote the same deposit just before our entry landed: ours is void, the
    partition is folded again and the deposit is the zombie's: the money moved once, and
    no answer contradicts the log."""
    kernel_batch(own, io, batches, replies,
                 commands(CreateAccount(player_id="p1", currency="IDR")))
    deposit = commands(Deposit(player_id="p1", request_id="d1", amount=700), first_offset=1)
    zombie = PartitionState(0)
    for offset, entry in io.logged():
        fold_entry(zombie, offset, entry, WALLET_FOLD, entry.recorded_at)
    theirs = decide(CommandBatches(Replies(), ManualClock(NOW)), zombie, deposit, "zombie")
    io.foreign.append(theirs.batch.entries[0].model_dump_json().encode())
    io.steps.clear()
    (answer,) = kernel_batch(own, io, batches, replies, deposit)
    # the zombie's entry applied the command: not ours to answer, the waiter retries...
    assert (answer.status, answer.body["error"]["code"]) == (503, "rebalancing")
    assert [writer_of(e) for e in io.entries()] == ["w0", "zombie", "w0"]  # ours: void
    state = own.states[0]
    assert (state.head, state.void, balance(state)) == (1, 1, 700)
    # the zombie's movement is published once (the recovery's outbox), ours never
    assert [json.loads(v)["tx_id"] for t, _, v in io.published
            if t == WALLET_TRANSACTIONS_TOPIC] == ["deposit:d1"]
    # ... and its retry is answered as the log says: the deposit, once
    (retry,) = kernel_batch(own, io, batches, replies, commands(
        Deposit(player_id="p1", request_id="d1", amount=700), first_offset=2))
    assert retry.status == 200 and retry.body["balance"] == 700 and len(io.records) == 3


def test_a_withdrawal_beyond_the_balance_is_refused_and_writes_nothing(batches, replies):
    state = PartitionState(0)
    answers, outputs, step = run(batches, replies, state, commands(
        CreateAccount(player_id="p1", currency="IDR"),
        Withdraw(player_id="p1", request_id="w1", amount=1),
        Deposit(player_id="p1", request_id="d1", amount=900)))
    assert [a.status for a in answers] == [201, 402, 201]
    assert [e.source.offset for e in step.batch.entries] == [0, 2]
    assert balance(state) == 900


def test_an_answer_the_log_does_not_back_is_retry_and_counts_no_money(batches, replies):
    """Another worker applied the command meanwhile: its waiter here is told to retry
    (the retry reaches that worker), and this worker's metrics count nothing for it."""
    from prometheus_client import REGISTRY

    def deposits() -> float:
        return REGISTRY.get_sample_value("croupier_money_minor_units_total",
                                         {"kind": "deposit", "currency": "IDR"}) or 0.0

    state = PartitionState(0)
    run(batches, replies, state, commands(CreateAccount(player_id="p1", currency="IDR")))
    events = commands(Deposit(player_id="p1", request_id="d1", amount=400), first_offset=1)
    before = deposits()

    async def go():
        waiting = replies.expect("r1")
        (event, decided), = decide(batches, state, events).decided
        batches.answer(event, decided, False)
        return waiting.result()

    answer = asyncio.run(go())
    assert (answer.status, answer.body["error"]["code"]) == (503, "rebalancing")
    assert deposits() == before and len(replies) == 0
