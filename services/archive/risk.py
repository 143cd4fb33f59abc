"""Opposite betting over the archive (and the live tail): pairs of players who bet opposite
sides of the same rounds (`shared.opposites`: Player/Banker, Big/Small, Triple
Face Win/Lose on one position) with stakes within 10 % of each other, in at least
`min_rounds` rounds (docs/decisions/risk.md).

One DuckDB query, one pass over `bets.placed` in the range: each player's stake per round,
bet, position and currency (two chips on one side are one stake), then a hash join of each
round's sides against their opposites on (table, round, currency, position, opposite bet),
the stakes compared in integers, and the matches aggregated per pair and currency. A join
per round, not across rounds: its size is the sum over rounds of the two sides' bettors
multiplied, which the table's seats bound.

- Bets count as placed: every `bet_placed` record (a bet the wallet funded), whatever
  became of it later (rejected, voided, refunded): the placing is the pattern.
- Stakes are compared within one currency only; a pair is named per currency.
- `opposed_stake`: over the pair's matching rounds, the smaller of the two opposed
  stakes, summed (the money that changed sides, in minor units).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from shared.opposites import shipped_opposites
from shared.topics import BETS_PLACED_TOPIC

if TYPE_CHECKING:
    from services.archive.queries import ArchiveQueries

STAKE_SPREAD_PERCENT = 10  # the smaller stake at least (100 - this) % of the larger

_SQL = """
WITH placed AS (
    SELECT player_id, table_id, round_id,
           json_extract_string(v, ['$.bet', '$.position', '$.currency', '$.stake']) AS f
    FROM bets_placed
    WHERE type = 'bet_placed' AND timestamp_ms >= $lo AND timestamp_ms < $hi),
sides AS (
    SELECT player_id, table_id, round_id, f[1] AS bet, coalesce(f[2], '') AS position,
           f[3] AS currency, sum(CAST(f[4] AS BIGINT)) AS stake
    FROM placed WHERE list_contains($bets, f[1]) AND player_id IS NOT NULL
    GROUP BY ALL),
opposite AS (SELECT unnest($left) AS bet, unnest($right) AS against),
firsts AS (SELECT sides.*, against FROM sides JOIN opposite USING (bet)),
matched AS (
    SELECT least(a.player_id, b.player_id) AS one, greatest(a.player_id, b.player_id) AS other,
           a.currency, a.table_id, a.round_id, least(a.stake, b.stake) AS opposed
    FROM firsts a JOIN sides b ON b.table_id = a.table_id AND b.round_id = a.round_id
                               AND b.currency = a.currency AND b.position = a.position
                               AND b.bet = a.against
    WHERE a.player_id <> b.player_id
      AND 100 * least(a.stake, b.stake) >= $keep * greatest(a.stake, b.stake)),
candidates AS (  -- a pair has at least as many matches as rounds: most pairs stop here
    SELECT one, other, currency FROM matched GROUP BY ALL HAVING count(*) >= $min_rounds),
per_round AS (
    SELECT one, other, currency, table_id, round_id, sum(opposed) AS opposed
    FROM matched SEMI JOIN candidates USING (one, other, currency) GROUP BY ALL)
SELECT one, other, currency, count(*) AS rounds, sum(opposed) AS opposed_stake,
       list(DISTINCT table_id ORDER BY table_id) AS tables
FROM per_round GROUP BY ALL HAVING count(*) >= $min_rounds
ORDER BY opposed_stake DESC, rounds DESC, one, other, currency"""


def opposite_pairs(queries: ArchiveQueries, since: datetime | None = None,
                   until: datetime | None = None, min_rounds: int = 3) -> dict[str, Any]:
    """{"pairs": [{"players": [A, B], "currency", "tables", "rounds", "opposed_stake"}]}, the
    pairs with the most opposed stake first; `since`/`until` bound the bets' placing times
    (None: the archive's start, now)."""
    if min_rounds < 1:
        raise ValueError(f"min_rounds must be at least 1, got {min_rounds}")
    if since is not None and until is not None and until <= since:
        raise ValueError(f"the range's end {until.isoformat()} is not after its start "
                         f"{since.isoformat()}")
    lo = int(since.timestamp() * 1000) if since else None
    hi = int(until.timestamp() * 1000) if until else None
    queries.need((BETS_PLACED_TOPIC,), since_ms=lo, until_ms=hi)
    pairs = shipped_opposites()
    rows = queries.rows(_SQL, {
        "lo": lo if lo is not None else 0, "hi": hi if hi is not None else 2**62,
        "bets": sorted({bet for pair in pairs for bet in pair}),
        # a match is found from its first bet's side only: once
        "left": [p[0] for p in pairs], "right": [p[1] for p in pairs],
        "keep": 100 - STAKE_SPREAD_PERCENT, "min_rounds": min_rounds})
    return {"pairs": [{"players": [r["one"], r["other"]], "currency": r["currency"],
                       "tables": list(r["tables"]), "rounds": int(r["rounds"]),
                       "opposed_stake": int(r["opposed_stake"])} for r in rows]}
