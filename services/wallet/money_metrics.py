"""The wallet's metrics: money moved (new transactions only), the house result, the
round latencies and invariant breaches, from what one command did."""

from __future__ import annotations

from datetime import datetime
from typing import get_args

from services.infra import metrics
from services.wallet.commands import EndBet, Envelope
from services.wallet.handlers import CommandResult
from shared.events.wallet_events import CREDITS, TxKind
from shared.settlement import BET_ERROR_CODES

# what a player's credit is the house pays, and the reverse; deposits and withdrawals
# move no house money
HOUSE_SIGN = {kind: -1 if kind in CREDITS else 1 for kind in get_args(TxKind)
              if kind not in ("deposit", "withdrawal")}
# services.wallet.rounds_view.check_round_takes_bet's codes, then the rule engine's (its unknown_bet
# is reported as bet_not_offered there)
DOOR_REASONS = (
    "unknown_table", "unknown_round", "round_closed", "table_flagged", "unknown_profile",
    *(code for code in BET_ERROR_CODES if code != "unknown_bet"),
)


def refused_at_the_door(code: str) -> None:
    """A bet the wallet refused before debiting it (it never reaches bet-settlement)."""
    metrics.WALLET_BETS_REFUSED.labels(code if code in DOOR_REASONS else metrics.OTHER).inc()


def init_metrics() -> None:
    metrics.init_series(metrics.WALLET_BETS_REFUSED, DOOR_REASONS)


def record(env: Envelope, outcome: CommandResult) -> None:
    """Count a command once it is applied (a duplicate carries no new transaction)."""
    status = "deferred" if outcome.answer is None else str(outcome.answer.status)
    metrics.child(metrics.WALLET_COMMANDS, env.command.type, status).inc()
    for tx in outcome.txs:
        metrics.child(metrics.MONEY, tx.kind, tx.currency).inc(tx.amount)
        if tx.kind in HOUSE_SIGN:
            metrics.child(metrics.HOUSE_RESULT, tx.currency).inc(HOUSE_SIGN[tx.kind] * tx.amount)
    if outcome.breach is not None:
        metrics.breach(outcome.breach)


def round_latencies(cmd: object, outcome: CommandResult, now: datetime
                    ) -> tuple[float | None, float | None]:
    """(settlement, end-to-end) seconds when this command ended the round's marked bet
    for the first time; None where there is nothing to observe."""
    if not (isinstance(cmd, EndBet) and cmd.last_of_round and outcome.ended_now):
        return None, None
    settle = (now - cmd.result_at).total_seconds() if cmd.result_at else None
    e2e = (now - cmd.last_card_at).total_seconds() if cmd.last_card_at else None
    return settle, e2e


def observe_latency(cmd: object, outcome: CommandResult, now: datetime) -> None:
    settle, e2e = round_latencies(cmd, outcome, now)
    if settle is not None:
        metrics.SETTLEMENT_LATENCY.observe(max(0.0, settle))
    if e2e is not None:
        metrics.END_TO_END_LATENCY.observe(max(0.0, e2e))
