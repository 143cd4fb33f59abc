"""Read just one round's records from the log, by time, never from the beginning.

Every topic is keyed (table id, or player id for the wallet), so the partition
holding a round is known from its key with Kafka's own partitioner (murmur2).
`offsets_for_times` turns the round's time into an offset through the broker's
time index; reading starts a short window before it and stops shortly after
the round's end. The cost depends on the window, not on the size of the log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from kafka import KafkaConsumer, TopicPartition
from kafka.partitioner.default import murmur2

from services.operator.log_reader import PARSERS, Unparsed
from shared.events.bet_events import BetAccepted, BetRejected, BetSettled, RoundManifest
from shared.events.results import RoundResultPublished
from shared.events.table import RoundCompleted, RoundOpened, RoundVoided, TableEventBase
from shared.events.wallet_events import WalletTransaction

LEAD = timedelta(minutes=2)      # read this long before the round's time
SETTLE_SLACK = timedelta(minutes=2)  # and this long after the round ended, for downstream records
MAX_LOOKBACK = timedelta(hours=26)  # widest search for the round's opening (retention floor + 2 h)


class RoundNotFoundError(LookupError):
    """The round is not in the log around the given time."""


@dataclass
class RoundRecords:
    table_id: str
    round_id: str
    anchor: TableEventBase | None = None
    events: list[TableEventBase] = field(default_factory=list)
    result: RoundResultPublished | None = None
    decisions: list[BetAccepted | BetRejected | RoundManifest] = field(default_factory=list)
    settlements: list[BetSettled] = field(default_factory=list)
    wallet: list[WalletTransaction] = field(default_factory=list)
    unparsed: list[Unparsed] = field(default_factory=list)
    records_read: int = 0


def partition_for(key: str, partitions: int) -> int:
    """The partition Kafka's default partitioner gives a key (same as the Java client)."""
    return (murmur2(key.encode()) & 0x7FFFFFFF) % partitions


class RoundReader:
    def __init__(self, bootstrap: str) -> None:
        self.consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                      group_id=None, consumer_timeout_ms=5000)

    def close(self) -> None:
        self.consumer.close()

    def _tp(self, topic: str, key: str) -> TopicPartition:
        partitions = self.consumer.partitions_for_topic(topic)
        if not partitions:
            raise RoundNotFoundError(f"topic {topic} does not exist")
        return TopicPartition(topic, partition_for(key, len(partitions)))

    def _offset_at(self, tp: TopicPartition, at: datetime) -> int:
        found = self.consumer.offsets_for_times({tp: int(at.timestamp() * 1000)})[tp]
        return found.offset if found is not None else self.consumer.end_offsets([tp])[tp]

    def scan(self, topic: str, key: str, start: datetime,
             stop: Callable[[Any, int], bool]) -> tuple[list[Any], int]:
        """Parsed records of `key` in `topic` from `start` until `stop(value, timestamp_ms)`
        or the end of the log; `stop` also sees other keys' records (value None), so a time
        bound holds on a busy partition. Returns (records, how many records were read)."""
        tp = self._tp(topic, key)
        parse = PARSERS[topic]
        self.consumer.assign([tp])
        begin = self.consumer.beginning_offsets([tp])[tp]
        end = self.consumer.end_offsets([tp])[tp]
        position = max(self._offset_at(tp, start), begin)
        self.consumer.seek(tp, position)
        out: list[Any] = []
        read = 0
        while position < end:
            batch = self.consumer.poll(timeout_ms=3000, max_records=500).get(tp, [])
            if not batch:
                break
            for rec in batch:
                read += 1
                position = rec.offset + 1
                if rec.key is None or rec.key.decode(errors="replace") != key:
                    if stop(None, rec.timestamp):  # another key's record still tells the time
                        return out, read
                    continue
                try:
                    value = parse(rec.value)
                except ValueError as exc:
                    value = Unparsed(topic, rec.partition, rec.offset, str(exc)[:300])
                if stop(value, rec.timestamp):
                    return out, read
                out.append(value)
                if position >= end:
                    break
        return out, read

    def read_round(self, table_id: str, round_id: str, at: datetime,
                   player_id: str | None = None) -> RoundRecords:
        """The round's table events (with the event before them as the chain's anchor), its
        result, decisions, settlements and the wallet movements of its players."""
        records = RoundRecords(table_id, round_id)
        lead = LEAD
        while True:
            events, read = self._table_events(table_id, round_id, at - lead)
            records.records_read += read
            opened = next((i for i, e in enumerate(events) if isinstance(e, RoundOpened)
                           and e.round_id == round_id), None)
            if opened is not None or lead >= MAX_LOOKBACK:
                break
            lead *= 8
        if opened is None:
            raise RoundNotFoundError(
                f"round {round_id} of table {table_id} was not opened between "
                f"{at - lead:%Y-%m-%d %H:%M} and the end of the log; check the time of play")
        # the shoe events and burns just before the opening belong to the round's story too
        start = opened
        while start > 0 and getattr(events[start - 1], "round_id", None) is None \
                and not isinstance(events[start - 1], Unparsed):
            start -= 1
        records.anchor = events[start - 1] if start > 0 else None
        records.events = [e for e in events[start:] if not isinstance(e, Unparsed)]
        records.unparsed += [e for e in events if isinstance(e, Unparsed)]
        start = records.events[0].occurred_at - timedelta(seconds=5)
        end_ms = int((records.events[-1].occurred_at + SETTLE_SLACK).timestamp() * 1000)

        def past_end(value: Any, ts: int) -> bool:
            return ts > end_ms

        def of_round(value: Any) -> bool:
            return getattr(value, "round_id", None) == round_id

        results, read = self.scan("round.results", table_id, start, past_end)
        records.records_read += read
        records.result = next((r for r in results if of_round(r)), None)
        decisions, read = self.scan("bets.decisions", table_id, start, past_end)
        records.records_read += read
        records.decisions = [d for d in decisions if of_round(d)]
        settled, read = self.scan("bets.settled", table_id, start, past_end)
        records.records_read += read
        records.settlements = [s for s in settled if of_round(s)]
        players = {d.player_id for d in records.decisions if not isinstance(d, RoundManifest)}
        if player_id:
            players &= {player_id}
        for player in sorted(players):
            txs, read = self.scan("wallet.transactions", player, start, past_end)
            records.records_read += read
            records.wallet += [tx for tx in txs if isinstance(tx, WalletTransaction)
                               and tx.round_id in (round_id, None)]
        return records

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

        return self.scan("table.events", table_id, start, stop)
