"""The wallet's Faust app: tables, topics and the agents that own every balance.

One agent (`accounts_agent`) is the only writer of accounts: it reads the
private commands topic keyed by player id. HTTP requests and the bet endings
bet-settlement publishes both become commands there, so one player's money
moves strictly in order, and the changelog of each table stays co-partitioned
with the stream that writes it.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime

import faust
from pydantic import ValidationError

from services.infra import metrics, observability
from services.infra.clock import SystemClock
from services.infra.faust_app import make_app, topic
from services.infra.settings import get_settings
from services.wallet import counting, handlers
from services.wallet.commands import (
    ENVELOPE,
    CreateAccount,
    Deposit,
    EndBet,
    Envelope,
    PlaceBet,
    Withdraw,
)
from services.wallet.rounds_view import TableView, fold
from shared.events.bet_events import BET_DECISION, BetRejected, BetSettled
from shared.events.table import parse_table_event
from shared.events.wallet_events import WalletTransaction
from shared.ledger import Account

log = logging.getLogger("croupier.wallet")
settings = get_settings()
clock = SystemClock()
# a crashed worker's partitions are reassigned after 10 s instead of Faust's 60 s
app = make_app("wallet", settings, broker_session_timeout=10,
               broker_heartbeat_interval=1)
observability.install(app, "wallet", settings, invariants=metrics.WALLET_INVARIANTS)
counting.init_metrics()

_tables = dict(partitions=settings.topic_partitions, default=None,
               schema=faust.Schema(key_serializer="json", value_serializer="json"))
accounts = app.Table("accounts", **_tables)
transactions = app.Table("transactions", **_tables)  # "<player>:<seq>" -> tx
table_views = app.Table("table-views", **_tables)

COMMANDS_TOPIC = f"{settings.instance}-wallet-commands"
commands_topic = app.topic(COMMANDS_TOPIC, key_type=bytes, value_type=bytes,
                           internal=True, partitions=settings.topic_partitions)
out_topics = {name: topic(app, name) for name in ("wallet.transactions", "bets.placed")}
endings_topic = app.topic("bets.decisions", "bets.settled", key_type=bytes, value_type=bytes)


class Replies:
    """Futures the web views wait on, resolved by the agent in this same process."""

    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future] = {}

    def expect(self, reply_id: str) -> asyncio.Future:
        future = asyncio.get_running_loop().create_future()
        self._waiting[reply_id] = future
        return future

    def resolve(self, reply_id: str | None, answer: handlers.Answer) -> None:
        future = self._waiting.pop(reply_id, None) if reply_id else None
        if future is not None and not future.done():
            future.set_result(answer)

    def forget(self, reply_id: str) -> None:
        self._waiting.pop(reply_id, None)


replies = Replies()


def tx_key(player_id: str, seq: int) -> str:
    return f"{player_id}:{seq:010d}"


def tx_at(player_id: str, seq: int) -> WalletTransaction:
    return WalletTransaction.model_validate(transactions[tx_key(player_id, seq)])


def load_account(player_id: str) -> Account | None:
    raw = accounts.get(player_id)
    return None if raw is None else Account.model_validate(raw)


def load_view(table_id: str) -> TableView | None:
    raw = table_views.get(table_id)
    return None if raw is None else TableView.model_validate(raw)


def handle(account: Account | None, env: Envelope, now: datetime) -> handlers.Outcome:
    cmd = env.command
    if isinstance(cmd, CreateAccount):
        return handlers.create_account(account, cmd)
    if isinstance(cmd, Deposit | Withdraw):
        return handlers.operator_movement(account, cmd, now, tx_at)
    if isinstance(cmd, PlaceBet):
        return handlers.place_bet(account, cmd, now, tx_at)
    return handlers.end_bet(account, cmd, now, tx_at)


async def send_command(env: Envelope) -> None:
    await commands_topic.send(key=env.command.player_id.encode(),
                              value=env.model_dump_json().encode())


@app.agent(commands_topic)
async def accounts_agent(stream):
    async for env in readable(stream, ENVELOPE.validate_json, "command"):
        player_id = env.command.player_id
        outcome = guarded(handle(load_account(player_id), env, clock.now()))
        for tx in outcome.txs:
            transactions[tx_key(player_id, _seq(outcome, tx))] = tx.model_dump(mode="json")
        if outcome.account is not None:
            accounts[player_id] = outcome.account.model_dump(mode="json")
        sent = [await out_topics[name].send(key=key.encode(),
                                            value=model.model_dump_json().encode())
                for name, key, model in outcome.publish]
        for delivery in sent:  # answer only once the bet and its debit are in the log
            await delivery
        counting.record(env, outcome)
        counting.observe_latency(env.command, outcome, clock.now())
        replies.resolve(env.reply_id, outcome.answer)


def guarded(outcome: handlers.Outcome) -> handlers.Outcome:
    """The last line of defence: an account change that would leave a negative balance is
    never stored (the ledger rules make it impossible; if it happens, it is a breach)."""
    if outcome.account is None or outcome.account.balance >= 0:
        return outcome
    log.error("MONEY: a command would leave %r at balance %d; nothing stored",
              outcome.account.player_id, outcome.account.balance)
    return handlers.Outcome(handlers.Answer.error(500, "invariant_breach",
                                                  "the movement would make a balance negative"),
                            breach="negative_balance")


def _seq(outcome: handlers.Outcome, tx: WalletTransaction) -> int:
    return outcome.account.applied[tx.tx_id]


def ending_command(raw: bytes) -> EndBet | None:
    """The wallet's side of a bet-settlement record: refund or pay, or nothing to do."""
    if b'"bet_settled"' in raw:
        s = BetSettled.model_validate_json(raw)
        ending = "voided" if s.outcome == "void_refund" else "settled"
        return EndBet(player_id=s.player_id, bet_id=s.bet_id, ending=ending,
                      returned=s.returned, settlement_id=s.settlement_id,
                      table_id=s.table_id, round_id=s.round_id, result_at=s.result_at,
                      last_card_at=s.last_card_at, last_of_round=s.last_of_round)
    decision = BET_DECISION.validate_json(raw)
    if isinstance(decision, BetRejected):
        return EndBet(player_id=decision.player_id, bet_id=decision.bet_id, ending="rejected",
                      returned=decision.stake, table_id=decision.table_id,
                      round_id=decision.round_id)
    return None


async def readable(stream, parse, what: str):
    """The records of `stream` that parse; the others are logged and counted, never silent."""
    async for value in stream:
        try:
            yield parse(value)
        except ValidationError as exc:
            metrics.MALFORMED.labels("wallet", what).inc()
            log.error("unreadable %s record skipped (nothing moved): %s", what, exc)


@app.agent(endings_topic)
async def bet_endings_agent(stream):
    """Re-key bet endings by player id, onto the commands topic."""
    async for cmd in readable(stream, ending_command, "bet_ending"):
        if cmd is not None:
            await send_command(Envelope(command=cmd))


@app.agent(topic(app, "table.events"))
async def table_events_agent(stream):
    async for event in readable(stream, parse_table_event, "table_event"):
        table_views[event.table_id] = fold(load_view(event.table_id), event).model_dump(
            mode="json")


from services.wallet import views  # noqa: E402,F401  (registers the HTTP routes)
