"""One round's bets, decided and settled: pure functions of (state, record, now).

Every function returns the new state and the records to publish. A record seen
again re-publishes what was decided the first time (the first publication may
have been lost in a crash; consumers are idempotent on the ids), and never
decides twice. Bets that arrive before their round's RoundOpened (the topics
are read independently) wait in `pending`; they are decided when the round
opens, or rejected `unknown_round` when the table opens another round.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from shared.events.bet_events import (
    BetAccepted,
    BetFacts,
    BetPlaced,
    BetRejected,
    BetSettled,
    RoundManifest,
    manifest_digest,
    settlement_id,
)
from shared.events.results import RoundResultPublished
from shared.events.table import BettingClosed, RoundOpened, RoundVoided, TableEventBase
from shared.profile import ProfileError, load_profile
from shared.settlement import Bet, BetError, settle, validate_bet

log = logging.getLogger(__name__)
Status = Literal["pending", "open", "closed", "settled", "voided", "unknown"]
Output = tuple[str, str, BaseModel]  # topic, key, record


class RoundState(BaseModel):
    model_config = ConfigDict(frozen=True)

    table_id: str
    round_id: str
    status: Status = "pending"
    profile: str | None = None
    pending: list[BetPlaced] = []
    accepted: dict[str, BetPlaced] = {}
    decisions: dict[str, BetAccepted | BetRejected] = {}
    manifest: RoundManifest | None = None
    settlements: dict[str, BetSettled] = {}


def round_key(table_id: str, round_id: str) -> str:
    return f"{table_id}:{round_id}"


def _facts(bet: BetFacts) -> dict:
    return bet.model_dump(include=set(BetFacts.model_fields) - {"schema_version"})


def _reject(bet: BetPlaced, code: str, message: str, now: datetime) -> BetRejected:
    return BetRejected(**_facts(bet), reason_code=code, message=message, decided_at=now)


def _out(record: BaseModel, table_id: str) -> Output:
    topic = "bets.settled" if isinstance(record, BetSettled) else "bets.decisions"
    return topic, table_id, record


def _decide(state: RoundState, bet: BetPlaced, now: datetime) -> tuple[RoundState, Output]:
    """Accept while open and valid for the table, else reject naming why."""
    decision: BetAccepted | BetRejected
    if state.status != "open":
        reason = "unknown_round" if state.status in ("pending", "unknown") else "round_closed"
        decision = _reject(bet, reason, f"round {bet.round_id!r} is {state.status}: "
                                        "bets are accepted only while it is open", now)
    else:
        try:
            validate_bet(Bet(bet=bet.bet, position=bet.position, stake=bet.stake),
                         load_profile(state.profile))
            decision = BetAccepted(**_facts(bet), decided_at=now)
        except (BetError, ProfileError) as exc:
            decision = _reject(bet, getattr(exc, "code", "unknown_profile"), str(exc), now)
    update: dict = {"decisions": {**state.decisions, bet.bet_id: decision}}
    if isinstance(decision, BetAccepted):
        update["accepted"] = {**state.accepted, bet.bet_id: bet}
    return state.model_copy(update=update), _out(decision, bet.table_id)


def on_bet(state: RoundState | None, bet: BetPlaced, now: datetime
           ) -> tuple[RoundState, list[Output]]:
    state = state or RoundState(table_id=bet.table_id, round_id=bet.round_id)
    earlier = state.decisions.get(bet.bet_id)
    if earlier is not None:
        if earlier.player_id == bet.player_id:
            return state, [_out(earlier, bet.table_id)]  # redelivery: the same answer again
        return state, [_out(_reject(bet, "duplicate_bet_id",
                                    f"bet id {bet.bet_id!r} is already taken in this round",
                                    now), bet.table_id)]
    if state.status == "pending":
        if all(p.bet_id != bet.bet_id for p in state.pending):
            state = state.model_copy(update={"pending": [*state.pending, bet]})
        return state, []
    state, out = _decide(state, bet, now)
    return state, [out]


def _decide_pending(state: RoundState, now: datetime) -> tuple[RoundState, list[Output]]:
    outputs = []
    for bet in state.pending:
        state, out = _decide(state, bet, now)
        outputs.append(out)
    return state.model_copy(update={"pending": []}), outputs


def expire_pending(state: RoundState, now: datetime) -> tuple[RoundState, list[Output]]:
    """The table opened another round: this one never opened, its waiting bets are rejected."""
    if state.status != "pending":
        return state, []
    return _decide_pending(state.model_copy(update={"status": "unknown"}), now)


def _close(state: RoundState, closed_at: datetime) -> tuple[RoundState, list[Output]]:
    manifest = RoundManifest(
        table_id=state.table_id, round_id=state.round_id, bet_count=len(state.accepted),
        total_stake=sum(b.stake for b in state.accepted.values()),
        digest=manifest_digest(state.accepted), closed_at=closed_at)
    state = state.model_copy(update={"status": "closed", "manifest": manifest})
    return state, [_out(manifest, state.table_id)]


def on_table_event(state: RoundState | None, event: TableEventBase, now: datetime
                   ) -> tuple[RoundState, list[Output]]:
    round_id = getattr(event, "round_id", None)
    state = state or RoundState(table_id=event.table_id, round_id=round_id)
    if isinstance(event, RoundOpened):
        if state.status != "pending":
            return state, []
        opened = state.model_copy(update={"status": "open", "profile": event.profile})
        return _decide_pending(opened, now)
    if isinstance(event, BettingClosed):
        if state.status == "open":
            return _close(state, event.occurred_at)
        return _again(state, [state.manifest] if state.manifest else [])
    if isinstance(event, RoundVoided):
        return _void(state, event, now)
    return state, []


def _again(state: RoundState, records: list) -> tuple[RoundState, list[Output]]:
    return state, [_out(r, state.table_id) for r in records]


def _void(state: RoundState, event: RoundVoided, now: datetime
          ) -> tuple[RoundState, list[Output]]:
    if state.status in ("voided", "settled"):
        if state.status == "settled":
            log.error("void of round %s after it was settled ignored", state.round_id)
        return _again(state, list(state.settlements.values()))
    state, outputs = _decide_pending(state.model_copy(update={"status": "unknown"}), now) \
        if state.status == "pending" else (state, [])
    settlements = void_settlements(state, event, now)
    state = state.model_copy(update={"status": "voided", "settlements": settlements})
    return state, outputs + [_out(s, state.table_id) for s in settlements.values()]


def _batch(state: RoundState, amounts: dict[str, tuple[str, int]], cause: str, now: datetime,
           **timing) -> dict[str, BetSettled]:
    """One settlement per accepted bet; the last one carries `last_of_round`."""
    last = next(reversed(amounts), None)
    return {bet_id: BetSettled(**_facts(state.accepted[bet_id]),
                               settlement_id=settlement_id(bet_id), outcome=outcome,
                               returned=returned, cause=cause, settled_at=now,
                               last_of_round=bet_id == last, **timing)
            for bet_id, (outcome, returned) in amounts.items()}


def void_settlements(state: RoundState, event: RoundVoided, now: datetime
                     ) -> dict[str, BetSettled]:
    amounts = {bet_id: ("void_refund", bet.stake) for bet_id, bet in state.accepted.items()}
    return _batch(state, amounts, f"void:{state.table_id}:{state.round_id}", now,
                  result_at=event.occurred_at)


def result_settlements(state: RoundState, published: RoundResultPublished, now: datetime,
                       result_at: datetime | None = None) -> dict[str, BetSettled]:
    """Every accepted bet settled by the rule engine. `result_at`: when the result was
    published (the record's broker timestamp), else the result's own time."""
    profile = load_profile(state.profile or published.profile)
    amounts = {}
    for bet_id, bet in state.accepted.items():
        s = settle(Bet(bet=bet.bet, position=bet.position, stake=bet.stake),
                   published.result, profile)
        amounts[bet_id] = (s.outcome, s.returned)
    return _batch(state, amounts, published.result_id, now,
                  result_at=result_at or published.occurred_at,
                  last_card_at=published.last_card_at)


def conflicting_settlements(state: RoundState, record: RoundResultPublished | RoundVoided,
                            now: datetime) -> list[str]:
    """Bets of an already settled (or voided) round that `record` would settle for a
    different amount: the round is being asked to settle twice, differently."""
    if state.status not in ("settled", "voided"):
        return []
    again = (void_settlements(state, record, now) if isinstance(record, RoundVoided)
             else result_settlements(state, record, now))
    return sorted(bet_id for bet_id, s in again.items()
                  if bet_id in state.settlements
                  and state.settlements[bet_id].returned != s.returned)


def on_result(state: RoundState | None, published: RoundResultPublished, now: datetime,
              result_at: datetime | None = None) -> tuple[RoundState, list[Output]]:
    """Settle every accepted bet with the rule engine, once."""
    state = state or RoundState(table_id=published.table_id, round_id=published.round_id)
    if state.status in ("settled", "voided"):
        if state.status == "voided":
            log.error("result %s for voided round %s ignored", published.result_id,
                      state.round_id)
        return _again(state, list(state.settlements.values()))
    outputs: list[Output] = []
    if state.status == "pending":
        state, outputs = _decide_pending(state.model_copy(update={"status": "unknown"}), now)
    elif state.status == "open":  # the result came before the close: close first
        state, outputs = _close(state, published.occurred_at)
    settlements = result_settlements(state, published, now, result_at)
    state = state.model_copy(update={"status": "settled", "settlements": settlements})
    return state, outputs + [_out(s, state.table_id) for s in settlements.values()]
