"""The wallet's Faust app: its own log, topics and the agents that own every balance.

One loop (`accounts_agent`, on the kernel) is the only writer of accounts: it reads, in
batches, the private commands topic (HTTP requests) and wallet.endings (bet-settlement's
endings of bets), both keyed by player id and co-partitioned, so one player's money moves
strictly in the order of each.

The wallet's state is the fold of its ledger, `wallet.ledger` (one entry per command that
changed anything, on the partition of the command's own partition of the commands topic):
accounts, the paged history, the applied tx ids, the bets and the spot totals are what
the entries wrote (`ledger_fold`). The agent runs on the kernel
(`croupier.services.infra.kernel`): a worker assigned a partition folds its ledger
partition first and resumes the commands after the last one its ledger applied; it
answers only for entries it saw land where their chain said (docs/decisions/ledger.md).
Every `CROUPIER_SNAPSHOT_EVERY_ENTRIES` entries (or seconds) a partition's folded state is
also written to `wallet.ledger.snapshots` (`WALLET_CODEC`), so a worker on an empty disk
folds only the ledger after the newest snapshot the ledger confirms
(docs/decisions/snapshots.md).

The app only wires: the own log (`own`) and its read side (`store`), the decisions the
agent makes (`batches`), the balance guard (`balance_guard`), the table views
(`table_views`), the intake marks (`intake_marks`), the reply futures
(`croupier.services.infra.replies`), the HTTP routes (`views`). `build_app` builds it all
when the worker starts; importing this module builds nothing.

Several workers: each owns some partitions of the commands topic; the HTTP views
forward a player's request to the worker owning the player's partition
(`croupier.services.infra.routing`). Every worker folds the whole of `table.events` itself into
an in-memory view (`TableViews`), so any worker can refuse a bet at the door; when it
reads a round's BettingClosed it writes an intake mark on `bets.placed` between two of its
agent's batches, for the partitions it owns (docs/decisions/acceptance.md).
"""

from __future__ import annotations

import uuid

import faust
from kafka.partitioner.default import murmur2

from croupier.services.infra import metrics, observability
from croupier.services.infra.auth import Authenticator
from croupier.services.infra.clock import SystemClock
from croupier.services.infra.faust_app import make_app
from croupier.services.infra.kernel import OwnLog, follow, run_own_log
from croupier.services.infra.replies import Replies
from croupier.services.infra.settings import Settings, get_settings
from croupier.services.infra.snapshots import SnapshotStore
from croupier.services.wallet import handlers, money_metrics
from croupier.services.wallet.batches import CommandBatches
from croupier.services.wallet.commands import Envelope, OperatorAnswered
from croupier.services.wallet.intake_marks import IntakeMarks
from croupier.services.wallet.ledger_fold import WalletFold
from croupier.services.wallet.operator_calls import CallerSettings, OperatorCaller
from croupier.services.wallet.seamless import SeamlessRules
from croupier.services.wallet.snapshot_codec import WALLET_CODEC
from croupier.services.wallet.store import Store
from croupier.services.wallet.table_views import TableViews
from croupier.shared.events.wallet_ledger import LedgerEntry
from croupier.shared.topics import (
    TABLE_EVENTS_TOPIC,
    WALLET_ENDINGS_TOPIC,
    WALLET_LEDGER_TOPIC,
    wallet_commands_topic,
)

clock = SystemClock()

# Built by build_app when the worker starts:
settings: Settings
app: faust.App
COMMANDS_TOPIC: str  # the private commands topic, `<instance>-wallet-commands`
commands_topic: faust.TopicT
own: OwnLog  # the worker's folded partitions of wallet.ledger
store: Store
# futures the web views wait on, resolved by the agent in this same process (the views only
# send commands for players whose partition this worker owns)
replies: Replies[handlers.Answer, None]
batches: CommandBatches
table_views: TableViews
marks: IntakeMarks
auth: Authenticator


def build_app(service_settings: Settings | None = None) -> faust.App:
    """The worker's Faust app: its own log, topics, agents, task and HTTP routes."""
    global settings, app, COMMANDS_TOPIC, commands_topic
    global own, store, replies
    global batches, table_views, marks, auth
    settings = service_settings or get_settings()
    # the state keeps a window of history (refused below 24 h, before anything starts)
    fold = WalletFold(settings.wallet_state_window())
    # a crashed worker's partitions are reassigned after 10 s instead of Faust's 60 s
    # linger: under load, the many small records (commands, entries, transactions) of a
    # moment share one produce request instead of one request each
    app = make_app("wallet", settings, broker_session_timeout=10,
                   broker_heartbeat_interval=1, producer_linger=0.002)
    observability.install(app, "wallet", settings, invariants=metrics.WALLET_INVARIANTS)
    money_metrics.init_metrics()

    COMMANDS_TOPIC = wallet_commands_topic(settings.instance)
    commands_topic = app.topic(COMMANDS_TOPIC, key_type=bytes, value_type=bytes,
                               internal=True, partitions=settings.topic_partitions)
    # the writer's name is unique to this process's life, so no two lives share an entry id
    writer = f"{settings.instance}-wallet-{settings.worker_id}-{uuid.uuid4().hex[:8]}"
    own = OwnLog("wallet", WALLET_LEDGER_TOPIC, fold, LedgerEntry.model_validate_json,
                 lambda entry: entry.account.player_id.encode(), writer)
    own.snapshots = SnapshotStore(WALLET_LEDGER_TOPIC, WALLET_CODEC, writer,
                                  every_entries=settings.snapshot_every_entries,
                                  every_seconds=settings.snapshot_every_seconds)
    store = Store(own, partition_of(settings.topic_partitions))
    replies = Replies()
    batches = CommandBatches(replies, clock)
    if settings.wallet_mode == "seamless":  # the operator's wallet holds the balance
        caller = OperatorCaller(CallerSettings.from_settings(settings), send_answer, clock,
                                owns=lambda player: store.partition_of(player) in own.owned)
        batches = CommandBatches(replies, clock,
                                 SeamlessRules(settings.operator_wallet_zero_credits),
                                 on_calls=caller.start_all)
        own.on_recovered.append(caller.resume)
    table_views = TableViews(settings.table_events_key_bytes,
                             settings.table_events_accept_unsigned, clock)
    marks = IntakeMarks(app, settings, lambda: tuple(sorted(own.owned)), batches.lock, clock)
    table_views.on_close = marks.schedule
    auth = Authenticator.from_settings(settings)

    app.task(accounts_agent)
    app.task(follow_table_events)
    from croupier.services.wallet import views  # the HTTP routes (views imports this module)
    views.register(app)
    return app


def partition_of(partitions: int):
    """A player's partition of the commands topic, as the producer's partitioner puts it."""
    def of(player_id: str) -> int:  # Kafka's default: murmur2 of the key, positive, mod n
        return (murmur2(player_id.encode()) & 0x7FFFFFFF) % partitions

    return of


async def accounts_agent() -> None:  # a task (build_app registers it)
    """A batch at a time, on the kernel: decide every command, write its ledger entry,
    verify and fold the entries, publish their outputs, then answer (a 201 means "debited
    and in the log")."""
    await run_own_log(app, [COMMANDS_TOPIC, WALLET_ENDINGS_TOPIC], own, batches.decide,
                      batches.answer, lock=batches.lock)


async def follow_table_events() -> None:  # a task (build_app registers it)
    """Every table's recent rounds, on the kernel's loop for views every worker keeps whole."""
    async def apply(batch) -> None:
        table_views.apply_batch(batch)

    await follow(app, TABLE_EVENTS_TOPIC, table_views.since_ms, apply, table_views.caught_up)


async def send_answer(answered: OperatorAnswered) -> None:
    """Seamless mode: an operator's answer, to be recorded by the accounts agent."""
    await send_command(Envelope(command=answered))


async def send_command(env: Envelope) -> None:
    """Put an HTTP request's command on the commands topic, keyed by its player."""
    await commands_topic.send(key=env.command.player_id.encode(),
                              value=env.model_dump_json().encode())
