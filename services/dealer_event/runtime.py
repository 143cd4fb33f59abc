"""The worker's side of dealer-event: the states of the tables it owns in memory,
decisions published to Kafka in batches.

A worker owns the tables of the partitions of `dealer.inputs` assigned to it
(`dealer.inputs`, `table.events` and `dealer.rejections` are all keyed by table id with
one partition count). After every assignment it rebuilds exactly those tables from
`table.events` and `dealer.rejections`, dropping the others, and decides nothing until
that rebuild is done; on revocation it drops every table before the partitions go.

One lock serialises every decision (input batches and the betting timer). A batch is
decided in order, each table's state moving in memory as it goes; every resulting
event and rejection is then published and the acks awaited together, and only then
are the new states adopted and the HTTP waiters answered. If the publish fails, the
states are rebuilt from the log (the source of truth) before anything is decided again.

The rebuild also gives, per partition of `dealer.inputs`, the offsets its records say were
decided (`rebuild.InputCheckpoint`): the stream resumes after them (`resume_offsets`), an
input the log already decided is skipped, and every record a decision writes names its
input and how far the partition was decided before (docs/decisions/dealer-checkpoints.md).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from services.dealer_event.admission import AdmissionPolicy
from services.dealer_event.input_parsing import Parsed, make_rejection, parse_raw
from services.dealer_event.landing import Refold, landed_clean, refold
from services.dealer_event.rebuild import Checkpoints, InputCheckpoint, Rebuilt
from services.dealer_event.refusals import InputRefusal
from services.dealer_event.state import TableState
from services.dealer_event.table_machine import MachineConfig, step, tick, watch
from services.infra import metrics
from services.infra.batching import Record
from services.infra.clock import Clock
from services.infra.replies import Replies
from services.infra.settings import Settings
from services.infra.table_keys import table_key
from shared.events.event_auth import VOID, ChainHead
from shared.events.rejections import NOT_THE_DEALERS
from shared.events.sources import InputPosition
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
from shared.topics import DEALER_REJECTIONS_TOPIC, TABLE_EVENTS_TOPIC

log = logging.getLogger(__name__)

# sends all, awaits every ack; where each landed: (partition, offset) (None: not known,
# and nothing is checked: a test double, or no fence wanted)
PublishAll = Callable[[list[Record]], Awaitable[Sequence[tuple[int, int]] | None]]
# a partition of table.events, offsets [start, stop): (offset, value) of each record
ReadEvents = Callable[[int, int, int], Awaitable[list[tuple[int, bytes]]]]
# the states of the tables in these partitions (None: every partition), and the checkpoints
Rebuild = Callable[[frozenset[int] | None], Awaitable[Rebuilt]]
# the partitions of dealer.inputs this worker consumes now (None: all, a single process)
Owned = Callable[[], frozenset[int] | None]
# a raw input, its partition of dealer.inputs (None: ours) and maybe its offset there (an
# input without one names no checkpoint and is never skipped)
Item = tuple[bytes, int | None] | tuple[bytes, int | None, int | None]
GiveUp = Callable[[int, BaseException], Record]  # an item's dead letter

MOVED = "moved"  # a waiter's table went to another worker before its input was decided
# a waiter's input was decided on a table another writer wrote first (a lost race): its
# events are void, its decision is not answered; the HTTP door says 503, resend it
LOST_RACE = "lost_race"


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


@dataclass
class _Plan:
    """What a batch (or a timer tick) decided, not yet in the log."""

    states: dict[str, TableState] = field(default_factory=dict)
    records: list[Record] = field(default_factory=list)
    events: list[tuple[TableEventBase, TableState]] = field(default_factory=list)
    reports: list[tuple[str, dict]] = field(default_factory=list)  # waiter key, report
    report_events: list[list[str]] = field(default_factory=list)  # each report's event hashes
    refused: list[tuple[str, Parsed, InputRefusal]] = field(default_factory=list)  # metric label
    accepted: list[str] = field(default_factory=list)  # table ids, one per accepted input


class DealerRuntime:
    def __init__(self, config: MachineConfig, clock: Clock, publish_all: PublishAll,
                 rebuild: Rebuild, owned: Owned, *, joined: bool = True,
                 read_events: ReadEvents | None = None, accept_unsigned: bool = False
                 ) -> None:
        self.config = config
        self._read_events = read_events
        self._accept_unsigned = accept_unsigned
        # per partition of table.events, the end offset the tables' states reflect
        self.events_end: dict[int, int] = {}
        self.clock = clock
        self._publish_all = publish_all
        self._rebuild = rebuild
        self._owned = owned
        self.tables: dict[str, TableState] = {}
        self.inputs: Checkpoints = {}  # per partition of dealer.inputs, from the rebuild on
        self._joined = joined  # a worker in a group: False until its first assignment
        self._revoked = False  # between a revocation and the next assignment
        self._stale = True  # the tables must be rebuilt before the next decision
        self._rebuilt_for: frozenset[int] | None = frozenset()
        self._lock = asyncio.Lock()
        # HTTP waiters by waiter_key, each tagged with its input's partition
        self._waiters: Replies[dict, int] = Replies()
        self._rebuild_task: asyncio.Task | None = None
        # per table, the seq this worker last saw and when it first saw it (the monotonic
        # clock): how long it has itself watched the table stand still (table_machine.watch)
        self._still_since: dict[str, tuple[int, float]] = {}

    # --- ownership and rebuild -------------------------------------------------------

    @property
    def ready(self) -> bool:
        """The owned tables are rebuilt after the latest assignment: inputs can be decided."""
        return self._joined and not self._stale and self._rebuilt_for == self._target()

    def _target(self) -> frozenset[int] | None:
        """The partitions whose tables this worker must hold: none between a revocation and
        the next assignment (the consumer may still list the old ones then)."""
        return frozenset() if self._revoked else self._owned()

    @property
    def partitions(self) -> frozenset[int] | None:
        """The partitions whose tables are in memory (None: all)."""
        return self._rebuilt_for

    async def ensure_ready(self) -> None:
        if self.ready:
            return
        async with self._lock:
            await self._ensure_ready_locked()

    async def _ensure_ready_locked(self, decide: bool = False) -> None:
        """Rebuild if stale or if the owned partitions changed (loop: an assignment that
        arrives during a rebuild asks for another). `decide`: for a batch the consumer just
        delivered, whose partitions are assigned even if the assignment signal has not run
        yet; so the consumer's assignment counts, never the revoked-and-waiting state."""
        def target() -> frozenset[int] | None:
            return self._owned() if decide else self._target()

        while self._stale or self._rebuilt_for != target():
            target_now = target()
            self._stale = False
            self.tables = {}
            self.inputs = {}
            self.events_end = {}
            self._rebuilt_for = frozenset()
            try:
                rebuilt = await self._rebuild(target_now)
            except BaseException:
                self._stale = True
                raise
            self.tables = rebuilt.tables
            self.inputs = rebuilt.inputs
            self.events_end = dict(rebuilt.events_end)
            self._rebuilt_for = target_now

    async def resume_offsets(self) -> dict[int, int | None]:
        """Per owned partition of dealer.inputs, the first offset the log does not say was
        decided (None: its records name no input, so the group's commit is all there is).
        Rebuilds first if needed: what the stream's reader asks after a rebalance."""
        async with self._lock:
            await self._ensure_ready_locked(decide=True)
            owned = self._rebuilt_for
            partitions = set(self.inputs) if owned is None else owned
            return {p: self.inputs.get(p, InputCheckpoint()).resume_at() for p in partitions}

    def on_assigned(self) -> None:
        """A rebalance gave this worker its (new) partitions: rebuild their tables now, in
        the background (the rebalance callback must not wait for a read of the log)."""
        self._joined = True
        self._revoked = False
        self._stale = True
        self._answer_moved()
        self._rebuild_in_background()

    def _rebuild_in_background(self) -> None:
        if self._rebuild_task is None or self._rebuild_task.done():
            self._rebuild_task = asyncio.get_running_loop().create_task(self._rebuild_soon())

    async def _rebuild_soon(self) -> None:
        try:
            await self.ensure_ready()
        except Exception:
            log.exception("rebuilding the owned tables failed; the next input retries")

    async def on_revoked(self) -> None:
        """The partitions are about to go to their new owners: once the decision under way
        (if any) is in the log, drop every table so nothing more is decided on them."""
        async with self._lock:
            self._revoked = True
            self._stale = True
            self.tables = {}
            self.inputs = {}
            self.events_end = {}
            self._rebuilt_for = frozenset()

    def _answer_moved(self) -> None:
        """Waiters of inputs whose table this worker no longer owns: answered `moved` (the
        HTTP door says 503, the client retries; the new owner decides the input from the
        log, so a retry is applied once or answered `duplicate_input`)."""
        owned = self._owned()
        if owned is None:
            return

        def moved(key: str, partition: int | None) -> dict | None:
            if partition is not None and partition not in owned:
                return {"status": MOVED, "input_id": key.partition(_SEP)[0]}
            return None

        self._waiters.answer_each(moved)

    # --- HTTP waiters -----------------------------------------------------------------

    def expect(self, input_id: str, partition: int | None = None, signature: str = ""
               ) -> asyncio.Future:
        """A future the HTTP door awaits: resolved with the decision on the input with this
        id AND this signature (a forged input reusing a genuine one's id is answered to its
        own sender only, never to the genuine device)."""
        return self._waiters.expect(waiter_key(input_id, signature), partition)

    def forget(self, input_id: str, fut: asyncio.Future, signature: str = "") -> None:
        self._waiters.forget(waiter_key(input_id, signature), fut)

    def _answer(self, key: str, report: dict) -> None:
        self._waiters.resolve(key, report)

    # --- decisions --------------------------------------------------------------------

    async def handle_batch(self, items: Sequence[Item], give_up: GiveUp | None = None
                           ) -> list[dict | None]:
        """Decide `items` in order, publish everything they produced, await the acks, then
        adopt the states and answer the waiters. An item of a partition this worker does
        not own (any more) is skipped (None): its new owner reads it from the log; so is an
        item at an offset the log already decided (a redelivery). An item
        that cannot be decided at all (an error, not a refusal) is `give_up(index, error)`:
        its dead letter is published with the batch and the others are decided (None).
        Raises if the publish fails; the states are then rebuilt before the next decision."""
        async with self._lock:
            await self._ensure_ready_locked(decide=True)
            owned = self._rebuilt_for
            plan = _Plan()
            out: list[dict | None] = []
            handled: dict[int, list[int]] = {}  # offsets per partition, decided or skipped
            for index, item in enumerate(items):
                raw, partition = item[0], item[1]
                offset = item[2] if len(item) > 2 else None
                if owned is not None and partition is not None and partition not in owned:
                    out.append(None)
                    continue
                ref = None
                if partition is not None and offset is not None:
                    handled.setdefault(partition, []).append(offset)
                    checkpoint = self.inputs.setdefault(partition, InputCheckpoint())
                    if checkpoint.applied(offset):
                        out.append(None)
                        continue
                    ref = InputPosition(partition=partition, offset=offset,
                                        decided_through=checkpoint.through)
                try:
                    out.append(self._decide(plan, raw, ref))
                except Exception as error:  # the input, not the service, failed
                    if give_up is None:
                        raise
                    plan.records.append(give_up(index, error))
                    out.append(None)
            placed = await self._publish(plan)
            lost = await self._lost(plan, placed)
            if lost is None:
                self._adopt(plan)
                for partition, offsets in handled.items():
                    self.inputs[partition].advance(offsets)
            else:
                self._void(plan, lost)
        for key, report in plan.reports:
            self._answer(key, report)
        return out

    async def tick_all(self) -> None:
        """Close the overdue betting windows of the tables this worker owns, and raise or
        void the rounds left hanging (skipped while they are being rebuilt after an
        assignment)."""
        async with self._lock:
            if not self.ready:
                return
            now, mono = self.clock.now(), self.clock.elapsed()
            plan = _Plan()
            for table_id, state in self.tables.items():
                outcome = tick(state, now)
                seen = self._still_since.get(table_id)
                if seen is None or seen[0] != state.seq:
                    seen = self._still_since[table_id] = (state.seq, mono)
                if not outcome.events:
                    outcome = watch(state, now, timedelta(seconds=mono - seen[1]), self.config)
                if outcome.events:
                    self._add_events(plan, table_id, outcome.events, outcome.state)
                    plan.states[table_id] = outcome.state
            placed = await self._publish(plan)
            lost = await self._lost(plan, placed)
            if lost is None:
                self._adopt(plan)
            else:
                self._void(plan, lost)

    def _state(self, plan: _Plan, table_id: str) -> TableState:
        return plan.states.get(table_id) or self.tables.get(table_id) or TableState(table_id)

    def _decide(self, plan: _Plan, raw: bytes, ref: InputPosition | None = None) -> dict:
        parsed = parse_raw(raw)
        if parsed.input is None:
            return self._refuse(plan, parsed, parsed.problem, raw, ref)
        inp = parsed.input
        outcome = step(self._state(plan, inp.table_id), inp, self.clock.now(), self.config,
                       ref)
        plan.states[inp.table_id] = outcome.state
        self._add_events(plan, inp.table_id, outcome.events, outcome.state)
        if outcome.refusal is not None:
            return self._refuse(plan, parsed, outcome.refusal, raw, ref)
        plan.accepted.append(inp.table_id)
        report = {"status": "accepted", "input_id": inp.input_id, "table_id": inp.table_id,
                  "events": [_brief(e) for e in outcome.events]}
        plan.reports.append((waiter_key(inp.input_id, inp.signature), report))
        plan.report_events.append([e.hash for e in outcome.events])
        return report

    def _add_events(self, plan: _Plan, table_id: str, events, state: TableState) -> None:
        key = self.config.table_events_key
        for event in events:
            if key is not None:  # authenticated: consumers refuse an event without it
                event = event.model_copy(update={"auth": event_auth(key, event.hash)})
            plan.records.append((TABLE_EVENTS_TOPIC, table_id.encode(),
                                 event.model_dump_json().encode()))
            plan.events.append((event, state))

    def _refuse(self, plan: _Plan, parsed: Parsed, refusal: InputRefusal, raw: bytes,
                ref: InputPosition | None = None) -> dict:
        record = make_rejection(parsed, refusal, raw, self.clock.now(), ref)
        plan.records.append((DEALER_REJECTIONS_TOPIC, record.table_id.encode(),
                             record.model_dump_json().encode()))
        known = parsed.table_id in plan.states or parsed.table_id in self.tables
        plan.refused.append((parsed.table_id if known else metrics.UNKNOWN_TABLE, parsed,
                             refusal))
        report = {"status": "refused", "input_id": parsed.input_id,
                  "table_id": parsed.table_id, "reason_code": refusal.code,
                  "message": refusal.message, "rejection_id": record.rejection_id}
        signature = parsed.input.signature if parsed.input is not None else ""
        plan.reports.append((waiter_key(parsed.input_id, signature), report))
        # a refusal after its window ran out carries the window's events
        plan.report_events.append([e.hash for e, _ in plan.events
                                   if e.input_ref == ref and ref is not None])
        return report

    async def _publish(self, plan: _Plan) -> Sequence[tuple[int, int]] | None:
        if not plan.records:
            return None
        try:
            return await self._publish_all(plan.records)
        except Exception:
            log.exception("publishing %d record(s) failed; rebuilding from the log",
                          len(plan.records))
            self._stale = True
            raise

    async def _lost(self, plan: _Plan, placed: Sequence[tuple[int, int]] | None
                    ) -> Refold | None:
        """None if the plan's table events landed as chained (each partition's right at
        the end the states reflect, contiguous); else the refold of what landed from
        there (docs/decisions/dealer-fencing.md). Raises if the re-read fails (the states
        are then rebuilt before the next decision, and no waiter is answered)."""
        if placed is None or self._read_events is None:
            return None
        ours: dict[int, list[int]] = {}
        for (topic, _, _), (partition, offset) in zip(plan.records, placed, strict=True):
            if topic == TABLE_EVENTS_TOPIC:
                ours.setdefault(partition, []).append(offset)
        moved = [p for p, offsets in ours.items()
                 if not landed_clean(self.events_end.get(p), offsets)]
        for p, offsets in ours.items():
            if p not in moved:
                self.events_end[p] = offsets[-1] + 1
        if not moved:
            return None
        heads = {t: ChainHead(s.seq, s.head_hash, s.void_tips) for t, s in self.tables.items()}
        lost = Refold()
        try:
            for p in moved:
                start = self.events_end.get(p, min(ours[p]))
                records = await self._read_events(p, start, max(ours[p]) + 1)
                found = refold(heads, records, set(ours[p]), self.config.table_events_key,
                               self._accept_unsigned)
                lost.valid |= found.valid
                lost.moved |= found.moved
                lost.heads.update(found.heads)
        except Exception:
            log.exception("re-reading table.events after a batch landed out of place "
                          "failed; rebuilding from the log")
            self._stale = True
            raise
        if not lost.moved and all(e.hash in lost.valid for e, _ in plan.events):
            # only void records of another writer in between: they change no state but
            # the tables' void tips (as the rebuild's fold would give them)
            for p in moved:
                self.events_end[p] = max(ours[p]) + 1
            for table_id, head in lost.heads.items():
                if table_id in self.tables:
                    self.tables[table_id].void_tips = head.void_tips
            return None
        self._stale = True  # another writer's valid events moved the partition's tables
        return lost

    def _void(self, plan: _Plan, lost: Refold) -> None:
        """Another writer wrote in the partition while this batch was decided: an answer
        whose events folded void, or (an answer without events) whose table the other
        writer moved, is not given: its waiter is told to resend (the resend reaches the
        table's owner, which decides it on the log's state). The states are dropped and
        rebuilt from the log before the next decision; no checkpoint moves but the log's."""
        self._rebuild_in_background()  # the timer too waits for it (tick_all: not ready)
        void = {e.hash for e, _ in plan.events if e.hash not in lost.valid}
        for event, state in plan.events:
            if event.hash in void:
                log.warning("%s: this worker's table %s seq %s (%s) landed after another "
                            "writer's; void, its input is answered 'resend'", VOID,
                            event.table_id, event.seq, event.type)
                metrics.TABLE_EVENTS_VOID.labels("dealer-event", event.table_id).inc()
            else:
                count_published(event, state)
        for (_, report), hashes in zip(plan.reports, plan.report_events, strict=True):
            table = report.get("table_id")
            if any(h in void for h in hashes) or (not hashes and table in lost.moved):
                input_id = report.get("input_id")
                report.clear()  # in place: handle_batch returns the same reports
                report.update({"status": LOST_RACE, "input_id": input_id, "table_id": table})

    def _adopt(self, plan: _Plan) -> None:
        """Everything in `plan` is in the log: the states move on, the metrics count it."""
        self.tables.update(plan.states)
        for event, state in plan.events:
            count_published(event, state)
        for table_id in plan.accepted:
            metrics.INPUTS.labels(table_id, "accepted", metrics.NO_REASON).inc()
        for label, parsed, refusal in plan.refused:
            metrics.INPUTS.labels(label, "refused", refusal.code).inc()
            if refusal.code not in NOT_THE_DEALERS:
                current = self.tables.get(parsed.table_id)
                metrics.DEALER_ACTIVITY.labels(label, dealer_of(current), "refused_input").inc()
            log.info("refused %s on table %s: %s (%s)", parsed.input_id, parsed.table_id,
                     refusal.code, refusal.message)


def game_of(state: TableState) -> str:
    """The game the table's current round (or shoe) plays, for the rounds metric."""
    profile = state.round.profile if state.round else state.shoe.profile if state.shoe else None
    try:
        return load_profile(profile).game if profile else metrics.OTHER
    except ProfileError:
        return metrics.OTHER


def count_published(event: TableEventBase, state: TableState) -> None:
    """Metrics of one event the broker acknowledged (a round is counted once, when its
    RoundCompleted or RoundVoided is in the log)."""
    metrics.TABLE_EVENTS.labels(event.type).inc()
    if isinstance(event, RoundCompleted | RoundVoided):
        outcome = "completed" if isinstance(event, RoundCompleted) else "voided"
        metrics.ROUNDS.labels(event.table_id, game_of(state), outcome).inc()
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
