"""dealer-event's decisions on the kernel: one record of `dealer.inputs` in, one entry of
`dealer.log` out (its events and refusal published from it), and the HTTP waiter told.

`Decisions.decide` is the kernel's pure step (`services.infra.kernel.Decide`): a record of
`dealer.inputs` against the tables as the batch's earlier decisions left them (the fold of
`dealer.log`, `dealer_fold`), and the worker's clock. It gives

- for a device's or supervisor's input: the table machine's outcome (`table_machine.step`:
  the overdue timer first, then the input), its events signed with the table-events key,
  and for a refused input its `InputRefused`, all in one `DealerEntry`;
- for an unreadable record: its `malformed_input` refusal (an entry too: every input is
  answered by name); for an input on a partition that is not its table's (keyed by
  something other than the table id): `wrong_partition`, nothing decided;
- for dealer-event's own `TimerTick`: the window's close, or the hanging round's stall or
  void, if still due; nothing otherwise;
- for a record the kernel cannot decide at all (an error, not a refusal): its dead letter.

`Decisions.answer` gives the waiter its report only once the kernel says the log backs it
(the entry landed where its chain said, so it is the decision on the log's state): a
decision the log does not back (another writer, a zombie or the new owner, came in
between) is answered `lost_race`, and the HTTP door says 503 "resend"; the resend is
decided on the log (`duplicate_input` if the winner applied it). So neither an event nor a
refusal given to a device contradicts what the log keeps, and no checkpoint, rebuild or
re-read of `table.events` is dealer-event's own (docs/decisions/dealer-fencing.md).

The timer (`due_ticks`) only asks: for each table whose window ran out or whose round is
left hanging, it puts a `TimerTick` on `dealer.inputs`, and the tick is decided like any
input, on the log's state.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import faust

from services.dealer_event.admission import AdmissionPolicy
from services.dealer_event.dealer_fold import table_key as table_state_key
from services.dealer_event.dealer_fold import table_of
from services.dealer_event.input_parsing import Parsed, make_rejection, parse_raw
from services.dealer_event.refusals import InputRefusal
from services.dealer_event.state import TableState
from services.dealer_event.table_machine import (
    MachineConfig,
    MachineStep,
    step,
    tick,
    tick_due,
    watch,
)
from services.infra import metrics
from services.infra.clock import Clock
from services.infra.dead_letters import give_up_on
from services.infra.kernel import Decided
from services.infra.own_log import Overlay
from services.infra.replies import Replies
from services.infra.settings import Settings
from services.infra.table_keys import table_key
from shared.events.dealer_log import DealerEntry
from shared.events.inputs import TimerTick
from shared.events.rejections import NOT_THE_DEALERS, InputRefused
from shared.events.sources import InputPosition, InputRef
from shared.events.table import (
    TABLE_EVENT_TYPES,
    MisdealCorrected,
    RoundCompleted,
    RoundCorrected,
    RoundOpened,
    RoundStalled,
    RoundVoided,
    TableEventBase,
    VoidReason,
    event_auth,
)
from shared.profile import ProfileError, load_profile

log = logging.getLogger(__name__)

MOVED = "moved"  # a waiter's table went to another worker before its input was decided
# a waiter's input was decided on a state the log does not back (another writer wrote the
# table's partition first): its decision is not answered; the HTTP door says 503, resend it
LOST_RACE = "lost_race"
RETICK_S = 5.0  # a tick asked for a table that has not moved since is asked again after this


def machine_config(settings: Settings) -> MachineConfig:
    def key_for(table_id: str, role: str) -> bytes:
        return table_key(settings.table_signing_secret, table_id, role)

    policy = AdmissionPolicy(key_for, timedelta(seconds=settings.input_max_age_seconds),
                             timedelta(seconds=settings.input_max_ahead_seconds))
    return MachineConfig(policy, settings.betting_window_seconds,
                         settings.table_events_key_bytes,
                         stall_after=timedelta(seconds=settings.round_stall_seconds),
                         abandon_after=timedelta(seconds=settings.round_abandon_seconds))


_SEP = "\x1f"


def waiter_key(input_id: str | None, signature: str | None) -> str:
    return f"{input_id or ''}{_SEP}{signature or ''}"


@dataclass(frozen=True)
class Reply:
    """What one decision tells its waiter (none for a tick) and counts once backed."""

    waiter: str | None
    report: dict[str, Any] | None
    table_id: str
    events: tuple[TableEventBase, ...] = ()
    state: TableState | None = None  # the table after the events (their metrics' labels)
    refusal: InputRefusal | None = None
    known_table: bool = True  # the refused input's table had a state (its metrics' label)


class Decisions:
    """dealer-event's `decide` and `answer` for the kernel, its HTTP waiters and its timer's
    memory: built once per worker by the bootstrap."""

    def __init__(self, config: MachineConfig, clock: Clock,
                 partition_of: Callable[[str], int | None] | None = None) -> None:
        self.config = config
        self.clock = clock
        # the partition of dealer.inputs a table's records belong on (None: not known)
        self._partition_of = partition_of
        self._waiters: Replies[dict, int] = Replies()  # tagged with the input's partition
        # per table, the seq this worker last saw and when it first saw it (the monotonic
        # clock): how long it has itself watched the table stand still (table_machine.watch)
        self._still_since: dict[str, tuple[int, float]] = {}
        self._asked: dict[str, tuple[int, float]] = {}  # table -> (seq, when) of its last tick

    # --- the kernel's step ------------------------------------------------------------

    def decide(self, scratch: Overlay, event: faust.EventT) -> Decided:
        now = self.clock.now()
        try:
            return self._decide(scratch, event, now)
        except Exception as error:  # the record, not the service, failed: dead-lettered
            log.exception("dealer.inputs record at %s:%s could not be decided",
                          event.message.partition, event.message.offset)
            return Decided(also=[give_up_on("dealer-event", event, error, now)])

    def _decide(self, scratch: Overlay, event: faust.EventT, now: datetime) -> Decided:
        m = event.message
        source = InputRef(topic=m.topic, partition=m.partition, offset=m.offset)
        # the kernel hands a partition's records on in order, none passed over, and a
        # record's entry lands after every earlier record's: all before it are decided
        ref = InputPosition(partition=m.partition, offset=m.offset,
                            decided_through=m.offset - 1)
        raw: bytes = event.value
        parsed = parse_raw(raw)
        if parsed.tick is not None:
            return self._tick(scratch, parsed.tick, now, source, ref)
        if parsed.input is None:
            return self._entry(source, now, parsed, raw, ref, MachineStep(
                TableState(parsed.table_id), (), parsed.problem), known=False)
        before = table_of(scratch, parsed.table_id)
        known = table_state_key(parsed.table_id) in scratch
        misplaced = self._misplaced(parsed.table_id, m.partition)
        if misplaced is not None:  # its table's state is on another partition
            return self._entry(source, now, parsed, raw, ref,
                               MachineStep(before, (), misplaced), known)
        outcome = step(before, parsed.input, now, self.config, ref)
        return self._entry(source, now, parsed, raw, ref, outcome, known)

    def _misplaced(self, table_id: str, partition: int) -> InputRefusal | None:
        """An input on a partition of dealer.inputs that is not its table's: its table's
        state lives (and its events are chained) on the other partition, so deciding it
        here would fork the table's chain. Refused by name, nothing decided."""
        home = None if self._partition_of is None else self._partition_of(table_id)
        if home is None or home == partition:
            return None
        return InputRefusal("wrong_partition", (
            f"an input of table {table_id} is on partition {partition} of dealer.inputs, "
            f"its table's is {home}: it was keyed by something other than the table id; "
            "resend it keyed by the table id"))

    def _entry(self, source: InputRef, now: datetime, parsed: Parsed, raw: bytes,
               ref: InputPosition, outcome: MachineStep, known: bool) -> Decided:
        events = self._signed(outcome.events)
        refusal = outcome.refusal
        rejection: InputRefused | None = None
        signature = parsed.input.signature if parsed.input is not None else ""
        if refusal is None:
            report = {"status": "accepted", "input_id": parsed.input_id,
                      "table_id": parsed.table_id, "events": [_brief(e) for e in events]}
        else:
            rejection = make_rejection(parsed, refusal, raw, now, ref)
            report = {"status": "refused", "input_id": parsed.input_id,
                      "table_id": parsed.table_id, "reason_code": refusal.code,
                      "message": refusal.message, "rejection_id": rejection.rejection_id}
        reply = Reply(waiter_key(parsed.input_id, signature), report, parsed.table_id,
                      events, outcome.state, refusal, known)
        return Decided(entries=[_maker(source, now, parsed.table_id, events, rejection)],
                       reply=reply)

    def _tick(self, scratch: Overlay, asked: TimerTick, now: datetime, source: InputRef,
              ref: InputPosition) -> Decided:
        """A tick decides what is due now, on the log's state; nothing if nothing is."""
        state = table_of(scratch, asked.table_id)
        outcome = tick(state, now, ref)
        if not outcome.events:
            outcome = watch(state, now, self._quiet(asked.table_id, state.seq), self.config)
        if not outcome.events:
            return Decided()
        events = self._signed(outcome.events)
        return Decided(entries=[_maker(source, now, asked.table_id, events, None)],
                       reply=Reply(None, None, asked.table_id, events, outcome.state))

    def _signed(self, events: Iterable[TableEventBase]) -> tuple[Any, ...]:
        key = self.config.table_events_key
        if key is None:  # unsigned (an upgrade window): consumers may be told to accept it
            return tuple(events)
        return tuple(e.model_copy(update={"auth": event_auth(key, e.hash)}) for e in events)

    def answer(self, event: faust.EventT, decided: Decided, backed: bool) -> None:
        """Tell the waiter what the log says (`lost_race` when it does not back the
        decision), and count a backed decision once."""
        reply: Reply | None = decided.reply
        if reply is None:
            return
        if not backed:
            for e in reply.events:
                log.warning("table %s seq %s (%s): decided on a state the log does not back "
                            "(another writer came in between); not answered, resend it",
                            e.table_id, e.seq, e.type)
            if reply.waiter is not None and reply.report is not None:
                self._waiters.resolve(reply.waiter, {
                    "status": LOST_RACE, "input_id": reply.report.get("input_id"),
                    "table_id": reply.table_id})
            return
        _count(reply)
        if reply.waiter is not None and reply.report is not None:
            self._waiters.resolve(reply.waiter, reply.report)

    # --- HTTP waiters -----------------------------------------------------------------

    def expect(self, input_id: str, partition: int | None = None, signature: str = ""
               ) -> Any:
        """A future the HTTP door awaits: resolved with the decision on the input with this
        id AND this signature (a forged input reusing a genuine one's id is answered to its
        own sender only, never to the genuine device)."""
        return self._waiters.expect(waiter_key(input_id, signature), partition)

    def forget(self, input_id: str, fut: Any, signature: str = "") -> None:
        self._waiters.forget(waiter_key(input_id, signature), fut)

    def moved(self, partitions: set[int]) -> None:
        """The partitions went to another worker: their waiters are answered `moved` (the
        HTTP door says 503, the client resends; the new owner decides the input from the
        log, so a resend is applied once or answered `duplicate_input`)."""
        def moved_of(key: str, partition: int | None) -> dict | None:
            if partition is not None and partition in partitions:
                return {"status": MOVED, "input_id": key.partition(_SEP)[0]}
            return None

        self._waiters.answer_each(moved_of)

    # --- the timer ----------------------------------------------------------------------

    def due_ticks(self, tables: Iterable[TableState]) -> list[TimerTick]:
        """The ticks to ask for now: each table whose betting window ran out or whose round
        is left hanging, asked again only after `RETICK_S` if it has not moved since."""
        now, mono = self.clock.now(), self.clock.elapsed()
        asks = []
        for state in tables:
            quiet = self._quiet(state.table_id, state.seq, mono)
            if not tick_due(state, now, quiet, self.config):
                continue
            asked = self._asked.get(state.table_id)
            if asked is not None and asked[0] == state.seq and mono - asked[1] < RETICK_S:
                continue
            self._asked[state.table_id] = (state.seq, mono)
            asks.append(TimerTick(table_id=state.table_id, seq=state.seq))
        return asks

    def _quiet(self, table_id: str, seq: int, mono: float | None = None) -> timedelta:
        """How long this worker has itself watched the table stand still at `seq`."""
        mono = self.clock.elapsed() if mono is None else mono
        seen = self._still_since.get(table_id)
        if seen is None or seen[0] != seq:
            seen = self._still_since[table_id] = (seq, mono)
        return timedelta(seconds=mono - seen[1])


def _maker(source: InputRef, now: datetime, table_id: str, events: tuple[Any, ...],
           rejection: InputRefused | None) -> Any:
    def make(entry_id: str, prev: str, published_through: int) -> DealerEntry:
        return DealerEntry(entry_id=entry_id, prev=prev, source=source,
                           published_through=published_through, recorded_at=now,
                           table_id=table_id, events=events, rejection=rejection)
    return make


def _count(reply: Reply) -> None:
    """The metrics of a decision the log backs."""
    for event in reply.events:
        count_published(event, reply.state)
    refusal = reply.refusal
    if refusal is None:
        if reply.report is not None:
            metrics.INPUTS.labels(reply.table_id, "accepted", metrics.NO_REASON).inc()
        return
    label = reply.table_id if reply.known_table else metrics.UNKNOWN_TABLE
    metrics.INPUTS.labels(label, "refused", refusal.code).inc()
    if refusal.code not in NOT_THE_DEALERS:
        metrics.DEALER_ACTIVITY.labels(label, dealer_of(reply.state), "refused_input").inc()
    log.info("refused %s on table %s: %s (%s)", (reply.report or {}).get("input_id"),
             reply.table_id, refusal.code, refusal.message)


def game_of(state: TableState) -> str:
    """The game the table's current round (or shoe) plays, for the rounds metric."""
    profile = state.round.profile if state.round else state.shoe.profile if state.shoe else None
    try:
        return load_profile(profile).game if profile else metrics.OTHER
    except ProfileError:
        return metrics.OTHER


def count_published(event: TableEventBase, state: TableState | None) -> None:
    """Metrics of one event the log backs (a round is counted once, when its
    RoundCompleted or RoundVoided is in the log)."""
    metrics.TABLE_EVENTS.labels(event.type).inc()
    if isinstance(event, RoundCompleted | RoundVoided):
        outcome = "completed" if isinstance(event, RoundCompleted) else "voided"
        game = game_of(state) if state is not None else metrics.OTHER
        metrics.ROUNDS.labels(event.table_id, game, outcome).inc()
        metrics.DEALER_ACTIVITY.labels(event.table_id, dealer_of(state, event.round_id),
                                       outcome).inc()
    if isinstance(event, RoundVoided):
        metrics.VOIDS.labels(str(event.reason_code)).inc()
    if isinstance(event, RoundStalled):
        metrics.ROUNDS_STALLED.labels(event.table_id).inc()
    if isinstance(event, RoundCorrected | MisdealCorrected):
        dealer = event.dealer if isinstance(event, RoundCorrected) else \
            dealer_of(state, event.round_id)
        metrics.DEALER_ACTIVITY.labels(event.table_id, dealer, "corrected").inc()


def dealer_of(state: TableState | None, round_id: str | None = None) -> str:
    """The dealer of the table's round `round_id` (default: its newest round), for the
    per-dealer metrics; `none` when the table has had no round, `unknown` when the round
    is no longer held."""
    if state is None or state.round is None:
        return "none"
    if round_id is None or state.round.round_id == round_id:
        return state.round.dealer
    kept = state.completed.get(round_id)
    return kept.dealer if kept is not None else "unknown"


def init_metrics() -> None:
    metrics.init_series(metrics.VOIDS, [str(r) for r in VoidReason])
    metrics.init_series(metrics.TABLE_EVENTS,
                        [t.model_fields["type"].default for t in TABLE_EVENT_TYPES])


def _brief(event: TableEventBase) -> dict:
    brief = {"seq": event.seq, "type": event.type, "event_id": event.event_id}
    if isinstance(event, RoundOpened):  # a device waits for the timer (seed 002)
        brief["betting_closes_at"] = event.betting_closes_at.isoformat()
    return brief
