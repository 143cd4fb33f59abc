"""Queries on an embedded engine: DuckDB over the archive's Parquet files, joined with the
live tail that the log holds past the archive's end (its last minutes), so an answer covers
everything up to now. The same files are readable by any Parquet engine (README).

- `recall`: a player's last rounds, newest first: the cards and the result (hands, points,
  winner), the player's bets per category with their outcome and return, and the balance
  before the round's first movement and after its last.
- `statement`: a player's money movements over a time range, each with its bet, and the
  opening and closing balances.
- `events`: the significant-event log: voids, annulments, corrections, redeals, table
  closes and reopens, early closes with their reasons, each profile version's first round,
  reversed settlements, dead letters and their re-drives, refused inputs that were not
  authentic, large wins, every complaint filed and the operator's overrides
  (`operator.actions`: each late complaint handled anyway);
  each with who, when, why and where it stands in the log (topic, partition, offset).
- `stats`: per dealer and per table, hands per hour, voids, refused inputs, corrections,
  hold against the theoretical hold (`services.archive.stats`).

Only files that a manifest describes are read (a file a killed archiver left without its
manifest is not part of the archive). Every amount is an integer in minor units.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.dataset as pads
from kafka import TopicPartition
from pyarrow import fs as pafs

from services.archive.segment import (
    QUERY_FIELDS,
    SCHEMA,
    query_columns,
)
from services.archive.stats import exact_rtp_of, iso, read_stats
from services.archive.store_ops import PartitionIndex, archived_partitions
from services.infra.archive_store import ArchiveStore
from services.infra.log_reader import log_reader
from shared.events.wallet_events import CREDITS
from shared.round_phase import RoundPhase, is_final, phase_after_type
from shared.topics import (
    BETS_PLACED_TOPIC,
    BETS_SETTLED_TOPIC,
    DEAD_LETTERS_TOPIC,
    DEALER_REJECTIONS_TOPIC,
    OPERATOR_ACTIONS_TOPIC,
    ROUND_RESULTS_TOPIC,
    TABLE_EVENTS_TOPIC,
    WALLET_TRANSACTIONS_TOPIC,
)

RECALL_FIRST_WINDOW_MS = 7 * 86_400_000  # recall looks this far back first, then 8x further
ROUND_SLACK_MS = 15 * 60_000  # a round's records lie within this of its first bet's
DAY_MS = 86_400_000
LARGE_WIN_DEFAULT = 1_000_000  # minor units won (returned - stake) that make a win "large"
SIGNIFICANT_TABLE_EVENTS = ("round_voided", "round_annulled", "round_corrected", "misdeal_corrected",
                            "round_stalled", "round_redealt", "table_closed", "table_reopened",
                            "two_cards_drawn")
SIGNIFICANT_REFUSALS = ("unsigned", "bad_signature", "chain_corrupt", "role_not_allowed")


def view_name(topic: str) -> str:
    return topic.replace(".", "_")


class ArchiveQueries:
    """One DuckDB connection over the topics a query needs, each a view of its archived
    files and its live tail (`bootstrap`: None reads the archive alone)."""

    def __init__(self, store: ArchiveStore, bootstrap: str | None = None) -> None:
        self.store = store
        self.bootstrap = bootstrap
        # every query of one answer reads the same files: their footers are read once
        self.con = duckdb.connect()
        self.con.execute("SET parquet_metadata_cache = true")
        self._registered: set[str] = set()
        self._window: tuple[int | None, int | None] = (None, None)
        self._cut = False
        self._tails_read: dict[str, pa.Table] = {}

    def close(self) -> None:
        self.con.close()

    def refresh(self) -> None:
        """Forget the views and the tail, so the next query lists the archive's files and
        reads the live tail again. The connection (and its cache of the files' footers: the
        files are immutable) is kept: a long-running process (the operator API) answers from
        it."""
        self._drop_views()
        self._tails_read.clear()
        self._cut = False

    def _drop_views(self) -> None:
        for topic in self._registered:
            name = view_name(topic)
            self.con.execute(f"DROP VIEW IF EXISTS {name}")
            for part in (f"{name}_archived", f"{name}_tail"):
                self.con.unregister(part)
                self.con.execute(f"DROP VIEW IF EXISTS {part}")
        self._registered.clear()

    # ---------------------------------------------------------------- the views
    def need(self, topics: Iterable[str], since_ms: int | None = None,
             until_ms: int | None = None) -> bool:
        """Views of `topics`: the archived files that may hold records timestamped in
        `[since, until)` (found by bisection over each partition's manifests, so the cost
        follows the range, not the archive's history) and the live tail. Returns whether
        files before `since` were left out (a wider range would read more)."""
        if (since_ms, until_ms) != self._window:
            self._drop_views()
            self._window = (since_ms, until_ms)
            self._cut = False
        wanted = [t for t in topics if t not in self._registered]
        cut = False
        if not wanted:
            return self._cut
        fs, root = self.store.arrow()
        ends: dict[TopicPartition, int] = {}
        for topic in wanted:
            paths: list[str] = []
            for partition in archived_partitions(self.store, topic):
                index = PartitionIndex(self.store, topic, partition)
                if not len(index):
                    continue
                files = index.files_between(since_ms, until_ms)
                cut = cut or since_ms is not None and index.at_time(since_ms) > 0
                paths += [f"{root}/{index.folder}/{f}" for f in files]
                ends[TopicPartition(topic, partition)] = index.manifest(len(index) - 1).end_offset
            self._register_files(f"{view_name(topic)}_archived", paths, fs)
        tails = self._tails([t for t in wanted if t not in self._tails_read], ends)
        self._tails_read.update(tails)
        for topic in wanted:
            name = view_name(topic)
            self.con.register(f"{name}_tail", self._tails_read[topic])
            select = (f"SELECT partition AS topic_partition, \"offset\", timestamp_ms, "
                      f"{', '.join(QUERY_FIELDS)}, try(decode(value)) AS v FROM")
            self.con.execute(f"CREATE VIEW {name} AS {select} {name}_archived UNION ALL "
                             f"{select} {name}_tail")
            self._registered.add(topic)
        self._cut = self._cut or cut
        return self._cut

    def latest_ms(self, topic: str) -> int | None:
        """The newest record time the archive holds on `topic` (its partitions' last
        manifests)."""
        stamps = []
        for partition in archived_partitions(self.store, topic):
            index = PartitionIndex(self.store, topic, partition)
            for i in range(len(index) - 1, -1, -1):
                top = index.manifest(i).max_timestamp_ms
                if top is not None:
                    stamps.append(top)
                    break
        return max(stamps) if stamps else None

    def _register_files(self, name: str, paths: list[str], fs: Any) -> None:
        """A local directory: DuckDB's own Parquet reader (it filters first and reads the
        other columns of the matching rows only). Any other store: a pyarrow dataset over
        its file system (DuckDB's S3 reader is an extension it would download)."""
        if not paths:
            self.con.register(name, SCHEMA.empty_table())
        elif isinstance(fs, pafs.LocalFileSystem):
            files = ", ".join("'" + p.replace("'", "''") + "'" for p in paths)
            self.con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet([{files}])")
        else:
            self.con.register(name, pads.dataset(paths, schema=SCHEMA, format="parquet",
                                                 filesystem=fs))

    def _tails(self, topics: Sequence[str], ends: dict[TopicPartition, int]) -> dict[str, pa.Table]:
        """The records past the archive's end in the log, per topic, read with one consumer."""
        rows: dict[str, list[dict[str, Any]]] = {t: [] for t in topics}
        if self.bootstrap is not None:
            consumer = log_reader(self.bootstrap, "operator")
            try:
                tps = [TopicPartition(t, p) for t in topics
                       for p in sorted(consumer.partitions_for_topic(t) or ())]
                if tps:
                    self._read_tail(consumer, tps, ends, rows)
            finally:
                consumer.close()
        out = {}
        raw = pa.schema([SCHEMA.field(n) for n in SCHEMA.names if n not in QUERY_FIELDS])
        for topic, recs in rows.items():
            if not recs:
                out[topic] = SCHEMA.empty_table()
                continue
            table = pa.Table.from_pylist(recs, schema=raw)
            for name, column in zip(QUERY_FIELDS, query_columns(table.column("value")
                                                                .combine_chunks()), strict=True):
                table = table.append_column(SCHEMA.field(name), column)
            out[topic] = table
        return out

    @staticmethod
    def _read_tail(consumer, tps: list[TopicPartition], ends: dict[TopicPartition, int],
                   rows: dict[str, list[dict[str, Any]]]) -> None:
        consumer.assign(tps)
        begins = consumer.beginning_offsets(tps)
        stops = consumer.end_offsets(tps)
        pending = set()
        for tp in tps:
            start = max(ends.get(tp, 0), begins[tp])
            if start < stops[tp]:
                consumer.seek(tp, start)
                pending.add(tp)
        consumer.pause(*(set(tps) - pending))
        while pending:
            batches = consumer.poll(timeout_ms=2000, max_records=20_000)
            if not batches:
                break
            for tp, batch in batches.items():
                for rec in batch:
                    if rec.offset < stops[tp]:
                        rows[tp.topic].append({
                            "partition": tp.partition, "offset": rec.offset,
                            "timestamp_ms": rec.timestamp, "key": rec.key, "value": rec.value,
                            "headers": [{"key": k, "value": v} for k, v in rec.headers or ()]})
            for tp in list(pending):
                if consumer.position(tp) >= stops[tp]:
                    pending.discard(tp)
                    consumer.pause(tp)

    def rows(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[dict[str, Any]]:
        cursor = self.con.execute(sql, params if isinstance(params, dict) else list(params))
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    # ---------------------------------------------------------------- recall
    def recall(self, player_id: str, limit: int = 10) -> dict[str, Any]:
        if not 1 <= limit <= 100:
            raise ValueError(f"limit must be between 1 and 100, got {limit}")
        topics = (BETS_PLACED_TOPIC, BETS_SETTLED_TOPIC, ROUND_RESULTS_TOPIC, WALLET_TRANSACTIONS_TOPIC,
                  TABLE_EVENTS_TOPIC)
        # the newest rounds first: a window back from the archive's newest bet, 8 times wider
        # each try, until it holds `limit` rounds or the whole archive
        latest = self.latest_ms(BETS_PLACED_TOPIC)
        window = RECALL_FIRST_WINDOW_MS
        while True:
            since = None if latest is None else latest - window
            cut = self.need(topics, since_ms=since)
            rounds = self.rows("""
                SELECT table_id, round_id, min(timestamp_ms) AS first_ms FROM bets_placed
                WHERE player_id = ? AND type = 'bet_placed' GROUP BY ALL
                ORDER BY first_ms DESC LIMIT ?""", (player_id, limit))
            if len(rounds) >= limit or not cut:
                break
            window *= 8
        keys = [(r["table_id"], r["round_id"]) for r in rounds]
        if not keys:
            return {"player_id": player_id, "rounds": []}
        oldest = min(r["first_ms"] for r in rounds) - ROUND_SLACK_MS
        if since is not None and oldest < since:  # a round's first bets before the window
            self.need(topics, since_ms=oldest)
        round_ids = [k[1] for k in keys]
        # one query for the rest (DuckDB runs its parts in parallel): the rounds' records
        found = self.rows("""
            SELECT 'placed' AS part, table_id, round_id, type, topic_partition, "offset", v
            FROM bets_placed WHERE player_id = $p AND type = 'bet_placed'
                 AND list_contains($r, round_id)
            UNION ALL SELECT 'settled', table_id, round_id, type, topic_partition, "offset", v
            FROM bets_settled WHERE player_id = $p AND list_contains($r, round_id)
            UNION ALL SELECT 'result', table_id, round_id, type, topic_partition, "offset", v
            FROM round_results WHERE type = 'round_result' AND list_contains($r, round_id)
            UNION ALL SELECT 'table', table_id, round_id, type, topic_partition, "offset", v
            FROM table_events WHERE list_contains($r, round_id)
                 AND list_contains(['round_opened', 'betting_closed', 'round_completed',
                                    'round_voided', 'round_annulled'], type)
            UNION ALL SELECT 'wallet', table_id, round_id, type, topic_partition, "offset", v
            FROM wallet_transactions WHERE player_id = $p AND list_contains($r, round_id)
            ORDER BY part, topic_partition, "offset" """, {"p": player_id, "r": round_ids})
        parts: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in found:
            parts[row["part"]].append(row)
        bets, settled, results, ends, moves = (parts[k] for k in
                                               ("placed", "settled", "result", "table", "wallet"))
        return {"player_id": player_id,
                "rounds": [_recalled_round(key, bets, settled, results, ends, moves)
                           for key in keys]}

    # ---------------------------------------------------------------- statement
    def statement(self, player_id: str, since: datetime, until: datetime) -> dict[str, Any]:
        if until <= since:
            raise ValueError(f"the statement's end {until.isoformat()} is not after its start "
                             f"{since.isoformat()}")
        lo, hi = int(since.timestamp() * 1000), int(until.timestamp() * 1000)
        # the range's files, and a day either side for the bets its movements pay or debit
        self.need((WALLET_TRANSACTIONS_TOPIC, BETS_PLACED_TOPIC, BETS_SETTLED_TOPIC),
                  since_ms=lo - DAY_MS, until_ms=hi + DAY_MS)
        moves = self.rows("""
            WITH w AS (SELECT topic_partition, "offset", v,
                              json_extract_string(v, '$.cause_id') AS cause
                       FROM wallet_transactions
                       WHERE player_id = $p AND timestamp_ms >= $lo AND timestamp_ms < $hi),
            pl AS (SELECT json_extract_string(v, '$.bet_id') AS cause, v FROM bets_placed
                   WHERE player_id = $p AND type = 'bet_placed'
                     AND timestamp_ms >= $lo - 86400000 AND timestamp_ms < $hi),
            st AS (SELECT coalesce(json_extract_string(v, '$.reversal_id'),
                                   json_extract_string(v, '$.settlement_id')) AS cause, v
                   FROM bets_settled WHERE player_id = $p
                     AND timestamp_ms >= $lo - 86400000 AND timestamp_ms < $hi + 86400000)
            SELECT w.v AS v, any_value(pl.v) AS placed, any_value(st.v) AS settled FROM w
            LEFT JOIN pl ON pl.cause = w.cause LEFT JOIN st ON st.cause = w.cause
            GROUP BY w.topic_partition, w."offset", w.v
            ORDER BY w.topic_partition, w."offset" """, {"p": player_id, "lo": lo, "hi": hi})
        before = self.rows("""
            SELECT v FROM wallet_transactions WHERE player_id = ? AND timestamp_ms < ?
            ORDER BY topic_partition DESC, "offset" DESC LIMIT 1""", (player_id, lo))
        lines = [_statement_line(m) for m in moves]
        opening = json.loads(before[0]["v"])["balance_after"] if before else \
            (lines[0]["balance_after"] - lines[0]["amount"] if lines else 0)
        return {"player_id": player_id, "from": since.isoformat(), "to": until.isoformat(),
                "opening_balance": opening,
                "closing_balance": lines[-1]["balance_after"] if lines else opening,
                "credits": sum(x["amount"] for x in lines if x["amount"] > 0),
                "debits": -sum(x["amount"] for x in lines if x["amount"] < 0),
                "movements": lines}

    # ---------------------------------------------------------------- events
    def events(self, since: datetime | None = None, until: datetime | None = None,
               large_win: int = LARGE_WIN_DEFAULT, table_id: str | None = None
               ) -> list[dict[str, Any]]:
        self.need((TABLE_EVENTS_TOPIC, BETS_SETTLED_TOPIC, DEAD_LETTERS_TOPIC, DEALER_REJECTIONS_TOPIC,
                   OPERATOR_ACTIONS_TOPIC))
        lo = int(since.timestamp() * 1000) if since else 0
        hi = int(until.timestamp() * 1000) if until else 2**62
        sql = f"""
        WITH te AS (SELECT * FROM table_events WHERE timestamp_ms >= $lo AND timestamp_ms < $hi),
        profiles AS (
            SELECT *, row_number() OVER (PARTITION BY json_extract_string(v, '$.profile'),
                json_extract_string(v, '$.profile_version') ORDER BY timestamp_ms) AS nth
            FROM table_events WHERE type = 'round_opened')
        SELECT 'table.events' AS topic, topic_partition, "offset", timestamp_ms,
               type AS kind, table_id, round_id,
               json_extract_string(v, '$.supervisor') AS who,
               concat_ws(': ', json_extract_string(v, '$.reason_code'),
                         json_extract_string(v, '$.reason'),
                         json_extract_string(v, '$.reason_text')) AS why
        FROM te WHERE list_contains({list(SIGNIFICANT_TABLE_EVENTS)}, type)
           OR (type = 'betting_closed' AND json_extract_string(v, '$.reason') <> 'timer')
        UNION ALL
        SELECT 'table.events', topic_partition, "offset", timestamp_ms, 'profile_version_first_round',
               table_id, round_id, json_extract_string(v, '$.dealer'),
               concat(json_extract_string(v, '$.profile'), ' version ',
                      coalesce(json_extract_string(v, '$.profile_version'), '(none)'), ' ',
                      coalesce(json_extract_string(v, '$.profile_digest'), ''))
        FROM profiles WHERE nth = 1 AND timestamp_ms >= $lo AND timestamp_ms < $hi
        UNION ALL
        SELECT 'bets.settled', topic_partition, "offset", timestamp_ms, type, table_id, round_id,
               json_extract_string(v, '$.supervisor'),
               concat_ws(': ', json_extract_string(v, '$.reason_code'),
                         json_extract_string(v, '$.reason_text'))
        FROM bets_settled WHERE type = 'settlement_reversed'
             AND timestamp_ms >= $lo AND timestamp_ms < $hi
        UNION ALL
        SELECT 'bets.settled', topic_partition, "offset", timestamp_ms, 'large_win', table_id,
               round_id, player_id,
               concat('won ', CAST(json_extract(v, '$.returned') AS BIGINT)
                      - CAST(json_extract(v, '$.stake') AS BIGINT), ' on ',
                      json_extract_string(v, '$.bet'), ' (stake ',
                      CAST(json_extract(v, '$.stake') AS BIGINT), ')')
        FROM bets_settled WHERE type = 'bet_settled' AND timestamp_ms >= $lo AND timestamp_ms < $hi
             AND CAST(json_extract(v, '$.returned') AS BIGINT)
                 - CAST(json_extract(v, '$.stake') AS BIGINT) >= $large
        UNION ALL
        SELECT 'dead.letters', topic_partition, "offset", timestamp_ms, 'dead_letter',
               table_id, round_id, json_extract_string(v, '$.service'),
               concat(json_extract_string(v, '$.topic'), '[',
                      json_extract_string(v, '$.partition'), ']@',
                      json_extract_string(v, '$.offset'), ' ',
                      json_extract_string(v, '$.error_type'), ': ',
                      left(json_extract_string(v, '$.error'), 300))
        FROM dead_letters WHERE type = 'dead_letter' AND timestamp_ms >= $lo AND timestamp_ms < $hi
        UNION ALL
        SELECT 'dead.letters', topic_partition, "offset", timestamp_ms, type, NULL, NULL,
               json_extract_string(v, '$.by'),
               concat(json_extract_string(v, '$.dead_letter_id'), ' re-driven to ',
                      json_extract_string(v, '$.topic'), '[',
                      json_extract_string(v, '$.partition'), ']@',
                      json_extract_string(v, '$.offset'),
                      CASE WHEN coalesce(json_extract_string(v, '$.reason'), '') <> ''
                           THEN concat(': ', json_extract_string(v, '$.reason')) ELSE '' END)
        FROM dead_letters WHERE type = 'dead_letter_redriven'
             AND timestamp_ms >= $lo AND timestamp_ms < $hi
        UNION ALL
        SELECT 'dealer.rejections', topic_partition, "offset", timestamp_ms,
               concat('input_refused:', json_extract_string(v, '$.reason_code')), table_id,
               round_id, json_extract_string(v, '$.command'), json_extract_string(v, '$.message')
        FROM dealer_rejections WHERE timestamp_ms >= $lo AND timestamp_ms < $hi
             AND list_contains({list(SIGNIFICANT_REFUSALS)},
                               json_extract_string(v, '$.reason_code'))
        UNION ALL
        SELECT 'operator.actions', topic_partition, "offset", timestamp_ms, type, table_id,
               round_id, json_extract_string(v, '$.operator'),
               concat(json_extract_string(v, '$.reason'), ' (complaint of ', player_id,
                      ' filed ', CAST(json_extract(v, '$.late_seconds') AS BIGINT) // 3600,
                      ' h after the round)')
        FROM operator_actions WHERE type = 'complaint_window_overridden'
             AND timestamp_ms >= $lo AND timestamp_ms < $hi
        UNION ALL
        SELECT 'operator.actions', topic_partition, "offset", timestamp_ms, type, table_id,
               round_id, json_extract_string(v, '$.operator'),
               concat('complaint ', json_extract_string(v, '$.complaint_id'), ' of ', player_id,
                      CASE WHEN CAST(json_extract(v, '$.within_window') AS BOOLEAN) THEN ''
                           ELSE concat(' (late, overridden: ',
                                       json_extract_string(v, '$.override'), ')') END)
        FROM operator_actions WHERE type = 'complaint_filed'
             AND timestamp_ms >= $lo AND timestamp_ms < $hi
        ORDER BY timestamp_ms, topic, topic_partition, "offset" """
        cursor = self.con.execute(sql, {"lo": lo, "hi": hi, "large": large_win})
        names = [d[0] for d in cursor.description]
        found = []
        for row in cursor.fetchall():
            item = dict(zip(names, row, strict=True))
            if table_id is not None and item["table_id"] != table_id:
                continue
            item["at"] = iso(item.pop("timestamp_ms"))
            item["partition"] = item.pop("topic_partition")
            found.append(item)
        return found


    # ---------------------------------------------------------------- the floor
    def floor(self, open_rounds: Sequence[str], shoe_rounds: dict[str, Sequence[str]],
              since: datetime | None = None) -> dict[str, Any]:
        """For the console's floor: the bets and stake placed on each open round
        (`open_rounds`, round ids), and each table's shoe so far (`shoe_rounds`: table id ->
        the shoe's round ids): bets settled, stake, returned and the realised RTP, voided and
        annulled bets left out as in `realised_rtp`. Amounts per currency, in minor units."""
        lo = int(since.timestamp() * 1000) if since else None
        self.need((BETS_PLACED_TOPIC, BETS_SETTLED_TOPIC), since_ms=lo)
        placed = self.rows("""
            SELECT round_id, json_extract_string(v, '$.currency') AS currency, count(*) AS bets,
                   sum(CAST(json_extract(v, '$.stake') AS BIGINT)) AS stake
            FROM bets_placed WHERE type = 'bet_placed' AND list_contains($r, round_id)
            GROUP BY ALL ORDER BY round_id, currency""", {"r": list(open_rounds)})
        pairs = [[t, r] for t, rounds in shoe_rounds.items() for r in rounds]
        settled = self.rows("""
            WITH s AS (SELECT table_id, json_extract_string(v, '$.bet_id') AS bet_id,
                              json_extract_string(v, '$.currency') AS currency,
                              json_extract_string(v, '$.outcome') AS outcome,
                              CAST(json_extract(v, '$.stake') AS BIGINT) AS stake,
                              CAST(json_extract(v, '$.returned') AS BIGINT) AS returned
                       FROM bets_settled WHERE type = 'bet_settled'
                         AND list_contains($pairs, [table_id, round_id])),
            reversed AS (SELECT DISTINCT json_extract_string(v, '$.bet_id') AS bet_id
                         FROM bets_settled WHERE type = 'settlement_reversed')
            SELECT table_id, currency, count(*) AS bets, sum(stake) AS stake,
                   sum(returned) AS returned FROM s
            WHERE outcome <> 'void_refund' AND bet_id NOT IN (SELECT bet_id FROM reversed)
            GROUP BY ALL ORDER BY table_id, currency""", {"pairs": pairs})
        rounds: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in placed:
            rounds[row["round_id"]].append({"currency": row["currency"], "bets": row["bets"],
                                            "stake": int(row["stake"])})
        shoes: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in settled:
            stake, returned = int(row["stake"]), int(row["returned"])
            shoes[row["table_id"]].append({
                "currency": row["currency"], "bets": row["bets"], "stake": stake,
                "returned": returned,
                "realised_rtp": round(returned / stake, 6) if stake else None})
        return {"open_rounds": dict(rounds), "shoes": dict(shoes)}

    # ---------------------------------------------------------------- realised RTP
    def realised_rtp(self, since: datetime | None = None, until: datetime | None = None
                     ) -> list[dict[str, Any]]:
        """Per table, profile (and version), dealer, day and bet: bets, stake, returned, the
        realised RTP beside the exact one, and `z`, the distance in standard errors. Voided
        and annulled bets (refunded, or whose settlement was reversed) take no part."""
        self.need((BETS_SETTLED_TOPIC, ROUND_RESULTS_TOPIC))
        lo = int(since.timestamp() * 1000) if since else 0
        hi = int(until.timestamp() * 1000) if until else 2**62
        rows = self.rows("""
            WITH s AS (SELECT table_id, round_id, timestamp_ms,
                              json_extract_string(v, '$.bet_id') AS bet_id,
                              json_extract_string(v, '$.bet') AS bet,
                              json_extract_string(v, '$.outcome') AS outcome,
                              CAST(json_extract(v, '$.stake') AS BIGINT) AS stake,
                              CAST(json_extract(v, '$.returned') AS BIGINT) AS returned
                       FROM bets_settled WHERE type = 'bet_settled'
                         AND timestamp_ms >= $lo AND timestamp_ms < $hi),
            reversed AS (SELECT DISTINCT json_extract_string(v, '$.bet_id') AS bet_id
                         FROM bets_settled WHERE type = 'settlement_reversed'),
            r AS (SELECT table_id, round_id, json_extract_string(v, '$.profile') AS profile,
                         CAST(json_extract(v, '$.profile_version') AS INTEGER) AS version,
                         json_extract_string(v, '$.dealer') AS dealer
                  FROM round_results WHERE type = 'round_result')
            SELECT s.table_id, r.profile, r.version, r.dealer,
                   strftime(to_timestamp(s.timestamp_ms / 1000), '%Y-%m-%d') AS day, s.bet,
                   count(*) AS bets, sum(s.stake) AS stake, sum(s.returned) AS returned,
                   sum(s.stake * s.stake) AS stake_squares
            FROM s JOIN r USING (table_id, round_id)
            WHERE s.outcome <> 'void_refund' AND s.bet_id NOT IN (SELECT bet_id FROM reversed)
            GROUP BY ALL ORDER BY day, s.table_id, r.dealer, s.bet""", {"lo": lo, "hi": hi})
        return [_with_exact_rtp(row) for row in rows]

    # ---------------------------------------------------------------- dealer and table stats
    def stats(self, since: datetime | None = None, until: datetime | None = None
              ) -> dict[str, Any]:
        """Per dealer and per table, of the rounds opened in `[since, until)`
        (`services.archive.stats`)."""
        return read_stats(self, since, until)
    # ---------------------------------------------------------------- opposite betting
    def opposite_pairs(self, since: datetime | None = None, until: datetime | None = None,
                       min_rounds: int = 3) -> dict[str, Any]:
        """Pairs of players who bet opposite sides of the same rounds with stakes within
        10 % (`services.archive.risk`)."""
        from services.archive.risk import opposite_pairs

        return opposite_pairs(self, since, until, min_rounds)


def _recalled_round(key: tuple[str, str], bets: list[dict[str, Any]],
                    settled: list[dict[str, Any]], results: list[dict[str, Any]],
                    ends: list[dict[str, Any]], moves: list[dict[str, Any]]) -> dict[str, Any]:
    def of(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [r for r in rows if (r["table_id"], r["round_id"]) == key]

    outcomes: dict[str, dict[str, Any]] = {}
    for row in of(settled):
        s = json.loads(row["v"])
        if row["type"] == "bet_settled":
            outcomes[s["bet_id"]] = {"outcome": s["outcome"], "returned": s["returned"]}
        elif row["type"] == "settlement_reversed":
            outcomes[s["bet_id"]] = {"outcome": "reversed", "returned": 0,
                                     "reversed": s["original_outcome"]}
    placed = [json.loads(r["v"]) for r in of(bets)]
    lines = [{"bet_id": b["bet_id"], "bet": b["bet"], "position": b.get("position"),
              "stake": b["stake"], **outcomes.get(b["bet_id"], {"outcome": None,
                                                                 "returned": None})}
             for b in placed]
    per_category: dict[str, dict[str, int]] = {}
    for line in lines:
        cat = line["bet"] if line["position"] is None else f"{line['bet']}:{line['position']}"
        entry = per_category.setdefault(cat, {"stake": 0, "returned": 0})
        entry["stake"] += line["stake"]
        entry["returned"] += line["returned"] or 0
    result = next((json.loads(r["v"]) for r in of(results)), None)
    phase: RoundPhase | None = None  # the round's phase: its events, in log order
    opened_row = None  # only the opening's body is read: the others only move the phase
    for row in of(ends):
        phase = phase_after_type(phase, row["type"])
        if row["type"] == "round_opened":
            opened_row = row
    txs = [json.loads(r["v"]) for r in of(moves)]
    signed = [t["amount"] if t["kind"] in CREDITS else -t["amount"] for t in txs]
    status = recall_status(phase, bool(lines) and all(x["outcome"] for x in lines))
    opened = json.loads(opened_row["v"]) if opened_row is not None else {}
    return {
        "table_id": key[0], "round_id": key[1], "status": status,
        "opened_at": opened.get("occurred_at"), "dealer": opened.get("dealer"),
        "profile": opened.get("profile") or (result or {}).get("profile"),
        "cards": (result or {}).get("cards"), "result": (result or {}).get("result"),
        "bets": lines, "per_category": per_category,
        "staked": sum(x["stake"] for x in lines),
        "returned": sum(x["returned"] or 0 for x in lines),
        "balance_before": txs[0]["balance_after"] - signed[0] if txs else None,
        "balance_after": txs[-1]["balance_after"] if txs else None,
        "currency": placed[0]["currency"] if placed else None,
    }


def recall_status(phase: RoundPhase | None, every_bet_ended: bool) -> str:
    """A recalled round's status, about the player's money in it: voided or annulled (the
    round's phase: every stake came back), else "settled" when every bet of the player's
    has its outcome and "open" while one has none. "settled" and "open" are the recall's
    own words (a completed round whose settlements are not all written is still open here),
    not the round's phase (shared.round_phase)."""
    if is_final(phase):
        return str(phase)
    return "settled" if every_bet_ended else "open"


def _with_exact_rtp(row: dict[str, Any]) -> dict[str, Any]:
    stake, returned = int(row["stake"]), int(row["returned"])
    out = {k: row[k] for k in ("day", "table_id", "profile", "version", "dealer", "bet",
                               "bets")}
    out.update(stake=stake, returned=returned,
               realised_rtp=round(returned / stake, 6) if stake else None)
    exact = exact_rtp_of(row["profile"], row["version"]).get(row["bet"]) if row["profile"] else None
    if exact is None:
        return {**out, "exact_rtp": None, "z": None}
    rtp, variance = exact
    spread = math.sqrt(variance * int(row["stake_squares"]))
    return {**out, "exact_rtp": round(rtp, 6),
            "z": round((returned - rtp * stake) / spread, 2) if spread else None}


def _statement_line(row: dict[str, Any]) -> dict[str, Any]:
    tx = json.loads(row["v"])
    placed = json.loads(row["placed"]) if row["placed"] else None
    settled = json.loads(row["settled"]) if row["settled"] else None
    bet = placed or settled or {}
    return {"at": tx["occurred_at"], "tx_id": tx["tx_id"], "kind": tx["kind"],
            "amount": tx["amount"] if tx["kind"] in CREDITS else -tx["amount"],
            "balance_after": tx["balance_after"], "currency": tx["currency"],
            "table_id": tx.get("table_id"), "round_id": tx.get("round_id"),
            "bet_id": bet.get("bet_id"), "bet": bet.get("bet"), "position": bet.get("position"),
            "outcome": (settled or {}).get("outcome"), "cause_id": tx["cause_id"]}


STATEMENT_COLUMNS = ("at", "tx_id", "kind", "amount", "balance_after", "currency", "table_id",
                     "round_id", "bet_id", "bet", "position", "outcome", "cause_id")
RTP_COLUMNS = ("day", "table_id", "profile", "version", "dealer", "bet", "bets", "stake",
               "returned", "realised_rtp", "exact_rtp", "z")
EVENT_COLUMNS = ("at", "kind", "table_id", "round_id", "who", "why", "topic", "partition",
                 "offset")


def to_csv(rows: Iterable[dict[str, Any]], columns: Sequence[str]) -> str:
    """Rows as CSV with a header line (amounts stay integers in minor units)."""
    import csv
    import io

    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(columns), extrasaction="ignore",
                            lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if row.get(k) is None else row.get(k) for k in columns})
    return out.getvalue()


def open_queries(settings: Any, live_tail: bool = True) -> ArchiveQueries:
    """Queries over the settings' archive and, with `live_tail`, the log past its end."""
    from services.infra.archive_store import archive_from_settings

    return ArchiveQueries(archive_from_settings(settings),
                          settings.bootstrap_servers if live_tail else None)
