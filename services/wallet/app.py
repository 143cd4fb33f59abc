"""The wallet's Faust app: its own log, topics and the agents that own every balance.

One loop (`accounts_agent`, on the kernel) is the only writer of accounts: it reads, in
batches, the private commands topic (HTTP requests) and wallet.endings (bet-settlement's
endings of bets), both keyed by player id and co-partitioned, so one player's money moves
strictly in the order of each.

The wallet's state is the fold of its ledger, `wallet.ledger` (one entry per command that
changed anything, on the partition of the command's own partition of the commands topic):
accounts, the paged history, the applied tx ids, the bets and the spot totals are what
the entries wrote (`ledger_fold`). The agent runs on the kernel
(`services.infra.kernel`): a worker assigned a partition folds its ledger
partition first and resumes the commands after the last one its ledger applied; it
answers only for entries it saw land where their chain said (docs/decisions/ledger.md).
Every `CROUPIER_SNAPSHOT_EVERY_ENTRIES` entries (or seconds) a partition's folded state is
also written to `wallet.ledger.snapshots` (`WALLET_CODEC`), so a worker on an empty disk
folds only the ledger after the newest snapshot the ledger confirms
(docs/decisions/snapshots.md).

This module is the worker's loops, functions of the `Wallet` that
`services.wallet.bootstrap` builds when the worker starts: the own log (`own`)
and its read side (`store`), the decisions the agent makes (`batches`), the table views
(`table_views`), the intake marks (`intake_marks`), the reply futures
(`services.infra.replies`), the HTTP routes (`views`). Importing it builds
nothing.

Several workers: each owns some partitions of the commands topic; the HTTP views
forward a player's request to the worker owning the player's partition
(`services.infra.routing`). Every worker folds the whole of `table.events` itself into
an in-memory view (`TableViews`), so any worker can refuse a bet at the door; when it
reads a round's BettingClosed it writes an intake mark on `bets.placed` between two of its
agent's batches, for the partitions it owns (docs/decisions/acceptance.md).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import faust
from kafka.partitioner.default import murmur2

from services.infra.consume_loop import follow
from services.infra.faust_app import bound
from services.infra.kernel import run_own_log
from services.wallet.commands import Envelope
from shared.topics import TABLE_EVENTS_TOPIC, WALLET_ENDINGS_TOPIC

if TYPE_CHECKING:
    from services.wallet.bootstrap import Wallet

log = logging.getLogger("croupier.wallet")


def register(service: Wallet) -> None:
    """The worker's loops on its app (the bootstrap calls it)."""
    service.app.task(bound(accounts_agent, service))
    service.app.task(bound(follow_table_events, service))


def partition_of(partitions: int):
    """A player's partition of the commands topic, as the producer's partitioner puts it."""
    def of(player_id: str) -> int:  # Kafka's default: murmur2 of the key, positive, mod n
        return (murmur2(player_id.encode()) & 0x7FFFFFFF) % partitions

    return of


async def accounts_agent(w: Wallet) -> None:  # a task (register registers it)
    """A batch at a time, on the kernel: decide every command, write its ledger entry,
    verify and fold the entries, publish their outputs, then answer (a 201 means "debited
    and in the log")."""
    await run_own_log(w.app, [w.commands_topic_name, WALLET_ENDINGS_TOPIC], w.own, w.batches.decide,
                      w.batches.answer, lock=w.batches.lock)


async def follow_table_events(w: Wallet) -> None:  # a task (register registers it)
    """Every table's recent rounds, on the kernel's loop for views every worker keeps whole."""
    async def apply(batch) -> None:
        w.table_views.apply_batch(batch)

    await follow(w.app, TABLE_EVENTS_TOPIC, w.table_views.since_ms, apply, w.table_views.caught_up)


async def send_record(commands_topic: faust.TopicT, key: bytes, value: bytes) -> None:
    """A record on the commands topic (seamless mode: the operator's answers, packed by
    partition in `answer_packs`, keyed by the player of the first), straight to the app's
    producer, not awaited for the broker's ack."""
    producer = await commands_topic.app.maybe_start_producer()
    acked = await producer.send(commands_topic.get_topic_name(), key, value, None, None, None)
    acked.add_done_callback(_send_failed)


async def send_command(commands_topic: faust.TopicT, env: Envelope) -> None:
    """Put an HTTP request's command on the commands topic, keyed by its player: straight
    to the app's producer (as the kernel sends), not through Faust's channel machinery
    (its future-message wrappers and send sensors cost 5 % of the wallet's event loop at
    intake). Not awaited for the broker's ack, as before: the request waits for the
    ledger's answer, or times out."""
    await send_record(commands_topic, env.command.player_id.encode(),
                      env.model_dump_json().encode())


def _send_failed(acked) -> None:
    """A command the broker refused: its request times out (504, "retry: the same id is
    safe"); said here once, not left as an unretrieved error."""
    if not acked.cancelled() and acked.exception() is not None:
        log.warning("a command was not written to the commands topic: %r", acked.exception())
