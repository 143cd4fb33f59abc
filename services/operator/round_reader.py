"""Read just one round's records from the log, by time, never from the beginning.

Every topic is keyed (table id, or player id for the wallet), so the partition
holding a table's story is known from its key with Kafka's own partitioner
(murmur2). `offsets_for_times` turns the round's time into an offset through the
broker's time index; reading starts a short window before it and stops shortly after
the round's end. The cost depends on the window, not on the size of the log.

Each topic's window is read once, whatever the number of players:

- the table-keyed topics (`table.events`, `round.results`, `bets.decisions`,
  `bets.settled`) on the table's one partition;
- `wallet.transactions`, keyed by player, so a round's players are spread over
  every partition: the same time window is read once on every partition (or on
  the one partition of `--player`), keeping the records of the round's players
  that belong to this table and round;
- `wallet.operator_calls` (seamless mode: each call to the operator's wallet with its
  answer, keyed by player) likewise, its window reaching `OWED_WINDOW` further: a credit or
  rollback is published when the operator answers it, which may take retries
  (docs/decisions/seamless-replay.md). A broker without the topic (a deployment before it)
  is read without it.

The window of the money topics runs from 5 s before the round's first event (its
opening, or the shoe events and burns just before it: no stake can be debited
before the wallet has seen the round open) to `SETTLE_SLACK` after the round's end
(its `round_completed` or `round_voided`; the result, the settlements and the payouts
all follow it). Records of other rounds are skipped by a byte search for the round id
before any parsing, so a busy window costs little more than the round itself.

Corrections after the fact (seed 004 §5) may come hours later. dealer-event puts each
`round_corrected` on `table.corrections` too (the index: the same signed event, keyed by
table, nothing else on that topic), and a round's `round_completed` says so
(`corrections_indexed`): the table's partition of the index is read from the round's end
for `CORRECTION_HORIZON` (48 h, twice the dispute window), a read of the few corrections of
the partition's tables, whatever the size of the log. A round recorded before the index
(or a broker without it) is looked for as before: `table.events` forward from the round's
end (parsing only its `round_corrected` events, and the table's `round_completed` to
count), until the table has completed `KEEP_ROUNDS` (500) more rounds (dealer-event keeps
its last 500 rounds: it refuses to correct an older one, `round_too_old_to_correct`), or
`CORRECTION_HORIZON` after the round's end, or the end of the log. The money topics are
then also read around each correction (`START_SLACK` before it to `SETTLE_SLACK` after it:
the corrected result, the reversals, the settlements again and the wallet's movements
follow it); windows that overlap are read as one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from kafka import KafkaConsumer, TopicPartition
from kafka.partitioner.default import murmur2

from services.archive.segment import ArchivedRecord
from services.archive.store_ops import read_archived
from services.dealer_event.state import KEEP_ROUNDS
from services.infra.archive_store import ArchiveStore
from services.infra.kafka_security import OPERATOR, kafka_python_options
from services.operator.event_reader import PARSERS, Unparsed
from services.operator.replay_calls import OWED_WINDOW
from shared.events.bet_events import (
    BetAccepted,
    BetRejected,
    BetSettled,
    RoundManifest,
    SettlementReversed,
)
from shared.events.operator_wallet import OperatorCallRecord
from shared.events.results import RoundResultPublished
from shared.events.table import (
    RoundAnnulled,
    RoundCompleted,
    RoundCorrected,
    RoundOpened,
    RoundVoided,
    ShoeStarted,
    TableEventBase,
)
from shared.events.wallet_events import WalletTransaction
from shared.topics import (
    BETS_DECISIONS_TOPIC,
    BETS_SETTLED_TOPIC,
    ROUND_RESULTS_TOPIC,
    TABLE_CORRECTIONS_TOPIC,
    TABLE_EVENTS_TOPIC,
    WALLET_OPERATOR_CALLS_TOPIC,
    WALLET_TRANSACTIONS_TOPIC,
)

LEAD = timedelta(minutes=2)      # read this long before the round's time
START_SLACK = timedelta(seconds=5)  # money topics: from this long before the round's first event
SETTLE_SLACK = timedelta(minutes=2)  # and this long after the round ended, for downstream records
MAX_LOOKBACK = timedelta(hours=26)  # widest search for the round's opening (retention floor + 2 h)
CORRECTION_HORIZON = timedelta(hours=48)  # widest search past the round for its corrections
SHOE_LOOKBACK = timedelta(hours=3)  # widest search for the start of the round's shoe (roads)
POLL_RECORDS = 5000
SAFE_ID = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-")


class RoundNotFoundError(LookupError):
    """The round is not in the log around the given time."""


@dataclass
class RoundRecords:
    table_id: str
    round_id: str
    anchor: TableEventBase | None = None
    events: list[TableEventBase] = field(default_factory=list)
    result: RoundResultPublished | None = None  # the round's own
    corrected_results: list[RoundResultPublished] = field(default_factory=list)
    decisions: list[BetAccepted | BetRejected | RoundManifest] = field(default_factory=list)
    settlements: list[BetSettled | SettlementReversed] = field(default_factory=list)
    annulment: RoundAnnulled | None = None  # found past the round's events (annulled_within)
    corrections: list[RoundCorrected] = field(default_factory=list)  # found past its events
    wallet: list[WalletTransaction] = field(default_factory=list)
    operator_calls: list[OperatorCallRecord] = field(default_factory=list)  # seamless mode
    unparsed: list[Unparsed] = field(default_factory=list)
    records_read: int = 0


@dataclass
class Window:
    """One topic's time window: the partitions to read, when to stop, what to parse."""

    topic: str
    partitions: list[int]
    stop: Callable[[Any, int], bool]  # (parsed value or None, timestamp ms) -> past the end
    keep: Callable[[bytes | None, bytes], bool] | None = None  # (key, value) -> worth parsing


def partition_for(key: str, partitions: int) -> int:
    """The partition Kafka's default partitioner gives a key (same as the Java client)."""
    return (murmur2(key.encode()) & 0x7FFFFFFF) % partitions


def _needle(text: str) -> bytes | None:
    """Bytes every JSON record mentioning `text` as a string value contains; None when JSON
    could escape it (then nothing is skipped unparsed)."""
    return text.encode() if text and set(text) <= SAFE_ID else None


class RoundReader:
    """`archive`: where a window reaches before a partition's first offset in the log (its
    records aged out), that part is read from the archive, then the log from its start."""

    def __init__(self, bootstrap: str, archive: ArchiveStore | None = None) -> None:
        self.archive = archive
        # the client's default fetch (1 MB a partition): a window is short, and a larger
        # fetch would mostly carry the records after it on a long log
        self.consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                      group_id=None, **kafka_python_options(OPERATOR))
        self.window_reads: Counter[str] = Counter()   # topic -> windows read (one per replay)
        self.records_by_topic: Counter[str] = Counter()  # topic -> records fetched
        self._partition_ids: dict[str, list[int]] = {}
        self._assigned: list[TopicPartition] = []

    def close(self) -> None:
        self.consumer.close()

    def _partitions(self, topic: str) -> list[int]:
        if not self._has(topic):
            raise RoundNotFoundError(f"topic {topic} does not exist")
        return self._partition_ids[topic]

    def _has(self, topic: str) -> bool:
        """The broker has `topic` (a topic a newer platform added may be missing)."""
        if not self._partition_ids:
            # one metadata request for every topic: the client's cache forgets the topics it
            # is not assigned, and a refresh costs a round trip per call
            for name in PARSERS:
                self._partition_ids[name] = sorted(self.consumer.partitions_for_topic(name)
                                                   or ())
        return bool(self._partition_ids.get(topic))

    def _tp(self, topic: str, key: str) -> TopicPartition:
        return TopicPartition(topic, partition_for(key, len(self._partitions(topic))))

    def _assign_all(self) -> None:
        """Every partition of every topic a replay reads, assigned once and paused: a window
        resumes just its partitions, so no read waits for a metadata refresh."""
        if self._assigned:
            return
        self._partitions(TABLE_EVENTS_TOPIC)
        self._assigned = [TopicPartition(topic, p) for topic in PARSERS
                          for p in self._partition_ids[topic]]
        self.consumer.assign(self._assigned)
        self.consumer.pause(*self._assigned)

    def read_windows(self, windows: list[Window], start: datetime) -> dict[str, list[Any]]:
        """One read of each window, all at once: each of its partitions from the first record
        at or after `start` until the window's `stop(value, timestamp_ms)` says so or the
        partition's end offset (taken when the read starts). `keep(key, value_bytes)` picks
        the records worth parsing; `stop` sees the others too (value None), so a time bound
        holds on a busy partition. Parsed records of each topic come back in partition order
        (log order within a partition)."""
        self._assign_all()
        by_tp = {TopicPartition(w.topic, p): w for w in windows for p in w.partitions}
        tps = list(by_tp)
        for w in windows:
            self.window_reads[w.topic] += 1
        pending, ends, aged = self._seek_to(tps, start)
        out: dict[TopicPartition, list[Any]] = {tp: [] for tp in tps}
        read: Counter[str] = Counter()
        for tp, log_start in aged.items():  # the window's part that only the archive holds
            if self._take_archived(tp, by_tp[tp], start, log_start, ends[tp], out[tp], read):
                pending.discard(tp)
        self.consumer.resume(*pending)
        try:
            self._poll(pending, by_tp, ends, out, read)
        finally:
            self.consumer.pause(*tps)
        self.records_by_topic.update(read)
        return {w.topic: [v for p in w.partitions for v in out[TopicPartition(w.topic, p)]]
                for w in windows}

    def _take_archived(self, tp: TopicPartition, window: Window, start: datetime,
                       log_start: int, end: int, kept: list[Any], read: Counter[str]) -> bool:
        """The archived records of `tp` from the first at or after `start` up to the log's
        first offset, taken as `_take` takes the log's. True when the window is done."""
        assert self.archive is not None
        start_ms = int(start.timestamp() * 1000)
        batch: list[ArchivedRecord] = []
        reached = False
        for rec in read_archived(self.archive, tp.topic, tp.partition, 0, log_start,
                                 from_timestamp_ms=start_ms):
            reached = reached or rec.timestamp >= start_ms
            if reached:
                batch.append(rec)
            if len(batch) >= POLL_RECORDS:
                if _take(window, batch, end - 1, kept, read):
                    return True
                batch = []
        return _take(window, batch, end - 1, kept, read)

    def _seek_to(self, tps: list[TopicPartition], start: datetime
                 ) -> tuple[set[TopicPartition], dict[TopicPartition, int], dict[TopicPartition, int]]:
        """Each partition positioned at its first record at or after `start` (by the broker's
        time index, never a scan): (the partitions with records left to read, each one's end
        offset, taken now so that the read ends there however busy the log is; and, with an
        archive, the partitions whose first record in the log is already past `start`, with
        that first offset: the window begins in the archive)."""
        consumer = self.consumer
        begins = consumer.beginning_offsets(tps)
        ends = consumer.end_offsets(tps)
        found = consumer.offsets_for_times({tp: int(start.timestamp() * 1000) for tp in tps})
        pending: set[TopicPartition] = set()
        aged: dict[TopicPartition, int] = {}
        for tp in tps:
            at = found.get(tp)
            position = max(at.offset if at is not None else ends[tp], begins[tp])
            if self.archive is not None and begins[tp] > 0 and position == begins[tp]:
                aged[tp] = begins[tp]  # records at or after `start` may have aged out
            if position < ends[tp]:
                consumer.seek(tp, position)
                pending.add(tp)
        return pending, ends, aged

    def _poll(self, pending: set[TopicPartition], by_tp: dict[TopicPartition, Window],
              ends: dict[TopicPartition, int], out: dict[TopicPartition, list[Any]],
              read: Counter[str]) -> None:
        """Poll until every pending partition's window is done (paused as it is, so the
        others' fetches are not crowded out) or a poll comes back empty."""
        while pending:
            batches = self.consumer.poll(timeout_ms=3000, max_records=POLL_RECORDS)
            if not batches:
                break
            for tp, batch in batches.items():
                if tp in pending and _take(by_tp[tp], batch, ends[tp] - 1, out[tp], read):
                    pending.discard(tp)
                    self.consumer.pause(tp)

    def scan(self, topic: str, key: str, start: datetime,
             stop: Callable[[Any, int], bool]) -> tuple[list[Any], int]:
        """Parsed records of `key` in `topic` (on its partition) from `start` until
        `stop(value, timestamp_ms)` or the end of the log; `stop` also sees other keys'
        records (value None). Returns (records, how many records were read)."""
        wanted = key.encode()
        before = self.records_by_topic[topic]
        window = Window(topic, [self._tp(topic, key).partition], stop,
                        keep=lambda k, _v: k == wanted)
        values = self.read_windows([window], start)[topic]
        return values, self.records_by_topic[topic] - before

    def read_round(self, table_id: str, round_id: str, at: datetime,
                   player_id: str | None = None, annulled_within: timedelta | None = None
                   ) -> RoundRecords:
        """The round's table events (with the event before them as the chain's anchor), its
        result, decisions, settlements and the wallet movements of its players. An annulment
        read with the round's events (before the next round opens, or 2 minutes past its
        end) is part of them; `annulled_within` looks that much further for one (a second read
        of `table.events`, parsing only this round's `round_annulled`), and the money windows
        then reach past it. The round's corrections are looked for past its end in any case
        (within the bound the module's docstring gives), and the money topics read around each
        as well."""
        records = RoundRecords(table_id, round_id)
        events, opened = self._events_from_opening(records, at)
        _keep_round_events(records, events, opened)
        if annulled_within is not None and not any(
                isinstance(e, RoundAnnulled) and e.round_id == round_id for e in records.events):
            records.annulment = self._annulment(table_id, round_id, records.events,
                                                annulled_within)
        completed = next((e for e in records.events if isinstance(e, RoundCompleted)
                          and e.round_id == round_id), None)
        if completed is not None:
            records.corrections = self._corrections(records, bool(completed.corrections_indexed))
        self._read_money(records, player_id)
        return records

    def opening(self, table_id: str, round_id: str, at: datetime) -> RoundOpened:
        """The round's `round_opened` event, sought as `read_round` seeks it (a complaint's
        window runs from it); `RoundNotFoundError` when the log does not hold it."""
        events, opened = self._events_from_opening(RoundRecords(table_id, round_id), at)
        found: RoundOpened = events[opened]
        return found

    def _events_from_opening(self, records: RoundRecords, at: datetime
                             ) -> tuple[list[Any], int]:
        """The table's events from a little before `at` (the time of play is a person's
        recollection), reaching 8 times further back each try until the round's opening is
        among them, up to MAX_LOOKBACK. Returns the events and the opening's index."""
        table_id, round_id = records.table_id, records.round_id
        lead = LEAD
        while True:
            events, read = self._table_events(table_id, round_id, at - lead)
            records.records_read += read
            opened = next((i for i, e in enumerate(events) if isinstance(e, RoundOpened)
                           and e.round_id == round_id), None)
            if opened is not None:
                return events, opened
            if lead >= MAX_LOOKBACK:
                raise RoundNotFoundError(
                    f"round {round_id} of table {table_id} was not opened between "
                    f"{at - lead:%Y-%m-%d %H:%M} and the end of the log; check the time of play")
            lead *= 8

    def read_shoe(self, table_id: str, shoe_id: str, round_id: str, opened_at: datetime
                  ) -> tuple[list[TableEventBase], int]:
        """The table's events from the start of shoe `shoe_id` through the end of round
        `round_id` (its roads up to that round), and how many records were read. The start is
        sought like the round's opening, 8 times further back each try, up to SHOE_LOOKBACK
        before the round: a shoe begun earlier is read from there (its roads then say
        `from_start: false`), so the read stays bounded whatever the log holds."""
        lead, read = LEAD, 0
        while True:
            events, n = self._events_until_end(table_id, round_id, opened_at - lead)
            read += n
            kept = [e for e in events if isinstance(e, TableEventBase)]
            if lead >= SHOE_LOOKBACK or any(isinstance(e, ShoeStarted) and e.shoe_id == shoe_id
                                            for e in kept):
                return kept, read
            lead = min(lead * 8, SHOE_LOOKBACK)

    def _events_until_end(self, table_id: str, round_id: str, start: datetime
                          ) -> tuple[list[Any], int]:
        """From `start` through the round's `round_completed` or `round_voided`, or the end of
        the log. The record after the round's end stops the read, whatever its table: the
        round's events are all before it on the partition (waiting for the table's next event
        read the partition's other tables to the log's end after a table's last round)."""
        ended = False

        def stop(value: Any, _ts: int) -> bool:
            nonlocal ended
            if ended:
                return True
            if isinstance(value, RoundCompleted | RoundVoided) and value.round_id == round_id:
                ended = True
            return False

        return self.scan(TABLE_EVENTS_TOPIC, table_id, start, stop)

    def _read_money(self, records: RoundRecords, player_id: str | None) -> None:
        """The round's result, decisions, settlements and wallet movements: one read of the
        money topics' windows around the round's events (past its annulment, if any), and
        one around each of its corrections (those that overlap read as one)."""
        table_id, round_id = records.table_id, records.round_id
        spans = [self.money_span(records.events, round_id, records.annulment)]
        corrections = [e for e in records.events if isinstance(e, RoundCorrected)
                       and e.round_id == round_id] + records.corrections
        spans += [(c.occurred_at - START_SLACK,
                   int((c.occurred_at + SETTLE_SLACK).timestamp() * 1000)) for c in corrections]
        found: dict[str, list[Any]] = {}
        before = sum(self.records_by_topic.values())
        for start_at, end_ms in _merged(spans):
            windows = self.money_windows(table_id, round_id, end_ms, player_id)
            for topic, values in self.read_windows(windows, start_at).items():
                found.setdefault(topic, []).extend(values)
        records.records_read += sum(self.records_by_topic.values()) - before
        for values in found.values():
            records.unparsed += [v for v in values if isinstance(v, Unparsed)]
        _keep_round_money(records, found, player_id)

    def _corrections(self, records: RoundRecords, indexed: bool) -> list[RoundCorrected]:
        """The round's RoundCorrected events after the last event read, each once (the index
        and the log may hold one again: an outbox publishes again after a crash). A round whose
        `round_completed` says `corrections_indexed` (`indexed`) has them on `table.corrections` as well:
        the table's partition of that rare-record topic is read for CORRECTION_HORIZON past
        the round, so the read costs the few corrections there, never the table's later events
        nor the log's size. Otherwise (a round recorded before the index, a broker without it,
        an index that no longer reaches back to the round): `table.events` forward until the
        table has completed KEEP_ROUNDS more rounds (no correction of this round can follow:
        dealer-event no longer keeps it), CORRECTION_HORIZON past it, or the end of the log."""
        table_id, round_id, events = records.table_id, records.round_id, records.events
        last = events[-1]
        until_ms = int((last.occurred_at + CORRECTION_HORIZON).timestamp() * 1000)
        if indexed and self._index_reaches(table_id, last.occurred_at):
            window = self._index_window(table_id, round_id, until_ms)
        else:
            window = self._scan_window(table_id, round_id, until_ms)
        before = self.records_by_topic[window.topic]
        found = self.read_windows([window], last.occurred_at)[window.topic]
        records.records_read += self.records_by_topic[window.topic] - before
        seen: set[tuple[int, str, str | None]] = set()
        out: list[RoundCorrected] = []
        for e in found:
            if isinstance(e, RoundCorrected) and e.table_id == table_id \
                    and e.round_id == round_id and e.seq > last.seq \
                    and (e.seq, e.hash, e.auth) not in seen:
                seen.add((e.seq, e.hash, e.auth))
                out.append(e)
        return out

    def _index_reaches(self, table_id: str, since: datetime) -> bool:
        """`table.corrections` holds every correction of the table since `since`: the topic is
        on the broker and its partition of the table still begins at offset 0 (it is kept
        forever: `shared.topics.INDEXES`), or a record of it before `since` is still there
        (nothing after `since` was deleted)."""
        if not self._has(TABLE_CORRECTIONS_TOPIC):
            return False
        tp = self._tp(TABLE_CORRECTIONS_TOPIC, table_id)
        begin = self.consumer.beginning_offsets([tp])[tp]
        if begin == 0:
            return True
        end = self.consumer.end_offsets([tp])[tp]
        at = self.consumer.offsets_for_times({tp: int(since.timestamp() * 1000)}).get(tp)
        return end > begin and (at is None or at.offset > begin)

    def _index_window(self, table_id: str, round_id: str, until_ms: int) -> Window:
        """The table's partition of `table.corrections` until `until_ms`, parsing only the
        table's records that mention the round."""
        wanted, needle = table_id.encode(), _needle(round_id)

        def keep(key: bytes | None, value: bytes) -> bool:
            return key == wanted and (needle is None or needle in value)

        return Window(TABLE_CORRECTIONS_TOPIC, [self._tp(TABLE_CORRECTIONS_TOPIC, table_id).partition],
                      lambda _v, ts: ts > until_ms, keep)

    def _scan_window(self, table_id: str, round_id: str, until_ms: int) -> Window:
        """The table's partition of `table.events` until the table has completed KEEP_ROUNDS
        more rounds or `until_ms`, parsing only the round's `round_corrected` and the table's
        `round_completed` (to count)."""
        wanted, needle = table_id.encode(), _needle(round_id)
        later = 0

        def keep(key: bytes | None, value: bytes) -> bool:
            return key == wanted and (b"round_completed" in value or (
                b"round_corrected" in value and (needle is None or needle in value)))

        def stop(value: Any, ts: int) -> bool:
            nonlocal later
            if isinstance(value, RoundCompleted) and value.round_id != round_id:
                later += 1
            return later >= KEEP_ROUNDS or ts > until_ms

        return Window(TABLE_EVENTS_TOPIC, [self._tp(TABLE_EVENTS_TOPIC, table_id).partition],
                      stop, keep)

    def money_windows(self, table_id: str, round_id: str, end_ms: int,
                      player_id: str | None) -> list[Window]:
        """The round's windows on the money topics, read together: the table's partition of
        each table-keyed topic, and `wallet.transactions` and `wallet.operator_calls` on every
        partition (on the complaining player's alone with `--player`), the latter
        `OWED_WINDOW` past `end_ms`. Only records that mention the round id are parsed."""
        needle = _needle(round_id)
        table_key = table_id.encode()

        def past_end(_value: Any, ts: int) -> bool:
            return ts > end_ms

        def of_table_round(key: bytes | None, value: bytes) -> bool:
            return key == table_key and (needle is None or needle in value)

        windows = [Window(topic, [self._tp(topic, table_id).partition], past_end, of_table_round)
                   for topic in (ROUND_RESULTS_TOPIC, BETS_DECISIONS_TOPIC, BETS_SETTLED_TOPIC)]
        owed_ms = end_ms + int(OWED_WINDOW.total_seconds() * 1000)

        def past_owed(_value: Any, ts: int) -> bool:
            return ts > owed_ms

        windows.append(self._player_window(WALLET_TRANSACTIONS_TOPIC, past_end, needle, player_id))
        if self._has(WALLET_OPERATOR_CALLS_TOPIC):
            windows.append(self._player_window(WALLET_OPERATOR_CALLS_TOPIC, past_owed, needle,
                                               player_id))
        return windows

    def _player_window(self, topic: str, stop: Callable[[Any, int], bool],
                       needle: bytes | None, player_id: str | None) -> Window:
        """A player-keyed topic's window: every partition, or `player_id`'s alone."""
        if player_id:
            player_key = player_id.encode()
            return Window(topic, [self._tp(topic, player_id).partition], stop,
                          lambda k, v: k == player_key and (needle is None or needle in v))
        return Window(topic, self._partitions(topic), stop,
                      (lambda _k, v: needle in v) if needle else None)

    def _annulment(self, table_id: str, round_id: str, events: list[TableEventBase],
                   within: timedelta) -> RoundAnnulled | None:
        """The round's RoundAnnulled within `within` after its last event read, if any."""
        last = events[-1]
        until_ms = int((last.occurred_at + within).timestamp() * 1000)
        wanted, needle = table_id.encode(), _needle(round_id)

        def keep(key: bytes | None, value: bytes) -> bool:
            return key == wanted and b"round_annulled" in value and (
                needle is None or needle in value)

        window = Window(TABLE_EVENTS_TOPIC, [self._tp(TABLE_EVENTS_TOPIC, table_id).partition],
                        lambda _v, ts: ts > until_ms, keep)
        found = self.read_windows([window], last.occurred_at)[TABLE_EVENTS_TOPIC]
        return next((e for e in found if isinstance(e, RoundAnnulled)
                     and e.round_id == round_id and e.seq > last.seq), None)

    @staticmethod
    def money_span(events: list[TableEventBase], round_id: str,
                   annulment: RoundAnnulled | None = None) -> tuple[datetime, int]:
        """(start, end in epoch ms) of the money topics' window: from `START_SLACK` before the
        round's first event to `SETTLE_SLACK` after its end (or its last event read); for an
        annulled round, after the annulment (its reversals and refunds follow it)."""
        ends = [e for e in [*events, *([annulment] if annulment else [])]
                if isinstance(e, RoundCompleted | RoundVoided | RoundAnnulled)
                and e.round_id == round_id]
        ended = ends[-1] if ends else None
        last = ended or next((e for e in reversed(events)
                              if getattr(e, "round_id", None) == round_id), events[-1])
        return (events[0].occurred_at - START_SLACK,
                int((last.occurred_at + SETTLE_SLACK).timestamp() * 1000))

    def _table_events(self, table_id: str, round_id: str, start: datetime
                      ) -> tuple[list[Any], int]:
        """From `start` until the next round opens after this one ended (surplus cards of this
        round may follow its completion), a little past its end, or the end of the log."""
        ended_ms: int | None = None
        slack_ms = int(SETTLE_SLACK.total_seconds() * 1000)

        def stop(value: Any, ts: int) -> bool:
            nonlocal ended_ms
            if isinstance(value, RoundCompleted | RoundVoided) and value.round_id == round_id:
                ended_ms = ts
            if ended_ms is None:
                return False
            next_round = isinstance(value, RoundOpened) and value.round_id != round_id
            return next_round or ts > ended_ms + slack_ms

        return self.scan(TABLE_EVENTS_TOPIC, table_id, start, stop)


def _keep_round_events(records: RoundRecords, events: list[Any], opened: int) -> None:
    """The round's events from its opening on, with the shoe events and burns just before
    the opening (they belong to the round's story too); the event before them anchors the
    hash chain. Unparsed records are kept aside, for the report to name."""
    start = opened
    while start > 0 and getattr(events[start - 1], "round_id", None) is None \
            and not isinstance(events[start - 1], Unparsed):
        start -= 1
    records.anchor = events[start - 1] if start > 0 else None
    records.events = [e for e in events[start:] if not isinstance(e, Unparsed)]
    records.unparsed += [e for e in events if isinstance(e, Unparsed)]


def _keep_round_money(records: RoundRecords, found: dict[str, list[Any]],
                      player_id: str | None) -> None:
    """Of the money records read, the round's: a window also holds other rounds' records
    (the record's bytes only mention the round id), and with `player_id` only that
    player's wallet movements."""
    round_id = records.round_id

    def of_round(value: Any) -> bool:
        return getattr(value, "round_id", None) == round_id

    results = [r for r in found[ROUND_RESULTS_TOPIC] if of_round(r)]
    records.result = next((r for r in results if r.correction is None), None)
    records.corrected_results = [r for r in results if r.correction is not None]
    records.decisions = [d for d in found[BETS_DECISIONS_TOPIC] if of_round(d)]
    records.settlements = [s for s in found[BETS_SETTLED_TOPIC] if of_round(s)]
    records.wallet = [tx for tx in found[WALLET_TRANSACTIONS_TOPIC]
                      if isinstance(tx, WalletTransaction) and of_round(tx)
                      and tx.table_id in (records.table_id, None)
                      and (player_id is None or tx.player_id == player_id)]
    records.operator_calls = [c for c in found.get(WALLET_OPERATOR_CALLS_TOPIC, [])
                              if isinstance(c, OperatorCallRecord)
                              and c.request.round_id == round_id
                              and c.request.table_id == records.table_id
                              and (player_id is None or c.request.player_id == player_id)]


def _merged(spans: list[tuple[datetime, int]]) -> list[tuple[datetime, int]]:
    """(start, end ms) spans in time order, those that overlap merged: each record is read once."""
    out: list[tuple[datetime, int]] = []
    for start, end_ms in sorted(spans):
        if out and int(start.timestamp() * 1000) <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end_ms))
        else:
            out.append((start, end_ms))
    return out


def _take(w: Window, batch: list[Any], last: int, kept: list[Any], read: Counter[str]) -> bool:
    """The batch's records that `w` keeps, parsed into `kept` (one that does not parse as
    Unparsed, for the report to name). True when the window is done on this partition: its
    `stop` said so, or the record at `last` (its end offset when the read began) was read."""
    parse, keep, stop = PARSERS[w.topic], w.keep, w.stop
    for rec in batch:
        read[w.topic] += 1
        value = None
        if keep is None or keep(rec.key, rec.value):
            try:
                value = parse(rec.value)
            except ValueError as exc:
                value = Unparsed(w.topic, rec.partition, rec.offset, str(exc)[:300])
        if stop(value, rec.timestamp):
            return True
        if value is not None:
            kept.append(value)
        if rec.offset >= last:
            return True
    return False
