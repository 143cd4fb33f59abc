"""The wallet's accounts agent without a broker (issue 13, item 6): the real batch code
(`CommandBatches`: `apply_batch`, `Pending`, `flush`) and the agent's own body over
`run_batches`, with the
Faust tables as dicts and the producer as a test double (tests/unit/agent_loop_support.py).

What a player relies on: one player's commands apply in the order they were sent, a 201
means the movement is in the log (published and acknowledged before anyone is answered),
and one bad command never stops the others."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import pytest

from croupier.services.infra.clock import ManualClock
from croupier.services.infra.replies import Replies
from croupier.services.wallet import app as wallet
from croupier.services.wallet import batches
from croupier.services.wallet.batches import CommandBatches
from croupier.services.wallet.commands import CreateAccount, Deposit, Envelope, PlaceBet, Withdraw
from croupier.services.wallet.ledger import RECENT_TXS
from croupier.services.wallet.store import Store
from croupier.shared.events.dead_letters import DeadLetter
from tests.unit.agent_loop_support import Broker, Event, built_app, run_agent

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
TABLES = ("accounts", "transactions", "tx_ids", "bets", "spots")


@pytest.fixture
def tables(monkeypatch) -> dict[str, dict]:
    """The agent's five tables as dicts (one partition's store of a running worker)."""
    app = built_app(wallet)
    stores: dict[str, dict] = {name: {} for name in TABLES}
    replies: Replies = Replies()
    monkeypatch.setattr(wallet, "replies", replies)
    monkeypatch.setattr(wallet, "batches", CommandBatches(app, Store(**stores), replies,
                                                          ManualClock(NOW)))
    return stores


@pytest.fixture
def broker(monkeypatch) -> Broker:
    fake = Broker()
    monkeypatch.setattr(batches, "publish_all", fake.publish_all)
    monkeypatch.setattr(batches, "flush_all", fake.flush_all)
    return fake


def commands(*cmds, first_offset: int = 0) -> list[Event]:
    """Each command as the HTTP view sends it (replying to `r<offset>`), at consecutive
    offsets of the commands topic; a `bytes` item is a record as it stands."""
    out = []
    for i, cmd in enumerate(cmds, start=first_offset):
        value = cmd if isinstance(cmd, bytes) else Envelope(
            reply_id=f"r{i}", command=cmd).model_dump_json().encode()
        out.append(Event(wallet.COMMANDS_TOPIC, i, b"p1", value))
    return out


def bet(bet_id: str, stake: int, player: str = "p1") -> PlaceBet:
    return PlaceBet(player_id=player, bet_id=bet_id, table_id="T1", round_id="R1",
                    bet="player", stake=stake)


def apply_batch_answering(events: list[Event], broker: Broker) -> list:
    """Run `apply_batch` with a reply awaited for every event, as the HTTP views wait;
    returns the answers (None: never answered)."""
    async def run() -> list:
        waiting = [wallet.replies.expect(f"r{e.message.offset}") for e in events]
        await wallet.batches.apply_batch(events)
        return [f.result() if f.done() else None for f in waiting]

    return asyncio.run(run())


def balance(tables, player: str = "p1") -> int:
    return tables["accounts"][player]["balance"]


def published(broker: Broker, topic: str) -> list[dict]:
    return [json.loads(v) for t, _, v in broker.published if t == topic]


def test_a_batchs_commands_are_applied_in_the_order_they_were_sent(tables, broker):
    batch = commands(CreateAccount(player_id="p1", currency="IDR"),
                     Deposit(player_id="p1", request_id="d1", amount=5_000),
                     bet("b1", 4_000),
                     bet("b2", 2_000),  # 1 000 left: refused
                     Deposit(player_id="p1", request_id="d2", amount=3_000),
                     bet("b3", 2_000))  # after the second deposit: taken
    answers = apply_batch_answering(batch, broker)
    assert [a.status for a in answers] == [201, 201, 201, 402, 201, 201]
    assert balance(tables) == 5_000 - 4_000 + 3_000 - 2_000
    assert [tx["kind"] for tx in published(broker, "wallet.transactions")] == [
        "deposit", "stake_debit", "deposit", "stake_debit"]
    assert [b["bet_id"] for b in published(broker, "bets.placed")] == ["b1", "b3"]


def test_every_answer_waits_until_the_batchs_records_are_published_and_flushed(tables, broker):
    waiting_at_flush = []

    def look() -> None:
        waiting_at_flush.append(len(wallet.replies))

    broker.before_flush.append(look)
    batch = commands(CreateAccount(player_id="p1", currency="IDR"),
                     Deposit(player_id="p1", request_id="d1", amount=10_000),
                     bet("b1", 3_000))
    answers = apply_batch_answering(batch, broker)
    assert waiting_at_flush == [3]  # at the flush all three were still waiting
    assert broker.kinds() == ["publish", "flush"]  # one publish and one flush per batch
    assert [a.status for a in answers] == [201, 201, 201]
    assert len(wallet.replies) == 0
    assert balance(tables) == 7_000


def test_an_unreadable_command_is_dead_lettered_and_the_rest_of_the_batch_applied(tables,
                                                                                   broker):
    batch = commands(CreateAccount(player_id="p1", currency="IDR"),
                     b"\x00 not an envelope \xff",
                     Deposit(player_id="p1", request_id="d1", amount=2_500))
    answers = apply_batch_answering(batch, broker)
    assert [None if a is None else a.status for a in answers] == [201, None, 201]
    assert balance(tables) == 2_500
    (letter,) = [DeadLetter.model_validate_json(v) for t, _, v in broker.published
                 if t == "dead.letters"]
    assert (letter.service, letter.topic, letter.offset) == ("wallet", wallet.COMMANDS_TOPIC, 1)


def test_a_command_that_fails_to_apply_is_dead_lettered_answered_500_and_others_go_on(
        tables, broker):
    tables["accounts"]["p2"] = {"balance": "corrupt"}  # a stored value the code cannot read
    batch = commands(CreateAccount(player_id="p1", currency="IDR"),
                     Deposit(player_id="p2", request_id="d2", amount=1_000),
                     Deposit(player_id="p1", request_id="d1", amount=2_500))
    answers = apply_batch_answering(batch, broker)
    assert [a.status for a in answers] == [201, 500, 201]
    assert answers[1].body["error"]["code"] == "command_failed"
    assert tables["accounts"]["p2"] == {"balance": "corrupt"}  # nothing stored for it
    assert balance(tables) == 2_500
    (letter,) = [DeadLetter.model_validate_json(v) for t, _, v in broker.published
                 if t == "dead.letters"]
    assert letter.offset == 1


def test_a_players_commands_past_the_accounts_recent_window_are_flushed_mid_batch(tables,
                                                                                  broker):
    deposits = [Deposit(player_id="p1", request_id=f"d{i}", amount=100)
                for i in range(RECENT_TXS + 2)]
    answers = apply_batch_answering(
        commands(CreateAccount(player_id="p1", currency="IDR"), *deposits), broker)
    assert [a.status for a in answers] == [201] * (RECENT_TXS + 3)
    assert broker.kinds() == ["publish", "flush", "publish", "flush"]
    first = broker.steps[0][1]
    assert len(first) == RECENT_TXS - 1  # the account and 15 deposits, then the window is full
    assert balance(tables) == 100 * (RECENT_TXS + 2)


def test_a_retried_command_moves_money_once_and_gets_the_same_answer(tables, broker):
    deposit = Deposit(player_id="p1", request_id="d1", amount=1_000)
    first = apply_batch_answering(commands(CreateAccount(player_id="p1", currency="IDR"),
                                           deposit), broker)
    again = apply_batch_answering(commands(deposit, first_offset=2), broker)
    assert [first[1].status, again[0].status] == [201, 200]
    assert first[1].body == again[0].body
    assert balance(tables) == 1_000


def test_the_agent_acks_a_batch_only_after_it_was_applied_published_and_flushed(
        monkeypatch, tables, broker):
    batch = commands(CreateAccount(player_id="p1", currency="IDR"),
                     Withdraw(player_id="p1", request_id="w1", amount=1),  # 402: no money
                     Deposit(player_id="p1", request_id="d1", amount=900))
    run_agent(monkeypatch, wallet.accounts_agent, wallet.app.conf.id, broker, batch)
    assert balance(tables) == 900
    acks = {step[2]: i for i, step in enumerate(broker.steps) if step[0] == "ack"}
    assert list(acks) == [0, 1, 2]  # every command, in order
    deposit = next(i for i, step in enumerate(broker.steps) if step[0] == "publish"
                   and any(b'"deposit"' in value for _, _, value in step[1]))
    assert acks[2] > deposit  # the deposit's offset is acked after its record was published
    for i in acks.values():  # ... and flushed: no ack while a publish waits for its flush
        assert [s[0] for s in broker.steps[:i] if s[0] != "ack"][-1] == "flush"
