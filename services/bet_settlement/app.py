"""bet-settlement's Faust app: one agent over bets.placed, table.events and round.results
(all keyed by table id, so co-partitioned), taking records in batches.

State (persistent tables, written to the changelog partition of the record being applied,
that is the round's partition):
- `rounds`: `<table>:<round>` -> the round's header (`round_book.RoundHeader`), bounded;
  `<table>:<round>/b/<bet id>` -> the bet's entry (`round_book.BetEntry`) and
  `<table>:<round>/n/<k>` -> the id of the round's k-th bet;
- `pending-rounds`: table id -> ids of its rounds with bets read before their RoundOpened.
No value grows with the number of bets in a round.

Header and entries share one table, so one changelog partition keeps them in the order
they were written (entries first, the header last): a crash leaves a prefix of a
batch's writes, and an entry whose ordinal is past its header's count was never
recorded (its redelivered bet is recorded again). Every batch is flushed (outputs and
changelog records acknowledged) before its offsets are committed. Round keys expire
from the changelog after twice the topics' retention: no record older than that can be
redelivered, and a settled round's facts stay in the log itself.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import faust
from faust import web

from croupier.services.bet_settlement import decision_metrics, round_book
from croupier.services.infra import metrics, observability
from croupier.services.infra.batching import Record, publish_all, run_batches
from croupier.services.infra.clock import SystemClock
from croupier.services.infra.dead_letters import apply_each, flag_table
from croupier.services.infra.faust_app import make_app
from croupier.services.infra.observability import health_problems
from croupier.services.infra.settings import Settings, get_settings
from croupier.shared.events.bet_events import BET_INTAKE, IntakeMark
from croupier.shared.events.event_auth import TableFlagged, TableWatch, advance
from croupier.shared.events.results import RoundResultPublished
from croupier.shared.events.table import RoundOpened, RoundVoided, TableEventBase, parse_table_event

log = logging.getLogger("croupier.bet_settlement")
clock = SystemClock()
# Faust stores plain values with its json codec: headers and entries as JSON objects
_schema: faust.Schema = faust.Schema(key_serializer="json", value_serializer="json")

# Built by build_app when the worker starts (importing this module builds nothing):
settings: Settings
app: faust.App
rounds: Any  # Faust tables (dicts in unit tests)
pending_rounds: Any  # table id -> [round ids]
# table id -> its chain's last authentic event and its flag (shared/events/event_auth.py)
table_chains: Any
inputs: faust.TopicT


def build_app(service_settings: Settings | None = None) -> faust.App:
    """The worker's Faust app with its tables, topic, agent and pages; the exact RTP of
    every profile is computed here (decision_metrics.init_metrics), not at import."""
    global settings, app, rounds, pending_rounds, table_chains, inputs
    settings = service_settings or get_settings()
    # a crashed worker's partitions are reassigned after 10 s instead of Faust's 60 s
    app = make_app("bet-settlement", settings, broker_session_timeout=10,
                   broker_heartbeat_interval=1)
    observability.install(app, "bet-settlement", settings,
                          invariants=metrics.SETTLEMENT_INVARIANTS)
    decision_metrics.init_metrics()
    round_retention_ms = 2 * settings.retention_ms
    rounds = app.Table("rounds", default=None, partitions=settings.topic_partitions,
                       schema=_schema,
                       extra_topic_configs={"cleanup.policy": "compact,delete",
                                            "retention.ms": str(round_retention_ms)})
    pending_rounds = app.Table("pending-rounds", default=None,
                               partitions=settings.topic_partitions, schema=_schema)
    table_chains = app.Table("table-chains", default=None,
                             partitions=settings.topic_partitions, schema=_schema)
    inputs = app.topic("bets.placed", "table.events", "round.results",
                       key_type=bytes, value_type=bytes)
    app.agent(inputs)(settlement_agent)
    app.page("/health")(HealthView)
    return app


class StoredBets:
    """One round's bets in `rounds` (round_book.RoundBets); an entry is parsed once per record."""

    def __init__(self, table_id: str, round_id: str, header: round_book.RoundHeader | None
                 ) -> None:
        self.table_id, self.round_id = table_id, round_id
        self.received = header.received if header is not None else 0
        self._seen: dict[str, round_book.BetEntry | None] = {}

    def entry(self, bet_id: str) -> round_book.BetEntry | None:
        """The bet's entry, unless a crash kept it but lost its header's update (its ordinal
        is past the header's count): then it was never recorded."""
        if bet_id not in self._seen:
            raw = rounds.get(round_book.bet_key(self.table_id, self.round_id, bet_id))
            entry = None if raw is None else round_book.BetEntry.model_validate(raw)
            self._seen[bet_id] = None if entry is None or entry.ordinal > self.received \
                else entry
        return self._seen[bet_id]

    def bet_at(self, ordinal: int) -> str | None:
        return rounds.get(round_book.order_key(self.table_id, self.round_id, ordinal))

    def spot(self, key: str) -> round_book.SpotTotal | None:
        """The spot's total as the header knows it. Spot totals are written before the
        header in the same changelog partition, so a crash can keep a total whose last
        contributors are past the header's count (never recorded): walk back through their
        entries (each holds the total before it and the previous contributor)."""
        raw = rounds.get(key)
        spot = None if raw is None else round_book.SpotTotal.model_validate(raw)
        return round_book.effective_spot(spot, self.received, self._written_at)

    def _written_at(self, ordinal: int) -> round_book.BetEntry | None:
        """The entry last written for `ordinal`, even one its header never counted."""
        bet_id = self.bet_at(ordinal)
        raw = None if bet_id is None else rounds.get(
            round_book.bet_key(self.table_id, self.round_id, bet_id))
        return None if raw is None else round_book.BetEntry.model_validate(raw)


def load(table_id: str, round_id: str) -> round_book.RoundHeader | None:
    raw = rounds.get(round_book.round_key(table_id, round_id))
    return None if raw is None else round_book.RoundHeader.model_validate(raw)


def save(before: round_book.RoundHeader | None, t: round_book.Transition) -> None:
    h = t.header
    for ordinal, bet_id in t.order.items():
        rounds[round_book.order_key(h.table_id, h.round_id, ordinal)] = bet_id
    for bet_id, entry in t.entries.items():
        rounds[round_book.bet_key(h.table_id, h.round_id, bet_id)] = entry.model_dump(mode="json")
    for key, spot in t.spots.items():  # after the entries they walk back through
        rounds[key] = spot.model_dump(mode="json")
    if h != before:
        rounds[round_book.round_key(h.table_id, h.round_id)] = h.model_dump(mode="json")
    waiting = pending_rounds.get(h.table_id) or []
    if h.status == "pending" and h.round_id not in waiting:
        pending_rounds[h.table_id] = [*waiting, h.round_id]
    elif h.status != "pending" and h.round_id in waiting:
        pending_rounds[h.table_id] = [r for r in waiting if r != h.round_id]


def commit(before: round_book.RoundHeader | None, bets: StoredBets, t: round_book.Transition
           ) -> list[round_book.Output]:
    """Store a round's transition and count what it newly decided (replays count nothing)."""
    decision_metrics.record(decision_metrics.fresh(bets, t.header, (record for _, _, record in t.out)))
    save(before, t)
    return t.out


def check_second_settlement(before: round_book.RoundHeader | None, bets: StoredBets,
                            record) -> None:
    conflicts = round_book.conflicts(before, bets, record)
    if conflicts and before is not None:  # only a settled round (a header) has conflicts
        metrics.breach("settlement_conflict")
        log.error("MONEY: round %s of table %s asked to settle again with different amounts "
                  "for %d bet(s), e.g. %s; the first settlement stands", before.round_id,
                  before.table_id, len(conflicts), conflicts[0])


def step(source: str, raw: bytes, published_at: datetime | None = None
         ) -> list[round_book.Output]:
    now = clock.now()
    if source == "bets.placed":
        record = BET_INTAKE.validate_json(raw)
        before = load(record.table_id, record.round_id)
        bets = StoredBets(record.table_id, record.round_id, before)
        if isinstance(record, IntakeMark):
            return commit(before, bets, round_book.apply_mark(before, bets, record, now))
        return commit(before, bets, round_book.place(before, bets, record, now))
    if source == "round.results":
        result = RoundResultPublished.model_validate_json(raw)
        flagged = TableWatch.from_json(table_chains.get(result.table_id)).flagged
        if flagged is not None:  # dead-lettered: an operator re-drives it after review
            raise TableIsFlagged(f"table {result.table_id} is flagged ({flagged}): round "
                                 f"{result.round_id} is not settled")
        before = load(result.table_id, result.round_id)
        bets = StoredBets(result.table_id, result.round_id, before)
        check_second_settlement(before, bets, result)
        return commit(before, bets, round_book.apply_result(before, bets, result, now, published_at))
    event = verified(parse_table_event(raw))
    round_id = getattr(event, "round_id", None)
    if round_id is None:
        return []
    out: list[round_book.Output] = []
    if isinstance(event, RoundOpened):  # rounds that never opened are over for good
        for other in pending_rounds.get(event.table_id) or []:
            if other != round_id and (waiting := load(event.table_id, other)) is not None:
                bets = StoredBets(event.table_id, other, waiting)
                out += commit(waiting, bets, round_book.expire(waiting, bets, now))
    before = load(event.table_id, round_id)
    bets = StoredBets(event.table_id, round_id, before)
    if isinstance(event, RoundVoided):
        check_second_settlement(before, bets, event)
    return out + commit(before, bets, round_book.apply_table_event(before, bets, event, now))


class TableIsFlagged(Exception):
    """A result for a flagged table: never settled until a supervisor reopens the table."""


def verified(event: TableEventBase) -> TableEventBase:
    """`event`, once its HMAC and its place in the chain are checked; a refused event
    flags its table (stored) and raises, so apply_each dead-letters it. An authentic event
    already seen is applied again (intake is idempotent): the chain head and the rounds
    are in two changelogs, and a crash may have kept one without the other."""
    watch = TableWatch.from_json(table_chains.get(event.table_id))
    try:
        after, _ = advance(watch, event, settings.table_events_key_bytes,
                           settings.table_events_accept_unsigned)
    except TableFlagged as flagged:
        table_chains[event.table_id] = flagged.watch.to_json()
        flag_table("bet-settlement", flagged.refused, event.table_id)
        raise flagged.refused from None
    if after != watch:
        table_chains[event.table_id] = after.to_json()
    return event


def broker_time(event) -> datetime | None:
    """The record's broker timestamp (when its producer sent it), if it has one."""
    timestamp = getattr(event.message, "timestamp", None)
    return datetime.fromtimestamp(timestamp, UTC) if timestamp else None


def apply_one(event) -> list[Record]:
    out = step(event.message.topic, event.value, broker_time(event))
    return [(name, key.encode(), record.model_dump_json().encode()) for name, key, record in out]


def apply_batch(events) -> list[Record]:
    """Apply a batch's records in order; every record they produced, ready to send. A
    record that cannot be applied (unparseable, an unknown profile, any error) is
    dead-lettered and the others are applied."""
    return apply_each("bet-settlement", events, apply_one, clock.now)


async def settle_batch(events) -> None:
    """Publish what the batch decided (run_batches flushes its table writes before its
    offsets are committed)."""
    await publish_all(app, apply_batch(events))


async def settlement_agent(stream):  # the agent (build_app registers it)
    await run_batches(stream, settle_batch)


class HealthView(web.View):  # GET /health (build_app registers it)
    async def get(self, request: web.Request) -> web.Response:
        problems = health_problems(app)
        return self.json({"status": "ok" if not problems else "unavailable",
                          "problems": problems}, status=503 if problems else 200)
