"""Every Prometheus metric the platform exports, defined once.

Names follow Prometheus conventions: `croupier_` prefix, `_total` counters,
`_seconds` histograms, money in minor units (named so), and labels with a
bounded set of values only: table ids, games, bet types, reason codes, routes.
Never a player id, a bet id or a round id (unbounded cardinality).

Realised RTP is exported as counters (stake, returned, stake squared) beside
the exact RTP and per-unit variance as gauges, so an alert can compare them in
standard errors for the bets actually settled, not by a fixed percentage.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, Histogram, generate_latest
from prometheus_client.metrics import MetricWrapperBase

LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

# dealer-event
INPUTS = Counter("croupier_dealer_inputs_total", "Dealer inputs by outcome and reason code.",
                 ["table", "outcome", "reason"])
ROUNDS = Counter("croupier_rounds_total", "Rounds ended, by table, game and outcome.",
                 ["table", "game", "outcome"])
VOIDS = Counter("croupier_round_voids_total", "Voided rounds by reason code.", ["reason"])
ROUNDS_STALLED = Counter(
    "croupier_rounds_stalled_total",
    "Rounds that had no input for CROUPIER_ROUND_STALL_SECONDS (a round_stalled event), by "
    "table.", ["table"])
# per dealer (names from the casino's roster: a bounded set, like the tables): `croupier stats`
# live, for the dashboards (docs/decisions/archive.md, "Dealer and table statistics"). One
# family, so each kind's series shows as soon as any dealer's does.
DEALER_ACTIVITY = Counter(
    "croupier_dealer_activity_total",
    "Per table and dealer, by kind: rounds completed and voided, rounds corrected "
    "(round_corrected, misdeal_corrected; the round's dealer) and dealer inputs refused (a "
    "device's resend aside; the dealer of the table's newest round, `none` before its first).",
    ["table", "dealer", "kind"])
TABLE_EVENTS = Counter("croupier_table_events_published_total",
                       "Table events appended to table.events, by event type.", ["type"])
TABLE_EVENTS_REFUSED = Counter(
    "croupier_table_events_refused_total",
    "Table events a consumer refused (forged, altered, unsigned or out of order): each is "
    "dead-lettered and its table flagged, never settled on.", ["service", "table"])

TABLE_EVENTS_VOID = Counter(
    "croupier_table_events_void_total",
    "Authentic table events a consumer skipped as void: a lost race (a dealer-event worker "
    "that had lost the table sealed a seq another one sealed first, or chained on such an "
    "event). Never applied, never flagged (docs/decisions/dealer-fencing.md).",
    ["service", "table"])

# game-evaluation
RESULTS = Counter("croupier_round_results_total", "Round results published.", ["table", "game"])
EVALUATION_PROBLEMS = Counter("croupier_evaluation_problems_total",
                              "Table events the evaluator could not reconcile.")

# bet-settlement
BETS = Counter("croupier_bets_total", "Bets by bet type and final state "
               "(accepted, rejected, settled, voided).", ["bet", "state"])
BET_REJECTIONS = Counter("croupier_bet_rejections_total", "Rejected bets by reason code.",
                         ["reason"])
SETTLED_STAKE = Counter("croupier_settled_stake_minor_units_total",
                        "Stakes of settled (not voided) bets, for realised RTP.", ["profile", "bet"])
SETTLED_RETURNED = Counter("croupier_settled_returned_minor_units_total",
                           "Amounts returned on settled bets, for realised RTP.", ["profile", "bet"])
SETTLED_STAKE_SQUARED = Counter(
    "croupier_settled_stake_squared_minor_units_total",
    "Sum of squared stakes of settled bets: the standard error of realised RTP needs it.",
    ["profile", "bet"])
EXACT_RTP = Gauge("croupier_rtp_exact_ratio", "Exact RTP of a bet from the rule engine.",
                  ["profile", "bet"])
EXACT_VARIANCE = Gauge("croupier_rtp_exact_variance_ratio",
                       "Exact variance of the amount returned per unit staked.", ["profile", "bet"])
# a table's hold against the hold its bets should give (`croupier stats`, live)
TABLE_STAKE = Counter("croupier_table_settled_stake_minor_units_total",
                      "Stakes of settled (not voided) bets per table and currency.",
                      ["table", "currency"])
TABLE_RETURNED = Counter("croupier_table_settled_returned_minor_units_total",
                         "Amounts returned on settled bets per table and currency.",
                         ["table", "currency"])
TABLE_THEORETICAL_RETURNED = Counter(
    "croupier_table_theoretical_returned_minor_units_total",
    "Σ stake × exact RTP of the bets settled, per table and currency: 1 - it over the stake "
    "is the hold the bets placed should give.", ["table", "currency"])
TABLE_HOLD_VARIANCE = Counter(
    "croupier_table_hold_variance_minor_units_squared_total",
    "Σ over rounds and bet types of (the round's stake on it)² × its exact per-unit variance, "
    "per table and currency: the variance of (stake - returned), for the hold's z-score.",
    ["table", "currency"])

# wallet
MONEY = Counter("croupier_money_minor_units_total",
                "Money moved by the wallet, by kind (deposit, withdrawal, stake_debit, "
                "bet_refund, payout).", ["kind", "currency"])
HOUSE_RESULT = Gauge("croupier_house_result_minor_units",
                     "Stakes minus payouts minus refunds, as seen by this wallet process.",
                     ["currency"])
WALLET_BETS_REFUSED = Counter("croupier_wallet_bets_refused_total",
                              "Bets the wallet refused before debiting them, by reason code "
                              "(they never reach bet-settlement).", ["reason"])
WALLET_COMMANDS = Counter("croupier_wallet_commands_total",
                          "Commands the accounts agent applied, by command and answer status.",
                          ["command", "status"])
OPERATOR_WALLET_CALLS = Counter(
    "croupier_operator_wallet_calls_total", "Seamless mode: deliveries of calls to the "
    "operator's wallet, by kind (debit, credit, rollback) and outcome (ok, refused, "
    "no_answer).", ["kind", "outcome"])
OPERATOR_WALLET_RETRIES = Counter(
    "croupier_operator_wallet_retries_total", "Seamless mode: credits and rollbacks "
    "delivered again after no answer, by kind.", ["kind"])
OPERATOR_WALLET_SECONDS = Histogram(
    "croupier_operator_wallet_call_seconds", "Seamless mode: how long one delivery to the "
    "operator's wallet took, by kind.", ["kind"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10))
INVARIANT_BREACHES = Counter("croupier_invariant_breaches_total",
                             "Money invariant violations detected at run time.", ["invariant"])
SETTLEMENT_LATENCY = Histogram("croupier_settlement_latency_seconds",
                               "Round result published to the round's last wallet credit.",
                               buckets=LATENCY_BUCKETS)
END_TO_END_LATENCY = Histogram("croupier_end_to_end_latency_seconds",
                               "Last card scanned to the round's last wallet credit.",
                               buckets=LATENCY_BUCKETS)

# every service
CONSUMER_LAG = Gauge("croupier_consumer_lag_records", "Records not yet consumed from this "
                     "worker's partitions, per topic (sum over workers: the group's lag).",
                     ["service", "topic"])
HTTP_REQUESTS = Counter("croupier_http_requests_total", "HTTP requests by route and status.",
                        ["service", "route", "method", "status"])
HTTP_LATENCY = Histogram("croupier_http_request_duration_seconds", "HTTP request duration.",
                         ["service", "route"], buckets=LATENCY_BUCKETS)
UP = Gauge("croupier_service_up", "1 while the service runs.", ["service"])
DEAD_LETTERS = Counter("croupier_dead_letters_total",
                       "Records a service could not apply, written to dead.letters, by source "
                       "topic and error type.", ["service", "topic", "error"])
REWINDS = Counter("croupier_consumer_skips_total",
                  "Repairs of a worker's reads, by source topic: offsets a consumer passed "
                  "over, read from the log instead, or a batch decided again after another "
                  "writer came in between (services/infra/kernel.py).", ["service", "topic"])
MALFORMED = Counter("croupier_malformed_records_total",
                    "Records skipped because they do not parse, by service and source.",
                    ["service", "source"])

# --- bounded label values, known up front (series are created at 0 on start-up) ---------

BET_STATES = ("accepted", "rejected", "settled", "voided")
OTHER = "other"  # the label value for anything outside a known set (e.g. a made-up bet name)
NO_REASON = "none"  # the reason of an accepted input
UNKNOWN_TABLE = "unknown"  # a refused input naming a table this process has never seen

# Invariants a service checks at run time (the only values of `invariant`).
WALLET_INVARIANTS = (
    "ending_for_unknown_bet",   # a refund or payout for an account/bet the wallet never debited
    "bet_ended_twice",          # a bet ended one way (e.g. settled) then asked to end another
    "tx_id_conflict",           # a second, different movement for an already-applied tx id
    "negative_balance",         # a movement that would leave a balance below zero
    "reversal_of_unsettled_bet",  # a settlement reversal for a bet the wallet never settled
)
SETTLEMENT_INVARIANTS = (
    "settlement_conflict",      # a round settled twice with different amounts
)
INVARIANTS = WALLET_INVARIANTS + SETTLEMENT_INVARIANTS


_children: dict[tuple[int, tuple[str, ...]], Any] = {}


def child(metric: MetricWrapperBase, *values: str) -> Any:
    """`metric.labels(*values)`, looked up in a dict after the first time: `labels` checks
    and converts its values and takes a lock on every call, about 4 µs, several times a bet
    on the hot paths (the metrics are module globals, never cleared)."""
    key = (id(metric), values)
    found = _children.get(key)
    if found is None:
        found = _children[key] = metric.labels(*values)
    return found


def init_series(metric: MetricWrapperBase, *label_sets: Iterable[str]) -> None:
    """Create every combination of the given label values at 0, so `increase()` and
    `rate()` see the first event (a series born at 1 has no earlier sample)."""
    combos: list[tuple[str, ...]] = [()]
    for values in label_sets:
        combos = [(*combo, value) for combo in combos for value in values]
    for combo in combos:
        metric.labels(*combo)


def breach(invariant: str) -> None:
    if invariant not in INVARIANTS:
        raise ValueError(f"unknown invariant {invariant!r}")
    INVARIANT_BREACHES.labels(invariant).inc()


def exposition() -> tuple[bytes, str]:
    """The text exposition format and its content type, for a `/metrics` view."""
    return generate_latest(), CONTENT_TYPE_LATEST
