"""Dealer and table statistics (`croupier stats`, `GET /stats`, the console's Statistics
page) from the archive and the log's live tail (`ArchiveQueries.stats`).

Every figure is of the rounds *opened* in `[from, to)`, as they stand now: a round voided or
corrected after `to` counts, and its bets count with their standing settlement (a corrected
round's bets with the settlement the correction made, an annulled round's not at all).
Refused inputs have no round: they count by their own time, for the dealer of the round
last opened on their table at that time (docs/decisions/archive.md, "Dealer and table
statistics").

Per dealer: rounds, hands (rounds completed), hours at the table, hands per hour, voids,
refused inputs, corrections (`round_corrected` and `misdeal_corrected`), each count also
per 100 rounds. Per table (and currency: a hold of two currencies together means nothing):
rounds, bets, stake, returned, hold = (stake - returned) / stake, the theoretical hold of
the bets actually placed (stake-weighted house edge, from each bet's exact RTP) and
z = (hold - theoretical hold) / sd(hold).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from shared.events.rejections import NOT_THE_DEALERS
from shared.topics import BETS_SETTLED_TOPIC, DEALER_REJECTIONS_TOPIC, TABLE_EVENTS_TOPIC

if TYPE_CHECKING:
    from services.archive.queries import ArchiveQueries


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds") \
        .replace("+00:00", "Z")


@lru_cache(maxsize=64)
def exact_rtp_of(profile: str, version: int | None) -> dict[str, tuple[float, float]]:
    """{bet: (exact RTP, variance per unit staked)} of a profile as released (enumerated
    once per process: about half a second)."""
    from shared.profile import load_profile
    from shared.rtp import exact_rtp

    report = exact_rtp(load_profile(profile, version))
    return {bet: (float(b.rtp), float(b.variance)) for bet, b in report.bets.items()}


# a gap this long between a round's end and the table's next round is a break (or the table
# was closed): not time at the table
BREAK_MS = 15 * 60_000
# refused inputs are given to the dealer of the round last opened before them: look this
# far before `from` for it
DEALER_LOOK_BACK_MS = 86_400_000
CORRECTION_EVENTS = ("round_corrected", "misdeal_corrected")

Exact = Callable[[str, int | None, str], "tuple[float, float] | None"]


# ------------------------------------------------------------------------ the maths
@dataclass(frozen=True)
class DealtRound:
    """One round as the dealer figures read it (times in ms)."""

    table_id: str
    round_id: str
    dealer: str
    opened_ms: int
    ended_ms: int | None  # completed or voided; None while it hangs
    completed: bool
    voided: bool
    corrections: int = 0


def dealing_seconds(rounds: Iterable[DealtRound], break_ms: int = BREAK_MS) -> dict[str, float]:
    """Per dealer, the time at the table: each round from its opening to the table's next
    round's opening (betting, dealing, burns and shuffles between rounds are the dealer's
    work), or to its own end when the table's next round is more than `break_ms` after
    that end, or there is none (a break, a closed table, the end of the range)."""
    by_table: dict[str, list[DealtRound]] = defaultdict(list)
    for r in rounds:
        by_table[r.table_id].append(r)
    seconds: dict[str, float] = defaultdict(float)
    for table_rounds in by_table.values():
        table_rounds.sort(key=lambda r: r.opened_ms)
        for this, after in zip(table_rounds, [*table_rounds[1:], None], strict=True):
            end = this.ended_ms if this.ended_ms is not None else this.opened_ms
            if after is not None and after.opened_ms - end <= break_ms:
                end = after.opened_ms
            seconds[this.dealer] += max(0, end - this.opened_ms) / 1000
    return dict(seconds)


def per_hour(count: int, seconds: float) -> float | None:
    return round(count * 3600 / seconds, 1) if seconds > 0 else None


def per_100(count: int, rounds: int) -> float | None:
    return round(100 * count / rounds, 2) if rounds else None


def hold(stake: int, returned: int) -> float | None:
    """What the house kept of what was staked: (stake - returned) / stake."""
    return (stake - returned) / stake if stake else None


@dataclass(frozen=True)
class BetLine:
    """One bet type's bets at a table: their stake and return, Σ over rounds (and positions)
    of the round's stake on it squared, and the bet's exact RTP and per-unit variance."""

    stake: int
    returned: int
    round_stake_squares: float
    rtp: float
    variance: float


def theoretical_hold(lines: Sequence[BetLine]) -> float | None:
    """The hold the bets placed should give: their stake-weighted house edge, 1 - RTP."""
    stake = sum(x.stake for x in lines)
    return sum(x.stake * (1 - x.rtp) for x in lines) / stake if stake else None


def hold_sd(lines: Sequence[BetLine]) -> float | None:
    """The standard deviation of the hold, from each bet's exact per-unit variance. Bets
    of one type and position in one round win or lose together (one bet of their summed
    stake: hence the round's stake squared); rounds are independent. Different bet types of
    one round are taken as independent too: the exact distributions are per bet, not joint.
    Opposite bets (player and banker) cancel in truth, so this overstates the spread where
    both are backed, and |z| errs small: fewer false alarms, never more."""
    stake = sum(x.stake for x in lines)
    variance = sum(x.variance * x.round_stake_squares for x in lines)
    return math.sqrt(variance) / stake if stake and variance > 0 else None


def z_score(held: float | None, expected: float | None, sd: float | None) -> float | None:
    """How many standard deviations the hold is above (+) or below (-) its theory."""
    if held is None or expected is None or not sd:
        return None
    return (held - expected) / sd


# ------------------------------------------------------------------------ the figures
def dealer_figures(rounds: Sequence[DealtRound], refused: dict[str, int]
                   ) -> list[dict[str, Any]]:
    """Per dealer (by name), from the rounds they opened and the inputs refused to them."""
    seconds = dealing_seconds(rounds)
    counts: dict[str, dict[str, Any]] = {}
    for r in rounds:
        c = counts.setdefault(r.dealer, {"rounds": 0, "hands": 0, "voids": 0, "corrections": 0,
                                         "tables": set()})
        c["rounds"] += 1
        c["hands"] += r.completed
        c["voids"] += r.voided
        c["corrections"] += r.corrections
        c["tables"].add(r.table_id)
    out = []
    for dealer in sorted(set(counts) | set(refused)):
        c = counts.get(dealer, {"rounds": 0, "hands": 0, "voids": 0, "corrections": 0,
                                "tables": set()})
        rounds_n, refusals = c["rounds"], refused.get(dealer, 0)
        out.append({
            "dealer": dealer, "rounds": rounds_n, "hands": c["hands"],
            "hours": round(seconds.get(dealer, 0.0) / 3600, 3),
            "hands_per_hour": per_hour(c["hands"], seconds.get(dealer, 0.0)),
            "voids": c["voids"], "refused_inputs": refusals, "corrections": c["corrections"],
            "voids_per_100_rounds": per_100(c["voids"], rounds_n),
            "refused_inputs_per_100_rounds": per_100(refusals, rounds_n),
            "corrections_per_100_rounds": per_100(c["corrections"], rounds_n),
            "tables": sorted(c["tables"])})
    return out


def table_figures(rounds: dict[str, int], bets: Sequence[dict[str, Any]], exact: Exact
                  ) -> list[dict[str, Any]]:
    """Per table and currency. `rounds`: table -> rounds opened; `bets`: rows of table_id,
    currency, profile, version, bet, bets, stake, returned, round_stake_squares. A bet type
    without an exact RTP (an unknown profile) leaves the theory (and z) unknown."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in bets:
        groups[(row["table_id"], row["currency"])].append(row)
    out = []
    for table_id in sorted(set(rounds) | {t for t, _ in groups}):
        currencies: list[str | None] = [*sorted(c for t, c in groups if t == table_id)]
        for currency in currencies or [None]:
            rows = groups.get((table_id, currency), []) if currency else []
            stake = sum(int(r["stake"]) for r in rows)
            returned = sum(int(r["returned"]) for r in rows)
            odds = [exact(r["profile"], r["version"], r["bet"]) if r["profile"] else None
                    for r in rows]
            lines = [BetLine(int(r["stake"]), int(r["returned"]),
                             float(r["round_stake_squares"]), *o)
                     for r, o in zip(rows, odds, strict=True) if o is not None]
            known = len(lines) == len(rows)
            held = hold(stake, returned)
            expected = theoretical_hold(lines) if known else None
            z = z_score(held, expected, hold_sd(lines) if known else None)
            out.append({"table_id": table_id, "currency": currency,
                        "rounds": rounds.get(table_id, 0),
                        "bets": sum(int(r["bets"]) for r in rows), "stake": stake,
                        "returned": returned,
                        "hold": None if held is None else round(held, 6),
                        "theoretical_hold": None if expected is None else round(expected, 6),
                        "z": None if z is None else round(z, 2)})
    return out


# ------------------------------------------------------------------------ the reads
def read_stats(q: ArchiveQueries, since: datetime | None, until: datetime | None
               ) -> dict[str, Any]:
    """`{"dealers": [...], "tables": [...]}` of the rounds opened in `[since, until)`."""
    from shared.profile import ProfileError

    lo = int(since.timestamp() * 1000) if since else 0
    hi = int(until.timestamp() * 1000) if until else 2**62
    if hi <= lo:
        raise ValueError(f"the range's end {until} is not after its start {since}")
    # the rounds' later records (voids, corrections, settlements) lie after `from`
    q.need((TABLE_EVENTS_TOPIC, DEALER_REJECTIONS_TOPIC, BETS_SETTLED_TOPIC),
           since_ms=lo - DEALER_LOOK_BACK_MS if since else None)
    window = {"lo": lo, "hi": hi}
    dealt = [DealtRound(**row) for row in q.rows(f"""
        WITH opened AS (SELECT table_id, round_id, timestamp_ms AS opened_ms,
                               json_extract_string(v, '$.dealer') AS dealer
                        FROM table_events WHERE type = 'round_opened'
                          AND timestamp_ms >= $lo AND timestamp_ms < $hi),
        ended AS (SELECT table_id, round_id, min(timestamp_ms) AS ended_ms,
                         bool_or(type = 'round_completed') AS completed,
                         bool_or(type = 'round_voided') AS voided
                  FROM table_events WHERE type IN ('round_completed', 'round_voided')
                  GROUP BY ALL),
        fixes AS (SELECT table_id, round_id, count(*) AS corrections FROM table_events
                  WHERE list_contains({list(CORRECTION_EVENTS)}, type) GROUP BY ALL)
        SELECT o.table_id, o.round_id, o.dealer, o.opened_ms, e.ended_ms,
               coalesce(e.completed, false) AS completed, coalesce(e.voided, false) AS voided,
               coalesce(f.corrections, 0) AS corrections
        FROM opened o LEFT JOIN ended e USING (table_id, round_id)
        LEFT JOIN fixes f USING (table_id, round_id)
        ORDER BY o.table_id, o.opened_ms""", window)]
    refused = {row["dealer"] or "(none)": int(row["n"]) for row in q.rows(f"""
        WITH r AS (SELECT table_id, timestamp_ms AS at FROM dealer_rejections
                   WHERE type = 'input_refused' AND timestamp_ms >= $lo AND timestamp_ms < $hi
                     AND NOT list_contains({list(NOT_THE_DEALERS)},
                                           json_extract_string(v, '$.reason_code'))),
        o AS (SELECT table_id, timestamp_ms AS at, json_extract_string(v, '$.dealer') AS dealer
              FROM table_events WHERE type = 'round_opened')
        SELECT o.dealer, count(*) AS n FROM r ASOF LEFT JOIN o
            ON r.table_id = o.table_id AND r.at >= o.at
        GROUP BY ALL""", window)}
    bets = q.rows("""
        WITH o AS (SELECT table_id, round_id, json_extract_string(v, '$.profile') AS profile,
                          CAST(json_extract(v, '$.profile_version') AS INTEGER) AS version
                   FROM table_events WHERE type = 'round_opened'
                     AND timestamp_ms >= $lo AND timestamp_ms < $hi),
        reversed AS (SELECT DISTINCT json_extract_string(v, '$.settlement_id') AS sid
                     FROM bets_settled WHERE type = 'settlement_reversed'),
        standing AS (SELECT table_id, round_id, json_extract_string(v, '$.bet') AS bet,
                            json_extract_string(v, '$.position') AS position,
                            json_extract_string(v, '$.currency') AS currency,
                            CAST(json_extract(v, '$.stake') AS BIGINT) AS stake,
                            CAST(json_extract(v, '$.returned') AS BIGINT) AS returned
                     FROM bets_settled WHERE type = 'bet_settled'
                       AND json_extract_string(v, '$.outcome') <> 'void_refund'
                       AND json_extract_string(v, '$.settlement_id')
                           NOT IN (SELECT sid FROM reversed)),
        per_round AS (SELECT table_id, round_id, currency, bet, position, count(*) AS bets,
                             sum(stake) AS stake, sum(returned) AS returned
                      FROM standing GROUP BY ALL)
        SELECT p.table_id, p.currency, o.profile, o.version, p.bet, sum(p.bets) AS bets,
               sum(p.stake) AS stake, sum(p.returned) AS returned,
               sum(CAST(p.stake AS DOUBLE) * p.stake) AS round_stake_squares
        FROM per_round p JOIN o USING (table_id, round_id)
        GROUP BY ALL ORDER BY p.table_id, p.currency, p.bet""", window)
    rounds: dict[str, int] = defaultdict(int)
    for r in dealt:
        rounds[r.table_id] += 1

    def exact(profile: str, version: int | None, bet: str) -> tuple[float, float] | None:
        try:
            return exact_rtp_of(profile, version).get(bet)
        except ProfileError:  # a profile (or version) this build does not know: no theory
            return None

    return {"from": iso(lo) if since else None, "to": iso(hi) if until else None,
            "dealers": dealer_figures(dealt, refused),
            "tables": table_figures(dict(rounds), bets, exact)}
