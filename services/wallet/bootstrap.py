"""The wallet's composition root: `bootstrap(settings)` builds the worker's settings, Faust
app, commands topic, own log and its read side, reply futures, decisions, table views,
intake marks and authenticator, registers its loops and HTTP routes, and returns them in one
`Wallet`. The worker (`__main__`) runs its `app`; the loops (`app`) and the routes
(`views`) are functions of it, never of module globals, and importing this module builds
nothing."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import faust

from services.infra import metrics, observability
from services.infra.auth import Authenticator
from services.infra.clock import Clock, SystemClock
from services.infra.faust_app import make_app, writer_name
from services.infra.kernel import OwnLog
from services.infra.replies import Replies
from services.infra.settings import Settings, get_settings
from services.infra.snapshots import SnapshotStore
from services.wallet import app as worker
from services.wallet import handlers, money_metrics, views
from services.wallet.answer_packs import AnswerPacks
from services.wallet.batches import CommandBatches
from services.wallet.commands import Envelope
from services.wallet.intake_marks import IntakeMarks
from services.wallet.ledger_fold import WalletFold
from services.wallet.operator_calls import CallerSettings, OperatorCaller
from services.wallet.seamless import SeamlessRules
from services.wallet.snapshot_codec import WALLET_CODEC
from services.wallet.store import Store
from services.wallet.table_views import TableViews
from shared.events.wallet_ledger import LedgerEntry
from shared.topics import WALLET_LEDGER_TOPIC, wallet_commands_topic


@dataclass(frozen=True)
class Wallet:
    """Everything the worker and its routes run on, built once by `bootstrap`."""
    settings: Settings
    app: faust.App
    commands_topic: faust.TopicT
    own: OwnLog[LedgerEntry]  # the worker's folded partitions of wallet.ledger
    store: Store
    # futures the web views wait on, resolved by the agent in this same process (the views
    # only send commands for players whose partition this worker owns)
    replies: Replies[handlers.Answer, None]
    batches: CommandBatches
    table_views: TableViews
    auth: Authenticator
    clock: Clock

    @property
    def commands_topic_name(self) -> str:
        """The private commands topic, `<instance>-wallet-commands`."""
        return wallet_commands_topic(self.settings.instance)

    async def send_command(self, env: Envelope) -> None:
        """Put an HTTP request's command on the commands topic, keyed by its player."""
        await worker.send_command(self.commands_topic, env)


def bootstrap(service_settings: Settings | None = None) -> Wallet:
    """The worker's Faust app: its own log, topics, loops and HTTP routes."""
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
    clock = SystemClock()

    commands_topic = app.topic(wallet_commands_topic(settings.instance), key_type=bytes, value_type=bytes,
                               internal=True, partitions=settings.topic_partitions)
    writer = writer_name(settings, "wallet")
    own: OwnLog[LedgerEntry] = OwnLog("wallet", WALLET_LEDGER_TOPIC, fold, LedgerEntry.model_validate_json,
                 lambda entry: entry.account.player_id.encode(), writer)
    own.snapshots = SnapshotStore(WALLET_LEDGER_TOPIC, WALLET_CODEC, writer,
                                  every_entries=settings.snapshot_every_entries,
                                  every_seconds=settings.snapshot_every_seconds)
    store = Store(own, worker.partition_of(settings.topic_partitions))
    replies: Replies[handlers.Answer, None] = Replies()
    batches = CommandBatches(replies, clock)
    if settings.wallet_mode == "seamless":  # the operator's wallet holds the balance
        # the answers packed by partition: one record for those that come together
        packs = AnswerPacks(partial(worker.send_record, commands_topic), store.partition_of)
        caller = OperatorCaller(CallerSettings.from_settings(settings), packs.send, clock,
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

    service = Wallet(settings, app, commands_topic, own, store, replies, batches, table_views,
                     auth, clock)
    worker.register(service)
    views.register(app, service)
    return service
