"""bet-settlement's state as the fold of `settlement.log`: one function for live state,
recovery and rebuilding.

An entry writes, each under its own key (absolute values, so a fold is idempotent):
- `<table>:<round>`          -> RoundHeader
- `<table>:<round>/b/<bet>`  -> BetEntry, and `<table>:<round>/n/<ordinal>` -> its bet id
- `<table>:<round>/s/...`    -> SpotTotal (round_book.spot_key)
- `w/<table>`                -> the table's chain watch (event_auth.TableWatch)
- `p/<table>`                -> the table's rounds waiting for their RoundOpened
(table ids have no ':', so the last two never meet a round's keys), and publishes its
decisions, manifests, settlements and reversals (the outbox:
`services.infra.own_log`).

`entries_of` turns what one record changed (its round transitions, its watch, its pending
list) into the record's entries: bet entries and spot totals in chunks of about
`ENTRY_BYTES`, the headers in the last one. Pure: no Kafka, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from services.bet_settlement.round_book import (
    BetEntry,
    Output,
    RoundHeader,
    SpotTotal,
    Transition,
    bet_key,
    order_key,
    round_key,
    topic_of,
)
from shared.events.bet_events import BetRejected, BetSettled, SettlementReversed
from shared.events.event_auth import TableWatch
from shared.events.settlement_log import (
    BETS_PER_ENTRY,
    ENTRY_BYTES,
    SPOTS_PER_ENTRY,
    BetField,
    ChainWatch,
    OutRef,
    PendingRounds,
    SettlementEntry,
    SpotWrite,
)
from shared.events.sources import InputRef
from shared.topics import WALLET_ENDINGS_TOPIC

Record = tuple[str, bytes, bytes]
BET_FIELDS: tuple[BetField, ...] = ("decision", "settlement", "reversal", "refund")


def watch_key(table_id: str) -> str:
    return f"w/{table_id}"


def pending_key(table_id: str) -> str:
    return f"p/{table_id}"




def ending_of(record: BaseModel) -> str | None:
    """The player whose wallet the record moves money in (a settlement, a void's refund, a
    rejection, a reversal), or None (an acceptance, a manifest)."""
    if isinstance(record, BetSettled | SettlementReversed | BetRejected):
        return record.player_id
    return None


class SettlementFold:
    """`services.infra.own_log.Fold` for bet-settlement's own log."""

    def apply(self, kv: MutableMapping[str, Any], entry: SettlementEntry) -> None:
        for bet in entry.bets:
            table_id, round_id = bet.bet.table_id, bet.bet.round_id
            kv[bet_key(table_id, round_id, bet.bet.bet_id)] = bet
            kv[order_key(table_id, round_id, bet.ordinal)] = bet.bet.bet_id
        for spot in entry.spots:
            kv[spot.key] = SpotTotal(total=spot.total)
        for header in entry.headers:
            kv[round_key(header.table_id, header.round_id)] = header
        if entry.watch is not None:
            kv[watch_key(entry.watch.table_id)] = entry.watch
        if entry.pending is not None:
            kv[pending_key(entry.pending.table_id)] = entry.pending.rounds

    def outputs(self, entry: SettlementEntry) -> list[Record]:
        by_id = {(b.bet.round_id, b.bet.bet_id): b for b in entry.bets}
        out: list[Record] = []
        for item in entry.publish:
            record: BaseModel | None = item
            if isinstance(item, OutRef):
                record = getattr(by_id[(item.round_id, item.bet_id)], item.field)
            assert record is not None, f"{item} names nothing its entry holds"
            value = record.model_dump_json().encode()
            out.append((topic_of(record), entry.table_id.encode(), value))
            # the same record to the wallet, on its player's partition: no forwarder hop
            if (player := ending_of(record)) is not None:
                out.append((WALLET_ENDINGS_TOPIC, player.encode(), value))
        return out


SETTLEMENT_FOLD = SettlementFold()


@dataclass(frozen=True)
class Lookups:
    """Point reads of the folded state, one key each."""

    kv: Mapping[str, Any]

    def header(self, table_id: str, round_id: str) -> RoundHeader | None:
        found: RoundHeader | None = self.kv.get(round_key(table_id, round_id))
        return found

    def watch(self, table_id: str) -> TableWatch:
        found: ChainWatch | None = self.kv.get(watch_key(table_id))
        if found is None:
            return TableWatch.from_json(None)
        return _watch_of(found)

    def pending(self, table_id: str) -> tuple[str, ...]:
        found: tuple[str, ...] = self.kv.get(pending_key(table_id), ())
        return found

    def bets(self, table_id: str, round_id: str) -> FoldedBets:
        return FoldedBets(self.kv, table_id, round_id)


@dataclass(frozen=True)
class FoldedBets:
    """One round's bets in the folded state (`round_book.RoundBets`)."""

    kv: Mapping[str, Any]
    table_id: str
    round_id: str

    def entry(self, bet_id: str) -> BetEntry | None:
        found: BetEntry | None = self.kv.get(bet_key(self.table_id, self.round_id,
                                                               bet_id))
        return found

    def bet_at(self, ordinal: int) -> str | None:
        found: str | None = self.kv.get(order_key(self.table_id, self.round_id,
                                                             ordinal))
        return found

    def spot(self, key: str) -> SpotTotal | None:
        found: SpotTotal | None = self.kv.get(key)
        return found


_WATCHES: dict[int, tuple[ChainWatch, TableWatch]] = {}  # id of a folded watch: it, read
WATCHES_KEPT = 1024


def _watch_of(found: ChainWatch) -> TableWatch:
    """The folded watch as `event_auth` reads it (both frozen), converted once per folded
    value rather than once per bet (a dump and a parse: 3 % of bet-settlement at intake)."""
    cached = _WATCHES.get(id(found))
    if cached is not None and cached[0] is found:
        return cached[1]
    if len(_WATCHES) >= WATCHES_KEPT:
        _WATCHES.clear()
    watch = TableWatch.from_json(found.model_dump())
    _WATCHES[id(found)] = (found, watch)
    return watch


def watch_of(table_id: str, watch: TableWatch) -> ChainWatch:
    return ChainWatch(table_id=table_id, **watch.to_json())


@dataclass
class Change:
    """What one input record changed: its rounds' transitions (with each round's header
    before), the table's watch and waiting rounds if they changed."""

    table_id: str
    transitions: list[tuple[RoundHeader | None, Transition]] = field(
        default_factory=list)
    watch: ChainWatch | None = None
    pending: PendingRounds | None = None

    @property
    def outputs(self) -> list[Output]:
        return [o for _, t in self.transitions for o in t.out]

    def changes_state(self) -> bool:
        return self.watch is not None or self.pending is not None or any(
            t.entries or t.spots or t.header != before for before, t in self.transitions)


@dataclass
class _Part:
    bets: dict[tuple[str, str], BetEntry] = field(default_factory=dict)
    spots: list[SpotWrite] = field(default_factory=list)
    publish: list[Any] = field(default_factory=list)
    size: int = 0  # about the bytes of what it holds


class _Parts:
    """A record's changes, cut into parts of at most `budget` bytes (as JSON, about) and
    `BETS_PER_ENTRY` bet entries and `SPOTS_PER_ENTRY` spot totals."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.parts = [_Part()]
        self.placed: set[tuple[str, str]] = set()  # bet entries given to a part

    def room(self, size: int, bets: int = 0, spots: int = 0) -> _Part:
        part = self.parts[-1]
        if (part.size + size > self.budget and part.size > 0) or \
                len(part.bets) + bets > BETS_PER_ENTRY or \
                len(part.spots) + spots > SPOTS_PER_ENTRY:
            part = _Part()
            self.parts.append(part)
        part.size += size
        return part

    def bet(self, key: tuple[str, str], entry: BetEntry, also: Any = None) -> None:
        size = len(entry.model_dump_json()) + (_size(also) if also is not None else 0)
        part = self.room(size, bets=1)
        part.bets[key] = entry
        self.placed.add(key)
        if also is not None:
            part.publish.append(also)

    def publish(self, item: Any) -> None:
        self.room(_size(item)).publish.append(item)


def _size(item: BaseModel) -> int:
    return len(item.model_dump_json()) + 16


MakeEntry = Callable[[str, str, int], SettlementEntry]


def entries_of(change: Change, source: InputRef, now: datetime,
               budget: int = ENTRY_BYTES) -> list[MakeEntry]:
    """The record's entries, ready to chain (`make(entry_id, prev, published_through)`): about
    `budget` bytes of bet entries, spot totals and what they publish each, in the order the
    round book published it (by reference to a bet entry of the same entry, else in full),
    the headers, watch and pending list in the last one."""
    if not change.changes_state() and not change.outputs:
        return []  # nothing changed and nothing to say: no entry
    # (a record that changes nothing but publishes, e.g. a duplicate bet id rejected, still
    # writes an entry: its outputs travel in the outbox, never beside it, so a crash cannot
    # lose them once the checkpoint has passed the record)
    changed = {(e.bet.round_id, e.bet.bet_id): e for _, t in change.transitions
               for e in t.entries.values()}
    parts = _Parts(budget)
    for _, _, record in change.outputs:
        ref = _ref(record, changed)
        key = None if ref is None else (ref.round_id, ref.bet_id)
        if ref is not None and key in parts.parts[-1].bets:  # a refund after its reversal
            parts.parts[-1].publish.append(ref)
            parts.parts[-1].size += _size(ref)
        elif key is None or key in parts.placed:  # its entry went to an earlier part
            parts.publish(record)
        else:
            parts.bet(key, changed[key], ref)
    for key, entry in changed.items():  # changed, published nothing (e.g. a bet waiting)
        if key not in parts.placed:
            parts.bet(key, entry)
    for _, t in change.transitions:
        for k, s in t.spots.items():
            spot = SpotWrite(key=k, total=s.total)
            parts.room(_size(spot), spots=1).spots.append(spot)
    headers = [t.header for before, t in change.transitions if t.header != before]
    makes: list[MakeEntry] = []
    for i, part in enumerate(parts.parts):
        last = i == len(parts.parts) - 1
        ref_source = source.model_copy(update={"part": i, "last": last})
        makes.append(_maker(change, part, ref_source, now, headers if last else []))
    return makes


def _maker(change: Change, part: _Part, source: InputRef, now: datetime,
           headers: list[RoundHeader]) -> MakeEntry:
    last = source.last

    def make(entry_id: str, prev: str, published_through: int) -> SettlementEntry:
        return SettlementEntry(
            entry_id=entry_id, prev=prev, source=source, table_id=change.table_id,
            headers=headers, bets=list(part.bets.values()), spots=part.spots,
            watch=change.watch if last else None, pending=change.pending if last else None,
            publish=part.publish, published_through=published_through, recorded_at=now)
    return make


def _ref(record: BaseModel, changed: Mapping[tuple[str, str], BetEntry]) -> OutRef | None:
    """A reference to the changed bet entry that holds `record`, if one does."""
    round_id, bet_id = getattr(record, "round_id", None), getattr(record, "bet_id", None)
    if not isinstance(round_id, str) or not isinstance(bet_id, str):
        return None
    entry = changed.get((round_id, bet_id))
    if entry is None:
        return None
    for name in BET_FIELDS:
        if getattr(entry, name) == record:
            return OutRef(round_id=round_id, bet_id=bet_id, field=name)
    return None
