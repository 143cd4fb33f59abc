"""The wallet's Faust app: tables, topics and the agents that own every balance.

One agent (`accounts_agent`) is the only writer of accounts: it reads the private
commands topic keyed by player id, in batches. HTTP requests and the bet endings
bet-settlement publishes both become commands there, so one player's money moves
strictly in order, and the changelog of each table stays co-partitioned with the
stream that writes it.

State that does not grow with history (every key lives in the player's partition):
- `accounts`      `<player>`           -> Account (balance, tx_count): compact
- `transactions`  `<player>:<seq>`     -> WalletTransaction (paged history): compact
- `tx-ids`        `<player>:<tx_id>`   -> seq (idempotency): compact,delete
- `bets`          `<player>:<bet_id>`  -> BetRecord (retry answers, ending once):
                                          compact,delete
- `spots`         `<player>/<table>/<round>/<bet>/<position>` -> SpotRecord (seed 002's
                                          table maximum per spot per round): compact,delete
The per-item idempotency keys expire from their changelogs after twice the topics'
retention (`ITEM_RETENTION_MS`); nothing can be redelivered from older than that.

Several workers: each owns some partitions of the commands topic; the HTTP views
forward a player's request to the worker owning the player's partition
(`services.infra.routing`). Every worker folds the whole of `table.events` itself into
an in-memory view (`TableViews`), so any worker can refuse a bet at the door; when it
reads a round's BettingClosed it writes an intake mark on `bets.placed` between two of its
agent's batches, for the partitions it owns (docs/decisions/acceptance.md).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from typing import Any

import faust
from aiokafka import AIOKafkaConsumer, TopicPartition

from services.infra import metrics, observability
from services.infra.batching import flush_all, processing, publish_all, run_batches
from services.infra.clock import SystemClock
from services.infra.dead_letters import flag_table, give_up_on
from services.infra.faust_app import make_app, recovering
from services.infra.kafka_security import aiokafka_options
from services.infra.replies import Replies
from services.infra.settings import Settings, get_settings
from services.wallet import counting, handlers
from services.wallet.commands import (
    ENVELOPE,
    CreateAccount,
    Deposit,
    EndBet,
    Envelope,
    PlaceBet,
    ReverseSettlement,
    Withdraw,
)
from services.wallet.rounds_view import TableView, fold_verified
from shared.events.bet_events import (
    BET_DECISION,
    BET_ENDING,
    BetRejected,
    IntakeMark,
    SettlementReversed,
)
from shared.events.table import BettingClosed, parse_table_event
from shared.events.wallet_events import WalletTransaction
from shared.ledger import RECENT_TXS, UNCOVERED_DEBITS, Account, BetRecord, SpotRecord

log = logging.getLogger("croupier.wallet")
settings: Settings = get_settings()
clock = SystemClock()
# a crashed worker's partitions are reassigned after 10 s instead of Faust's 60 s
# linger: under load, the many small records (commands, changelogs, transactions) of a
# moment share one produce request instead of one request each
app: faust.App = make_app("wallet", settings, broker_session_timeout=10,
               broker_heartbeat_interval=1, producer_linger=0.002)
observability.install(app, "wallet", settings, invariants=metrics.WALLET_INVARIANTS)
counting.init_metrics()

# idempotency keys stay answerable for at least the topics' retention, then may expire
ITEM_RETENTION_MS = 2 * settings.retention_ms
_tables: dict[str, Any] = dict(partitions=settings.topic_partitions, default=None,
               schema=faust.Schema(key_serializer="json", value_serializer="json"))
_expiring = {"cleanup.policy": "compact,delete", "retention.ms": str(ITEM_RETENTION_MS)}
accounts = app.Table("accounts", **_tables)
transactions = app.Table("transactions", **_tables)  # "<player>:<seq>" -> tx
tx_ids = app.Table("tx-ids", extra_topic_configs=_expiring, **_tables)  # "<p>:<tx_id>" -> seq
bets = app.Table("bets", extra_topic_configs=_expiring, **_tables)  # "<p>:<bet_id>" -> record
spots = app.Table("spots", extra_topic_configs=_expiring, **_tables)  # spot key -> SpotRecord

COMMANDS_TOPIC = f"{settings.instance}-wallet-commands"
commands_topic = app.topic(COMMANDS_TOPIC, key_type=bytes, value_type=bytes,
                           internal=True, partitions=settings.topic_partitions)
endings_topic = app.topic("bets.decisions", "bets.settled", key_type=bytes, value_type=bytes)
TABLE_EVENTS = "table.events"
VIEW_HORIZON_S = 3600  # a worker starts folding table.events from this long ago


# futures the web views wait on, resolved by the agent in this same process (the views only
# send commands for players whose partition this worker owns)
replies: Replies[handlers.Answer, None] = Replies()


def tx_key(player_id: str, seq: int) -> str:
    return f"{player_id}:{seq:010d}"


def item_key(player_id: str, item: str) -> str:
    return f"{player_id}:{item}"


def tx_at(player_id: str, seq: int) -> WalletTransaction | None:
    raw = transactions.get(tx_key(player_id, seq))
    return None if raw is None else WalletTransaction.model_validate(raw)


def seq_of(player_id: str, tx_id: str) -> int | None:
    return tx_ids.get(item_key(player_id, tx_id))


def bet_of(player_id: str, bet_id: str) -> BetRecord | None:
    raw = bets.get(item_key(player_id, bet_id))
    return None if raw is None else BetRecord.model_validate(raw)


def spot_of(key: str) -> SpotRecord | None:
    raw = spots.get(key)
    return None if raw is None else SpotRecord.model_validate(raw)


LOOKUPS = handlers.Lookups(tx_at=tx_at, seq_of=seq_of, bet_of=bet_of, spot_of=spot_of)


def load_account(player_id: str) -> Account | None:
    raw = accounts.get(player_id)
    return None if raw is None else Account.model_validate(raw)


def handle(account: Account | None, env: Envelope, now: datetime) -> handlers.Outcome:
    cmd = env.command
    if isinstance(cmd, CreateAccount):
        return handlers.create_account(account, cmd)
    if isinstance(cmd, Deposit | Withdraw):
        return handlers.operator_movement(account, cmd, now, LOOKUPS)
    if isinstance(cmd, PlaceBet):
        return handlers.place_bet(account, cmd, now, LOOKUPS)
    if isinstance(cmd, ReverseSettlement):
        return handlers.reverse_settlement(account, cmd, now, LOOKUPS)
    return handlers.end_bet(account, cmd, now, LOOKUPS)


def store(player_id: str, outcome: handlers.Outcome) -> None:
    """Write what a command changed, each fact under its own key (per-item facts first,
    the account last)."""
    for seq, tx in [*zip(outcome.seqs, outcome.txs, strict=True), *outcome.restored]:
        transactions[tx_key(player_id, seq)] = tx.model_dump(mode="json")
        tx_ids[item_key(player_id, tx.tx_id)] = seq
    for bet_id, record in outcome.bets.items():
        bets[item_key(player_id, bet_id)] = record.model_dump(mode="json")
    for key, spot in outcome.spots.items():
        spots[key] = spot.model_dump(mode="json")
    if outcome.account is not None:
        accounts[player_id] = outcome.account.model_dump(mode="json")


async def send_command(env: Envelope) -> None:
    await commands_topic.send(key=env.command.player_id.encode(),
                              value=env.model_dump_json().encode())


def command_record(env: Envelope) -> tuple[str, bytes, bytes]:
    return COMMANDS_TOPIC, env.command.player_id.encode(), env.model_dump_json().encode()


def apply_command(env: Envelope, now: datetime) -> handlers.Outcome:
    player_id = env.command.player_id
    outcome = guarded(handle(load_account(player_id), env, now))
    store(player_id, outcome)
    return outcome


@app.agent(commands_topic)
async def accounts_agent(stream):
    """A batch at a time: apply every command in order, publish every record they
    produced, wait for all acks once, then answer (a 201 means "debited and in the log")."""
    await run_batches(stream, apply_batch)


class Pending:
    """What the commands applied since the last flush owe: records to publish, answers."""

    def __init__(self) -> None:
        self.done: list[tuple[Envelope, handlers.Outcome]] = []
        self.records: list[tuple[str, bytes, bytes]] = []
        self.per_player: Counter[str] = Counter()

    def add(self, env: Envelope, outcome: handlers.Outcome) -> None:
        self.records.extend((name, key.encode(), model.model_dump_json().encode())
                            for name, key, model in outcome.publish)
        self.done.append((env, outcome))
        self.per_player[env.command.player_id] += 1

    def full_for(self, player_id: str) -> bool:
        """The account remembers only its last RECENT_TXS movements: flush before a player's
        commands since the last flush could outnumber them."""
        return self.per_player[player_id] >= RECENT_TXS


async def flush(pending: Pending) -> None:
    """Publish what the commands produced, wait until every record they wrote (outputs and
    table changelogs alike) is acknowledged, then answer. After this, a crash can only
    ever leave part of the commands applied since. (Also mid-batch, when a player's
    commands fill the account's recent window: run_batches' own flush comes only at the
    batch's end.)"""
    await publish_all(app, pending.records)
    await flush_all(app.producer)
    answered = clock.now()
    for env, outcome in pending.done:
        counting.record(env, outcome)
        counting.observe_latency(env.command, outcome, answered)
        replies.resolve(env.reply_id, outcome.answer)


# held while a batch is applied and flushed: an intake mark is stamped and sent between
# batches, so every bet stamped before it is acknowledged first, and every later one is
# stamped after it
batch_lock = asyncio.Lock()


async def apply_batch(events) -> None:
    async with batch_lock:
        await _apply_batch(events)


async def _apply_batch(events) -> None:
    now = clock.now()
    pending = Pending()
    for event in events:
        try:
            env = ENVELOPE.validate_json(event.value)
        except Exception as error:  # unreadable: dead-lettered, nothing moved
            pending.records.append(give_up_on("wallet", event, error, now))
            continue
        if pending.full_for(env.command.player_id):
            await flush(pending)
            pending = Pending()
        with processing(event):
            try:
                outcome = apply_command(env, now)
            except Exception as error:  # never stop the consumer on one command
                log.exception("command %s for %r could not be applied (nothing stored)",
                              env.command.type, env.command.player_id)
                pending.records.append(give_up_on("wallet", event, error, now))
                outcome = handlers.Outcome(handlers.Answer.error(
                    500, "command_failed", "the command could not be applied; retrying with "
                                           "the same id is safe"))
        pending.add(env, outcome)
    await flush(pending)


def guarded(outcome: handlers.Outcome) -> handlers.Outcome:
    """The last line of defence: an account change that would leave a negative balance is
    never stored (the ledger rules make it impossible; if it happens, it is a breach). The
    one exception: a payout reversal (a management void) the balance could not cover, and
    credits after it while the balance is still below zero."""
    if outcome.account is None or outcome.account.balance >= 0:
        return outcome
    if outcome.txs and all(tx.kind in UNCOVERED_DEBITS or tx.signed_amount > 0
                           for tx in outcome.txs):
        return outcome
    log.error("MONEY: a command would leave %r at balance %d; nothing stored",
              outcome.account.player_id, outcome.account.balance)
    return handlers.Outcome(handlers.Answer.error(500, "invariant_breach",
                                                  "the movement would make a balance negative"),
                            breach="negative_balance")


def ending_command(raw: bytes) -> EndBet | ReverseSettlement | None:
    """The wallet's side of a bet-settlement record: refund or pay, or nothing to do."""
    if b'"settlement_reversed"' in raw or b'"bet_settled"' in raw:
        s = BET_ENDING.validate_json(raw)
        if isinstance(s, SettlementReversed):
            return ReverseSettlement(player_id=s.player_id, bet_id=s.bet_id,
                                     reversal_id=s.reversal_id, settlement_id=s.settlement_id,
                                     amount=s.amount, table_id=s.table_id,
                                     round_id=s.round_id)
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


@app.agent(endings_topic)
async def bet_endings_agent(stream):
    """Re-key bet endings by player id onto the commands topic, a batch at a time (the
    batch's offsets are committed only after every command is acknowledged)."""
    await run_batches(stream, forward_endings)


async def forward_endings(events) -> None:
    """Each ending as a command, in order; a record that is not one is dead-lettered."""
    records = []
    for event in events:
        try:
            command = ending_command(event.value)
        except Exception as error:  # the record, not the wallet, failed
            records.append(give_up_on("wallet", event, error, clock.now()))
            continue
        if command is not None:
            records.append(command_record(Envelope(command=command)))
    await publish_all(app, records)


class TableViews:
    """Every table's recent rounds, on every worker whatever partitions it owns: each worker
    folds the whole of `table.events` itself (no consumer group, from VIEW_HORIZON_S ago),
    a batch of records at a time. In memory only: at most KEEP_ROUNDS rounds per table."""

    def __init__(self) -> None:
        self.views: dict[str, TableView] = {}
        self.ready = asyncio.Event()
        # (table_id, round_id) -> None: a round's betting closed
        self.on_close: Callable[[str, str], None] | None = None

    def get(self, table_id: str) -> TableView | None:
        return self.views.get(table_id)

    def apply(self, raw: bytes) -> None:
        """Fold one record; one that cannot be read or folded is skipped, counted and
        logged (game-evaluation and bet-settlement dead-letter the same record)."""
        try:
            event = parse_table_event(raw)
            before = self.views.get(event.table_id)
            after, refused = fold_verified(before, event, settings.table_events_key_bytes,
                                           settings.table_events_accept_unsigned)
            self.views[event.table_id] = after
        except Exception as error:  # noqa: BLE001 - a hostile record must not stop the view
            metrics.MALFORMED.labels("wallet", "table_event").inc()
            log.error("table.events record skipped by the wallet's view: %s: %s",
                      type(error).__name__, str(error)[:300])
            return
        if refused is not None:  # game-evaluation and bet-settlement dead-letter it
            flag_table("wallet", refused, event.table_id)
            return
        if isinstance(event, BettingClosed) and self.ready.is_set() \
                and (before is None or event.seq > before.last_seq):
            self.closed(event.table_id, event.round_id)

    def closed(self, table_id: str, round_id: str) -> None:
        if self.on_close is not None:
            self.on_close(table_id, round_id)

    def caught_up(self) -> None:
        """Ready: rounds closed and not yet completed may still wait for this worker's
        intake mark (it restarted meanwhile): mark them."""
        self.ready.set()
        for view in self.views.values():
            for info in view.rounds.values():
                if info.status == "closed":
                    self.closed(view.table_id, info.round_id)

    async def follow(self, bootstrap: str, horizon_s: float = VIEW_HORIZON_S) -> None:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                    enable_auto_commit=False, auto_offset_reset="earliest",
                                    **aiokafka_options("wallet"))
        await consumer.start()
        try:
            partitions = None
            while not partitions:
                cluster = await consumer._client.fetch_all_metadata()
                partitions = cluster.partitions_for_topic(TABLE_EVENTS)
                if not partitions:
                    log.warning("waiting for topic %s", TABLE_EVENTS)
                    await asyncio.sleep(1)
            tps = [TopicPartition(TABLE_EVENTS, p) for p in sorted(partitions)]
            consumer.assign(tps)
            since = int((clock.now().timestamp() - horizon_s) * 1000)
            starts = await consumer.offsets_for_times({tp: since for tp in tps})
            for tp in tps:
                if starts.get(tp) is None:
                    await consumer.seek_to_end(tp)
                else:
                    consumer.seek(tp, starts[tp].offset)
            ends = await consumer.end_offsets(tps)
            while True:
                got = await consumer.getmany(timeout_ms=200, max_records=2000)
                for records in got.values():
                    for record in records:
                        self.apply(record.value)
                if not self.ready.is_set():
                    positions = [await consumer.position(tp) for tp in tps]
                    if all(pos >= ends[tp] for pos, tp in zip(positions, tps, strict=True)):
                        log.info("table views caught up: %d tables", len(self.views))
                        self.caught_up()
        finally:
            await consumer.stop()


table_views = TableViews()


def owned_command_partitions() -> tuple[int, ...]:
    """The wallet-commands partitions (players) this worker's agent applies."""
    return tuple(sorted(tp.partition for tp in app.assignor.assigned_actives()
                        if tp.topic == COMMANDS_TOPIC))


MARK_TRIES = 20


async def send_mark(table_id: str, round_id: str) -> None:
    """This worker's intake mark for a round whose betting closed: taken between batches,
    so every bet its agent stamped before `through` is already acknowledged on bets.placed,
    and every bet it stamps later is stamped after `through` (docs/decisions/acceptance.md)."""
    for _ in range(MARK_TRIES):  # (re)starting: wait for the assignment and the recovery
        if owned_command_partitions() and not recovering(app):
            break
        await asyncio.sleep(0.5)
    async with batch_lock:
        partitions = owned_command_partitions()
        if not partitions:
            log.info("no wallet partitions here: no intake mark for %s/%s", table_id, round_id)
            return
        mark = IntakeMark(table_id=table_id, round_id=round_id, partitions=partitions,
                          partition_count=settings.topic_partitions,
                          worker=f"{settings.instance}-wallet-{settings.worker_id}",
                          through=clock.now())
        await publish_all(app, [("bets.placed", table_id.encode(),
                                 mark.model_dump_json().encode())])


_marks: set[asyncio.Task] = set()


def schedule_mark(table_id: str, round_id: str) -> None:
    task = asyncio.ensure_future(send_mark(table_id, round_id))
    _marks.add(task)
    task.add_done_callback(_mark_sent)


def _mark_sent(task: asyncio.Task) -> None:
    _marks.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.error("intake mark not sent (the round closes at its result instead): %s",
                  task.exception())


table_views.on_close = schedule_mark


def load_view(table_id: str) -> TableView | None:
    return table_views.get(table_id)


@app.task
async def follow_table_events() -> None:
    while True:
        try:
            await table_views.follow(settings.bootstrap_servers)
        except asyncio.CancelledError:
            raise
        except Exception:  # the broker went away: start over (the view is idempotent on seq)
            log.exception("following table.events failed; retrying")
            await asyncio.sleep(1)


from services.wallet import views  # noqa: E402,F401  (registers the HTTP routes)
