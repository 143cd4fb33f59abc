"""bet-settlement's Faust app: one agent over bets.placed, table.events and
round.results (all keyed by table id, so co-partitioned), with each round's
state in a persistent table keyed "<table>:<round>"."""

from __future__ import annotations

import logging
from collections import Counter

import faust
from pydantic import ValidationError

from services.bet_settlement import intake
from services.infra.clock import SystemClock
from services.infra.faust_app import make_app, topic
from services.infra.settings import get_settings
from shared.events.bet_events import BetPlaced
from shared.events.results import RoundResultPublished
from shared.events.table import RoundOpened, parse_table_event

log = logging.getLogger("croupier.bet_settlement")
settings = get_settings()
clock = SystemClock()
# a crashed worker's partitions are reassigned after 10 s instead of Faust's 60 s
app = make_app("bet-settlement", settings, broker_session_timeout=10,
               broker_heartbeat_interval=1)
counts: Counter[str] = Counter()  # metrics come later; the counts are already kept

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


def step(source: str, raw: bytes) -> list[intake.Output]:
    now = clock.now()
    if source == "bets.placed":
        bet = BetPlaced.model_validate_json(raw)
        state, out = intake.on_bet(load(bet.table_id, bet.round_id), bet, now)
        save(state)
        return out
    if source == "round.results":
        result = RoundResultPublished.model_validate_json(raw)
        state, out = intake.on_result(load(result.table_id, result.round_id), result, now)
        save(state)
        return out
    event = parse_table_event(raw)
    round_id = getattr(event, "round_id", None)
    if round_id is None:
        return []
    out: list[intake.Output] = []
    if isinstance(event, RoundOpened):  # rounds that never opened are over for good
        for other in pending_rounds.get(event.table_id) or []:
            if other != round_id and (waiting := load(event.table_id, other)) is not None:
                expired, more = intake.expire_pending(waiting, now)
                save(expired)
                out += more
    state, more = intake.on_table_event(load(event.table_id, round_id), event, now)
    save(state)
    return out + more


@app.agent(inputs)
async def settlement_agent(stream):
    async for event in stream.events():
        source = event.message.topic
        try:
            out = step(source, event.value)
        except ValidationError as exc:
            counts[f"malformed_{source}"] += 1
            log.error("malformed record on %s at offset %s ignored (logged, counted): %s",
                      source, event.message.offset, exc)
            continue
        for name, key, record in out:
            await outputs[name].send(key=key.encode(), value=record.model_dump_json().encode())
            counts[f"out_{type(record).__name__}"] += 1


@app.page("/health")
async def health(web, request):
    ready = app.tables.recovery.completed.is_set() and not app.rebalancing
    return web.json({"status": "ok" if ready else "recovering"}, status=200 if ready else 503)
