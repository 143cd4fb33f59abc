"""bet-settlement's Faust app: one agent over bets.placed, table.events and
round.results (all keyed by table id, so co-partitioned), with each round's
state in a persistent table keyed "<table>:<round>"."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import faust
from pydantic import ValidationError

from services.bet_settlement import counting, intake
from services.infra import metrics, observability
from services.infra.clock import SystemClock
from services.infra.faust_app import make_app, topic
from services.infra.settings import get_settings
from shared.events.bet_events import BetPlaced
from shared.events.results import RoundResultPublished
from shared.events.table import RoundOpened, RoundVoided, parse_table_event

log = logging.getLogger("croupier.bet_settlement")
settings = get_settings()
clock = SystemClock()
# a crashed worker's partitions are reassigned after 10 s instead of Faust's 60 s
app = make_app("bet-settlement", settings, broker_session_timeout=10,
               broker_heartbeat_interval=1)
observability.install(app, "bet-settlement", settings,
                      invariants=metrics.SETTLEMENT_INVARIANTS)
counting.init_metrics()

_schema = faust.Schema(key_serializer="json", value_serializer="json")
rounds = app.Table("rounds", default=None, partitions=settings.topic_partitions, schema=_schema)
pending_rounds = app.Table("pending-rounds", default=None,  # table id -> [round ids]
                           partitions=settings.topic_partitions, schema=_schema)
inputs = app.topic("bets.placed", "table.events", "round.results",
                   key_type=bytes, value_type=bytes)
outputs = {name: topic(app, name) for name in ("bets.decisions", "bets.settled")}


def load(table_id: str, round_id: str) -> intake.RoundState | None:
    raw = rounds.get(intake.round_key(table_id, round_id))
    return None if raw is None else intake.RoundState.model_validate(raw)


def save(state: intake.RoundState) -> None:
    rounds[intake.round_key(state.table_id, state.round_id)] = state.model_dump(mode="json")
    waiting = pending_rounds.get(state.table_id) or []
    if state.status == "pending" and state.round_id not in waiting:
        pending_rounds[state.table_id] = [*waiting, state.round_id]
    elif state.status != "pending" and state.round_id in waiting:
        pending_rounds[state.table_id] = [r for r in waiting if r != state.round_id]


def commit(before: intake.RoundState | None,
           transition: tuple[intake.RoundState, list[intake.Output]]) -> list[intake.Output]:
    """Store a round's new state and count what it newly decided (replays count nothing)."""
    state, out = transition
    counting.record(counting.fresh(before, state, (record for _, _, record in out)))
    save(state)
    return out


def check_second_settlement(state: intake.RoundState | None, record, now: datetime) -> None:
    if state is None:
        return
    conflicts = intake.conflicting_settlements(state, record, now)
    if conflicts:
        metrics.breach("settlement_conflict")
        log.error("MONEY: round %s of table %s asked to settle again with different amounts "
                  "for %d bet(s), e.g. %s; the first settlement stands", state.round_id,
                  state.table_id, len(conflicts), conflicts[0])


def step(source: str, raw: bytes, published_at: datetime | None = None
         ) -> list[intake.Output]:
    now = clock.now()
    if source == "bets.placed":
        bet = BetPlaced.model_validate_json(raw)
        before = load(bet.table_id, bet.round_id)
        return commit(before, intake.on_bet(before, bet, now))
    if source == "round.results":
        result = RoundResultPublished.model_validate_json(raw)
        before = load(result.table_id, result.round_id)
        check_second_settlement(before, result, now)
        return commit(before, intake.on_result(before, result, now, published_at))
    event = parse_table_event(raw)
    round_id = getattr(event, "round_id", None)
    if round_id is None:
        return []
    out: list[intake.Output] = []
    if isinstance(event, RoundOpened):  # rounds that never opened are over for good
        for other in pending_rounds.get(event.table_id) or []:
            if other != round_id and (waiting := load(event.table_id, other)) is not None:
                out += commit(waiting, intake.expire_pending(waiting, now))
    before = load(event.table_id, round_id)
    if isinstance(event, RoundVoided):
        check_second_settlement(before, event, now)
    return out + commit(before, intake.on_table_event(before, event, now))


def broker_time(event) -> datetime | None:
    """The record's broker timestamp (when its producer sent it), if it has one."""
    timestamp = getattr(event.message, "timestamp", None)
    return datetime.fromtimestamp(timestamp, UTC) if timestamp else None


@app.agent(inputs)
async def settlement_agent(stream):
    async for event in stream.events():
        source = event.message.topic
        try:
            out = step(source, event.value, broker_time(event))
        except ValidationError as exc:
            metrics.MALFORMED.labels("bet-settlement", source).inc()
            log.error("malformed record on %s at offset %s ignored (logged, counted): %s",
                      source, event.message.offset, exc)
            continue
        for name, key, record in out:
            await outputs[name].send(key=key.encode(), value=record.model_dump_json().encode())


@app.page("/health")
async def health(web, request):
    ready = app.tables.recovery.completed.is_set() and not app.rebalancing
    return web.json({"status": "ok" if ready else "recovering"}, status=200 if ready else 503)
