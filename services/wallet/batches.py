"""What the wallet's two agents do with a batch of records.

The accounts agent applies every command of a batch in order (`CommandBatches`), publishes
every record they produced, waits for all acks once, then answers the HTTP views waiting on
them (a 201 means "debited and in the log"). The endings agent re-keys bet-settlement's
records by player id onto the commands topic (`forward_endings`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from datetime import datetime

import faust

from croupier.services.infra.batching import flush_all, processing, publish_all
from croupier.services.infra.clock import Clock
from croupier.services.infra.dead_letters import give_up_on
from croupier.services.infra.replies import Replies
from croupier.services.wallet import handlers, money_metrics
from croupier.services.wallet.balance_guard import guarded
from croupier.services.wallet.commands import ENVELOPE, Envelope, ending_command
from croupier.services.wallet.ledger import RECENT_TXS
from croupier.services.wallet.store import Store

log = logging.getLogger("croupier.wallet")


def command_record(topic: str, env: Envelope) -> tuple[str, bytes, bytes]:
    """`env` as a record of the commands topic `topic`, keyed by its player."""
    return topic, env.command.player_id.encode(), env.model_dump_json().encode()


class Pending:
    """What the commands applied since the last flush owe: records to publish, answers."""

    def __init__(self) -> None:
        self.done: list[tuple[Envelope, handlers.CommandResult]] = []
        self.records: list[tuple[str, bytes, bytes]] = []
        self.per_player: Counter[str] = Counter()

    def add(self, env: Envelope, outcome: handlers.CommandResult) -> None:
        self.records.extend((name, key.encode(), model.model_dump_json().encode())
                            for name, key, model in outcome.publish)
        self.done.append((env, outcome))
        self.per_player[env.command.player_id] += 1

    def full_for(self, player_id: str) -> bool:
        """The account remembers only its last RECENT_TXS movements: flush before a player's
        commands since the last flush could outnumber them."""
        return self.per_player[player_id] >= RECENT_TXS


class CommandBatches:
    """The accounts agent's batches: the only writer of the store."""

    def __init__(self, app: faust.App, store: Store, replies: Replies[handlers.Answer, None],
                 clock: Clock) -> None:
        self.app = app
        self.store = store
        self.replies = replies
        self.clock = clock
        # held while a batch is applied and flushed: an intake mark is stamped and sent
        # between batches, so every bet stamped before it is acknowledged first, and every
        # later one is stamped after it
        self.lock = asyncio.Lock()

    def apply_command(self, env: Envelope, now: datetime) -> handlers.CommandResult:
        player_id = env.command.player_id
        account = self.store.load_account(player_id)
        outcome = guarded(handlers.handle(account, env, now, self.store.lookups))
        self.store.store(player_id, outcome)
        return outcome

    async def flush(self, pending: Pending) -> None:
        """Publish what the commands produced, wait until every record they wrote (outputs
        and table changelogs alike) is acknowledged, then answer. After this, a crash can
        only ever leave part of the commands applied since. (Also mid-batch, when a
        player's commands fill the account's recent window: run_batches' own flush comes
        only at the batch's end.)"""
        await publish_all(self.app, pending.records)
        await flush_all(self.app.producer)
        answered = self.clock.now()
        for env, outcome in pending.done:
            money_metrics.record(env, outcome)
            money_metrics.observe_latency(env.command, outcome, answered)
            self.replies.resolve(env.reply_id, outcome.answer)

    async def apply_batch(self, events) -> None:
        async with self.lock:
            await self._apply_batch(events)

    async def _apply_batch(self, events) -> None:
        now = self.clock.now()
        pending = Pending()
        for event in events:
            try:
                env = ENVELOPE.validate_json(event.value)
            except Exception as error:  # unreadable: dead-lettered, nothing moved
                pending.records.append(give_up_on("wallet", event, error, now))
                continue
            if pending.full_for(env.command.player_id):
                await self.flush(pending)
                pending = Pending()
            with processing(event):
                try:
                    outcome = self.apply_command(env, now)
                except Exception as error:  # never stop the consumer on one command
                    log.exception("command %s for %r could not be applied (nothing stored)",
                                  env.command.type, env.command.player_id)
                    pending.records.append(give_up_on("wallet", event, error, now))
                    outcome = handlers.CommandResult(handlers.Answer.error(
                        500, "command_failed", "the command could not be applied; retrying "
                                               "with the same id is safe"))
            pending.add(env, outcome)
        await self.flush(pending)


async def forward_endings(app: faust.App, commands_topic: str, events, clock: Clock) -> None:
    """Each ending as a command, in order; a record that is not one is dead-lettered."""
    records = []
    for event in events:
        try:
            command = ending_command(event.value)
        except Exception as error:  # the record, not the wallet, failed
            records.append(give_up_on("wallet", event, error, clock.now()))
            continue
        if command is not None:
            records.append(command_record(commands_topic, Envelope(command=command)))
    await publish_all(app, records)
