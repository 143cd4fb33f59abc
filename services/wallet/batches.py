"""What the wallet does with a batch of its inputs.

The accounts loop runs on the kernel (`services.infra.kernel.run_own_log`) over
two co-partitioned inputs keyed by player: the commands topic (HTTP requests) and
wallet.endings (bet-settlement's endings of bets, put there on the player's partition, so
no hop re-keys them). For each record, `decide` gives the answer and the ledger entry it
writes; the kernel chains, writes and verifies the entries, folds them, publishes their
outputs, and only then are the HTTP views waiting on them answered (`answer`: a 201 means
"debited and in the log").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import faust

from services.infra.clock import Clock
from services.infra.dead_letters import give_up_on
from services.infra.kernel import Decided
from services.infra.own_log import Overlay
from services.infra.replies import Replies
from services.wallet import handlers, money_metrics, seamless
from services.wallet.balance_guard import guarded
from services.wallet.commands import ENVELOPE, Envelope, ending_command
from services.wallet.ledger_fold import Lookups
from services.wallet.seamless import SeamlessRules
from shared.events.operator_wallet import OperatorCall
from shared.events.sources import InputRef
from shared.topics import WALLET_ENDINGS_TOPIC

log = logging.getLogger("croupier.wallet")
RETRY = handlers.Answer.error(503, "rebalancing", "another worker applied this command; "
                                                  "retry (the same id is safe)")


class CommandBatches:
    """The accounts agent's decisions and answers (the kernel does the rest)."""

    def __init__(self, replies: Replies[handlers.Answer, None], clock: Clock,
                 seamless_rules: SeamlessRules | None = None,
                 on_calls: Callable[[list[OperatorCall]], None] | None = None) -> None:
        self.replies = replies
        self.clock = clock
        # seamless mode (the operator's wallet holds the balance): its rules, and who
        # delivers the calls a backed decision owes
        self.seamless_rules = seamless_rules
        self.on_calls = on_calls
        # held while a batch is applied and published: an intake mark is stamped and sent
        # between batches, so every bet stamped before it is acknowledged first, and every
        # later one is stamped after it
        self.lock = asyncio.Lock()

    def decide(self, scratch: Overlay, event: faust.EventT) -> Decided:
        now = self.clock.now()
        try:
            env = envelope_of(event)
        except Exception as error:  # unreadable: dead-lettered, nothing moved
            return Decided(also=[give_up_on("wallet", event, error, now)])
        if env is None:  # a record of wallet.endings that moves no money: nothing to do
            return Decided()
        try:
            outcome = self.handle(env, now, Lookups(scratch))
        except Exception as error:  # never stop the consumer on one command
            log.exception("command %s for %r could not be applied (nothing written)",
                          env.command.type, env.command.player_id)
            return Decided(also=[give_up_on("wallet", event, error, now)], reply=(
                env, handlers.CommandResult(handlers.Answer.error(
                    500, "command_failed", "the command could not be applied; retrying "
                                           "with the same id is safe"))))
        change = outcome.change
        if outcome.dead_letter is not None:  # refused for good (a late ending): kept there
            return Decided(also=[give_up_on("wallet", event, handlers.LateEnding(
                outcome.dead_letter), now)], reply=(env, outcome))
        if change is None:
            return Decided(reply=(env, outcome))
        message = event.message
        source = InputRef(topic=message.topic, partition=message.partition,
                          offset=message.offset)

        def make(entry_id: str, prev: str, published_through: int):
            return change.entry(entry_id, prev, published_through, source, now)
        return Decided(entries=[make], reply=(env, outcome))

    def handle(self, env: Envelope, now, look: Lookups) -> handlers.CommandResult:
        if self.seamless_rules is not None:
            return seamless.handle(env, now, look, self.seamless_rules)
        return guarded(handlers.handle(env, now, look))

    def answer(self, event: faust.EventT, decided: Decided, backed: bool) -> None:
        """Answer the command's waiter, and count what it did. A decision the log does not
        back (another worker applied the command meanwhile) is answered "retry": the
        request reaches that worker, which answers as its entry says."""
        if decided.reply is None:
            return
        env, outcome = decided.reply
        waiter = outcome.reply_to or env.reply_id
        if not backed:
            self.replies.resolve(waiter, RETRY)
            return
        money_metrics.record(env, outcome)
        money_metrics.observe_latency(env.command, outcome, self.clock.now())
        if outcome.answer is not None:
            self.replies.resolve(waiter, outcome.answer)
        owed = [c for c in outcome.change.calls if c.pending] if outcome.change else []
        if owed and self.on_calls is not None:
            self.on_calls(owed)


def envelope_of(event: faust.EventT) -> Envelope | None:
    """The command a record of the wallet's inputs carries: an HTTP request's envelope on
    the commands topic, or a bet's ending bet-settlement put on wallet.endings (None for a
    record there that moves no money). Raises on a record that is neither."""
    if event.message.topic == WALLET_ENDINGS_TOPIC:
        command = ending_command(event.value)
        return None if command is None else Envelope(command=command)
    return ENVELOPE.validate_json(event.value)
