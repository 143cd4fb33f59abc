"""bet-settlement's metrics: what one state transition newly decided, counted once.

A redelivered record makes the round book re-publish what was decided the first time; those
replays are not new decisions and are not counted. `fresh` compares the round's bets
before the transition (point reads of the bets the records name) with the records the
transition published: a decision is new unless the bet's entry already held that very
record; a settlement is new unless the entry already held a settlement.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol

from pydantic import BaseModel

from services.bet_settlement.round_book import RoundBets
from services.infra import metrics
from shared.bets import GAME_RULES
from shared.events.bet_events import BetAccepted, BetRejected, BetSettled
from shared.profile import ProfileError, list_profiles, load_profile
from shared.rtp import exact_rtp
from shared.settlement import BET_ERROR_CODES

KNOWN_BETS = frozenset(bet for rules in GAME_RULES.values() for bet in rules)
# the round book's own codes, then the rule engine's
REJECTION_REASONS = (
    "unknown_round", "round_closed", "duplicate_bet_id", "unknown_profile", *BET_ERROR_CODES,
)


@dataclass(frozen=True)
class Fresh:
    profile: str
    decisions: list[BetAccepted | BetRejected] = field(default_factory=list)
    settlements: list[BetSettled] = field(default_factory=list)


class HasProfile(Protocol):
    @property
    def profile(self) -> str | None: ...


def fresh(before: RoundBets | None, after: HasProfile, published: Iterable[BaseModel]
          ) -> Fresh:
    """The decisions and settlements among `published` that `before` did not hold.
    `after`: the round after the transition (its header or an in-memory `RoundBook`)."""
    out = Fresh(profile=after.profile or metrics.OTHER)
    for record in published:
        if not isinstance(record, BetAccepted | BetRejected | BetSettled):
            continue
        known = before.entry(record.bet_id) if before is not None else None
        if isinstance(record, BetSettled):
            if known is None or known.settlement is None or (  # or an annulment's refund
                    known.refund is None
                    and record.settlement_id != known.settlement.settlement_id):
                out.settlements.append(record)
        elif known is None or known.decision != record:
            out.decisions.append(record)
    return out


def bet_label(bet: str) -> str:
    """Bet types are a fixed set; a made-up name sent by a client is `other`."""
    return bet if bet in KNOWN_BETS else metrics.OTHER


def stake_squared_by_bet(settlements: Iterable[BetSettled]) -> dict[str, int]:
    """Per bet type, Σ over positions of (the round's total stake on that bet and position)².

    `settlements` are one round's: bets of one type and position win or lose together,
    so for the standard error of realised RTP they are one bet of their summed stake."""
    totals: dict[tuple[str, object], int] = {}
    for s in settlements:
        if s.outcome != "void_refund":
            key = (bet_label(s.bet), s.position)
            totals[key] = totals.get(key, 0) + s.stake
    squared: dict[str, int] = {}
    for (bet, _position), stake in totals.items():
        squared[bet] = squared.get(bet, 0) + stake * stake
    return squared


def record(new: Fresh) -> None:
    for d in new.decisions:
        if isinstance(d, BetAccepted):
            metrics.BETS.labels(bet_label(d.bet), "accepted").inc()
        else:
            metrics.BETS.labels(bet_label(d.bet), "rejected").inc()
            reason = d.reason_code if d.reason_code in REJECTION_REASONS else metrics.OTHER
            metrics.BET_REJECTIONS.labels(reason).inc()
    for s in new.settlements:
        bet = bet_label(s.bet)
        if s.outcome == "void_refund":
            metrics.BETS.labels(bet, "voided").inc()
            continue
        metrics.BETS.labels(bet, "settled").inc()
        metrics.SETTLED_STAKE.labels(new.profile, bet).inc(s.stake)
        metrics.SETTLED_RETURNED.labels(new.profile, bet).inc(s.returned)
    for bet, squared in stake_squared_by_bet(new.settlements).items():
        metrics.SETTLED_STAKE_SQUARED.labels(new.profile, bet).inc(squared)
    record_table_hold(new)


@lru_cache(maxsize=64)
def _odds(profile: str) -> dict[str, tuple[float, float]]:
    """{bet: (exact RTP, per-unit variance)} of the profile's current version."""
    try:
        report = exact_rtp(load_profile(profile))
    except ProfileError:
        return {}
    return {bet: (float(b.rtp), float(b.variance)) for bet, b in report.bets.items()}


def record_table_hold(new: Fresh) -> None:
    """The table's stake, return, theoretical return and the return's variance (`croupier
    stats`'s table figures, live): a round's bets of one type and position count as one bet
    of their summed stake, as for realised RTP. A bet type without an exact RTP adds to
    neither theory nor variance."""
    odds = _odds(new.profile)
    totals: dict[tuple[str, str, str, object], int] = {}
    for s in new.settlements:
        if s.outcome == "void_refund":
            continue
        metrics.TABLE_STAKE.labels(s.table_id, s.currency).inc(s.stake)
        metrics.TABLE_RETURNED.labels(s.table_id, s.currency).inc(s.returned)
        key = (s.table_id, s.currency, s.bet, s.position)
        totals[key] = totals.get(key, 0) + s.stake
    for (table, currency, bet, _position), stake in totals.items():
        if bet in odds:
            rtp, variance = odds[bet]
            metrics.TABLE_THEORETICAL_RETURNED.labels(table, currency).inc(stake * rtp)
            metrics.TABLE_HOLD_VARIANCE.labels(table, currency).inc(stake * stake * variance)


def init_metrics() -> None:
    """Exact RTP and variance of every profile's bets, and every known series at 0."""
    metrics.init_series(metrics.BETS, sorted(KNOWN_BETS), metrics.BET_STATES)
    metrics.init_series(metrics.BET_REJECTIONS, REJECTION_REASONS)
    for name in list_profiles():
        report = exact_rtp(load_profile(name))
        for bet, odds in report.bets.items():
            metrics.EXACT_RTP.labels(name, bet).set(float(odds.rtp))
            metrics.EXACT_VARIANCE.labels(name, bet).set(float(odds.variance))
            for counter in (metrics.SETTLED_STAKE, metrics.SETTLED_RETURNED,
                            metrics.SETTLED_STAKE_SQUARED):
                counter.labels(name, bet)
