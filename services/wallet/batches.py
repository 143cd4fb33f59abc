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
from dataclasses import dataclass
from typing import cast

import faust
from pydantic import BaseModel

from services.infra.clock import Clock
from services.infra.dead_letters import dead_letter, give_up_on, note_dead_letter, record_of
from services.infra.kernel import Decided
from services.infra.own_log import Overlay, Record
from services.infra.packs import pack_values, unpack
from services.infra.replies import Replies
from services.wallet import handlers, money_metrics, seamless
from services.wallet.balance_guard import guarded
from services.wallet.commands import ENVELOPE, Envelope, ending_commands
from services.wallet.ledger_fold import WALLET_FOLD, Lookups
from services.wallet.seamless import SeamlessRules
from shared.events.operator_wallet import OperatorCall
from shared.events.sources import InputRef
from shared.events.wallet_ledger import LedgerEntry
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
        if event.message.topic == WALLET_ENDINGS_TOPIC:
            return self.decide_endings(scratch, event, now)
        try:
            packed = unpack(event.value)  # the caller's answers, packed by partition
            if packed is None:
                env = ENVELOPE.validate_json(event.value)
        except Exception as error:  # unreadable: dead-lettered, nothing moved
            return Decided(also=[give_up_on("wallet", event, error, now)])
        if packed is not None:  # an unreadable one is dead-lettered alone, the rest decided
            envelopes: list[tuple[BaseModel | bytes, Envelope]] = []
            unreadable: list[tuple[BaseModel | bytes, BaseException]] = []
            for raw in packed:
                try:
                    envelopes.append((raw, ENVELOPE.validate_json(raw)))
                except Exception as error:
                    unreadable.append((raw, error))
            return self.decide_parts(scratch, event, envelopes, now, unreadable)
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

    def decide_endings(self, scratch: Overlay, event: faust.EventT, now) -> Decided:
        """A record of wallet.endings: a pack of bets' endings (or one alone), each decided
        on the state the ones before it left, each writing its own entry; the record's
        entries take effect together (its parts). An ending refused for good (a late one)
        or that could not be applied is dead-lettered, in one letter per record holding
        those endings (a re-drive applies them again; the others are then duplicates)."""
        try:
            endings = ending_commands(event.value)
        except Exception as error:  # unreadable: dead-lettered, nothing moved
            return Decided(also=[give_up_on("wallet", event, error, now)])
        return self.decide_parts(scratch, event, [
            (record, Envelope(command=command)) for record, command in endings], now)

    def decide_parts(self, scratch: Overlay, event: faust.EventT,
                     commands: list[tuple[BaseModel | bytes, Envelope]], now,
                     unreadable: list[tuple[BaseModel | bytes, BaseException]] | None = None
                     ) -> Decided:
        """A record holding several commands (a pack of endings, or of the operator's
        answers): each decided on the state the ones before it left, each writing its own
        entry, numbered as the record's parts (they take effect together). Each command
        is given with what a dead letter keeps of it (its record, or its bytes); those
        that could not be read are dead-lettered with those that fail."""
        local = Overlay(cast(dict, scratch))  # the pack's earlier commands, for the later
        message = event.message
        first = InputRef(topic=message.topic, partition=message.partition,
                         offset=message.offset)
        written: list[LedgerEntry] = []
        applied: list[tuple[Envelope, handlers.CommandResult]] = []
        failed = list(unreadable or [])
        for record, env in commands:
            command = env.command
            try:
                outcome = self.handle(env, now, Lookups(local))
            except Exception as error:  # one command, not the pack, failed
                log.exception("%s of %r could not be applied (nothing written)",
                              command.type, getattr(command, "bet_id", None) or
                              command.player_id)
                failed.append((record, error))
                continue
            if outcome.dead_letter is not None:
                failed.append((record, handlers.LateEnding(outcome.dead_letter)))
                continue
            applied.append((env, outcome))
            if outcome.change is not None:
                entry = outcome.change.entry("", "", -1, first, now)
                WALLET_FOLD.apply(local, entry)
                written.append(entry)
        parts = [entry.source.model_copy(update={"part": i, "last": i == len(written) - 1})
                 for i, entry in enumerate(written)]

        def maker(entry: LedgerEntry, source: InputRef):
            def make(entry_id: str, prev: str, published_through: int) -> LedgerEntry:
                return entry.model_copy(update={"entry_id": entry_id, "prev": prev,
                                                "published_through": published_through,
                                                "source": source})
            return make
        also = [] if not failed else [_letter(event, failed, now)]
        return Decided(entries=[maker(e, s) for e, s in zip(written, parts, strict=True)],
                       also=also, reply=Parts(applied))

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
        if isinstance(decided.reply, Parts):  # no one waits on an ending; a packed
            for env, outcome in decided.reply.applied:  # answer answers its bet's waiter
                self._answer(env, outcome, backed)
            return
        env, outcome = decided.reply
        self._answer(env, outcome, backed)

    def _answer(self, env: Envelope, outcome: handlers.CommandResult, backed: bool) -> None:
        waiter = outcome.reply_to or env.reply_id
        if not backed:
            self.replies.resolve(waiter, RETRY)
            return
        self.applied(env, outcome)
        if outcome.answer is not None:
            self.replies.resolve(waiter, outcome.answer)

    def applied(self, env: Envelope, outcome: handlers.CommandResult) -> None:
        """A command the log backs: counted, and the operator's wallet called for what
        its entry owes (seamless mode)."""
        money_metrics.record(env, outcome)
        money_metrics.observe_latency(env.command, outcome, self.clock.now())
        owed = [c for c in outcome.change.calls if c.pending] if outcome.change else []
        if owed and self.on_calls is not None:
            self.on_calls(owed)


@dataclass(frozen=True)
class Parts:
    """What a record of several commands decided (a pack of endings, or of the operator's
    answers): each command applied, with its outcome."""

    applied: list[tuple[Envelope, handlers.CommandResult]]


class EndingsRefused(Exception):
    """Commands of one packed record that were refused or could not be applied."""


def _letter(event: faust.EventT, failed: list[tuple[BaseModel | bytes, BaseException]],
            now) -> Record:
    """The dead letter of a record's failed commands: the record's place, and a pack of only
    those (what a re-drive applies again), with why each failed."""
    message = event.message
    error = failed[0][1] if len(failed) == 1 else EndingsRefused("; ".join(
        f"{getattr(r, 'bet_id', 'a command')}: {type(e).__name__}: {e}" for r, e in failed))
    letter = dead_letter("wallet", message.topic, message.partition, message.offset,
                         message.key, pack_values([
                             r if isinstance(r, bytes) else r.model_dump_json().encode()
                             for r, _ in failed]), error, now)
    note_dead_letter(letter)
    return record_of(letter)
