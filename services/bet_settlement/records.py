"""What bet-settlement does with one input record, on the kernel
(`services.infra.kernel.run_own_log`).

`decide(scratch, event)` runs the round book (`round_book`) against the folded state as
the batch's earlier records left it (`scratch`) and returns the record's entries of
`settlement.log` (`settlement_fold.entries_of`): the kernel chains, writes and verifies
them, folds them, publishes what they publish, and only then is the record acked. A record
that cannot be applied (unparseable, an unknown profile, any error) is dead-lettered and
changes nothing; a table event refused as forged or out of order flags its table (an
entry) and is dead-lettered; a result for a flagged table is dead-lettered until a
supervisor reopens the table.

Metrics and the loud logs are given in `answer`, once the record's entries are in the log:
the kernel decides a record again when another writer came in between, and a record
decided twice is counted once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import faust

from services.bet_settlement import decision_metrics, round_book
from services.bet_settlement.settlement_fold import (
    Change,
    FoldedBets,
    Lookups,
    entries_of,
    watch_of,
)
from services.infra import metrics
from services.infra.clock import Clock
from services.infra.dead_letters import flag_table, give_up_on, note_void
from services.infra.kernel import Decided
from services.infra.own_log import Overlay
from shared.events.bet_events import BET_INTAKE, IntakeMark
from shared.events.event_auth import TableEventRefused, TableFlagged, advance
from shared.events.results import RoundResultPublished
from shared.events.settlement_log import PendingRounds, RoundHeader
from shared.events.sources import InputRef
from shared.events.table import RoundVoided, TableEventBase, parse_table_event
from shared.topics import BETS_PLACED_TOPIC, ROUND_RESULTS_TOPIC

log = logging.getLogger("croupier.bet_settlement")
SERVICE = "bet-settlement"
RoundStep = Callable[[RoundHeader | None, FoldedBets], round_book.Transition]


class TableIsFlagged(Exception):
    """A result for a flagged table: never settled until a supervisor reopens the table."""


@dataclass
class Reply:
    """What `answer` counts and reports once the record's entries are in the log."""

    fresh: list[decision_metrics.Fresh] = field(default_factory=list)
    conflicts: list[tuple[RoundHeader, list[str]]] = field(default_factory=list)
    refused: tuple[TableEventRefused, str] | None = None  # and the table it flagged
    void: tuple[str, str] | None = None  # a lost race skipped: its table, why


class _Refused(Exception):
    def __init__(self, change: Change, refused: TableEventRefused) -> None:
        super().__init__(str(refused))
        self.change, self.refused = change, refused


class SettlementRecords:
    """bet-settlement's decisions and answers (the kernel does the rest)."""

    def __init__(self, table_key: bytes, accept_unsigned: bool, clock: Clock) -> None:
        self.table_key = table_key
        self.accept_unsigned = accept_unsigned
        self.clock = clock

    def decide(self, scratch: Overlay, event: faust.EventT) -> Decided:
        now = self.clock.now()
        message = event.message
        source = InputRef(topic=message.topic, partition=message.partition,
                          offset=message.offset)
        reply = Reply()
        try:
            change = self.change_of(Lookups(scratch), message.topic, event.value, reply, now,
                                    broker_time(event))
        except _Refused as refused:  # the table is flagged (an entry) and the event refused
            reply.refused = (refused.refused, refused.change.table_id)
            return Decided(entries=entries_of(refused.change, source, now),
                           also=[give_up_on(SERVICE, event, refused.refused, now)],
                           reply=reply)
        except Exception as error:  # noqa: BLE001 - the record, not the service, failed
            return Decided(also=[give_up_on(SERVICE, event, error, now)])
        # a record that publishes writes an entry even if it changes nothing else (a
        # rejection of a duplicate bet id, a decision published again): its outputs go
        # through the outbox, never beside it
        return Decided(entries=entries_of(change, source, now), reply=reply)

    def answer(self, event: faust.EventT, decided: Decided, backed: bool) -> None:
        """Count what the record newly decided, once the log backs it (a record decided
        again after a lost race is counted by the writer whose entries won)."""
        reply = decided.reply
        if not isinstance(reply, Reply) or not backed:
            return
        for fresh in reply.fresh:
            decision_metrics.record(fresh)
        for header, conflicts in reply.conflicts:
            metrics.breach("settlement_conflict")
            log.error("MONEY: round %s of table %s asked to settle again with different "
                      "amounts for %d bet(s), e.g. %s; the first settlement stands",
                      header.round_id, header.table_id, len(conflicts), conflicts[0])
        if reply.refused is not None:
            flag_table(SERVICE, *reply.refused)
        if reply.void is not None:
            note_void(SERVICE, *reply.void)

    def change_of(self, look: Lookups, topic: str, raw: bytes, reply: Reply, now: datetime,
                  published_at: datetime | None = None) -> Change:
        """What the record changes; raises if it cannot be applied."""
        if topic == BETS_PLACED_TOPIC:
            record = BET_INTAKE.validate_json(raw)
            change = Change(record.table_id)
            if isinstance(record, IntakeMark):
                mark = record
                _step(change, look, reply, record.round_id,
                      lambda h, b: round_book.apply_mark(h, b, mark, now))
            else:
                bet = record
                head = look.watch(record.table_id).head
                _step(change, look, reply, record.round_id,
                      lambda h, b: round_book.place(h, b, bet, now,
                                                    head.seq if head is not None else None))
            return _with_pending(change, look)
        if topic == ROUND_RESULTS_TOPIC:
            result = RoundResultPublished.model_validate_json(raw)
            flagged = look.watch(result.table_id).flagged
            if flagged is not None:  # dead-lettered: an operator re-drives it after review
                raise TableIsFlagged(f"table {result.table_id} is flagged ({flagged}): round "
                                     f"{result.round_id} is not settled")
            change = Change(result.table_id)
            _check_second_settlement(look, reply, result.table_id, result.round_id, result)
            _step(change, look, reply, result.round_id,
                  lambda h, b: round_book.apply_result(h, b, result, now, published_at))
            return _with_pending(change, look)
        event = parse_table_event(raw)
        change = Change(event.table_id)
        if not self._verify(change, look, event, reply):
            return change
        round_id = getattr(event, "round_id", None)
        for other in look.pending(event.table_id):  # rounds that never opened: over
            header = look.header(event.table_id, other)
            if other != round_id and header is not None and round_book.over_at(header, event):
                _step(change, look, reply, other,
                      lambda h, b: round_book.expire(_known(h), b, now))
        if round_id is None:
            return _with_pending(change, look)
        if isinstance(event, RoundVoided):
            _check_second_settlement(look, reply, event.table_id, round_id, event)
        _step(change, look, reply, round_id,
              lambda h, b: round_book.apply_table_event(h, b, event, now))
        return _with_pending(change, look)

    def _verify(self, change: Change, look: Lookups, event: TableEventBase, reply: Reply
                ) -> bool:
        """Check the event's HMAC and its place in the chain: True to apply it; a refused
        event flags its table. An authentic event already seen is skipped: the watch and
        the rounds it moved are in the same entries, so it was applied when it was new
        (and one at or below the head with another hash may be a lost race, never
        applied). A void event (a lost race, docs/decisions/dealer-fencing.md) is skipped
        and counted, never flagged."""
        watch = look.watch(event.table_id)
        try:
            after, verdict = advance(watch, event, self.table_key, self.accept_unsigned)
        except TableFlagged as flagged:
            change.watch = watch_of(event.table_id, flagged.watch)
            raise _Refused(change, flagged.refused) from None
        if verdict == "void":
            reply.void = (event.table_id, f"seq {event.seq} ({event.type}) does not continue "
                                          f"seq {watch.head.seq if watch.head else '-'}")
        if after != watch:  # applied, or void (a new void tip)
            change.watch = watch_of(event.table_id, after)
        return verdict == "apply"


def _known(header: RoundHeader | None) -> RoundHeader:
    assert header is not None, "a pending round has a header"
    return header


def _step(change: Change, look: Lookups, reply: Reply, round_id: str, step: RoundStep
          ) -> None:
    before = look.header(change.table_id, round_id)
    bets = look.bets(change.table_id, round_id)
    transition = step(before, bets)
    reply.fresh.append(decision_metrics.fresh(
        bets, transition.header, (record for _, _, record in transition.out)))
    change.transitions.append((before, transition))


def _with_pending(change: Change, look: Lookups) -> Change:
    """The table's rounds still waiting for their RoundOpened, after the record."""
    before = look.pending(change.table_id)
    waiting = list(before)
    for _, transition in change.transitions:
        h = transition.header
        if h.status == "pending" and h.round_id not in waiting:
            waiting.append(h.round_id)
        elif h.status != "pending" and h.round_id in waiting:
            waiting.remove(h.round_id)
    if tuple(waiting) != before:
        change.pending = PendingRounds(table_id=change.table_id, rounds=tuple(waiting))
    return change


def _check_second_settlement(look: Lookups, reply: Reply, table_id: str, round_id: str,
                             record: RoundResultPublished | RoundVoided) -> None:
    before = look.header(table_id, round_id)
    conflicts = round_book.conflicts(before, look.bets(table_id, round_id), record)
    if conflicts and before is not None:  # only a settled round (a header) has conflicts
        reply.conflicts.append((before, conflicts))


def broker_time(event: faust.EventT) -> datetime | None:
    """The record's broker timestamp (when its producer sent it), if it has one."""
    timestamp = getattr(event.message, "timestamp", None)
    return datetime.fromtimestamp(timestamp, UTC) if timestamp else None
