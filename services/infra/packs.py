"""Packs: many records' facts in one Kafka record, fewer records for the same facts.

A pack is `{"type": "pack", "sizes": [n1, n2, ...], "records": [r1, r2, ...]}`: the records
as they were written (JSON objects), in order, with the size of each in bytes, so a reader
takes each one's bytes back without parsing the others (`unpack`) and parses it as it
would have parsed it alone. A record that is not a pack is read as a pack of one, so a log
written before packs reads the same.

Two uses, one format:
- A routed topic (`shared.topics.ROUTED_TOPICS`: today `wallet.endings`) carries copies of
  another topic's records re-keyed for the service that applies them. Its consumer applies
  them by partition, never by record, so the kernel's outbox sends each partition's share
  of a batch's outputs as packs (`pack_routed`), keyed by the first record's key: every
  record in it has a key of the same partition, so the producer's partitioner puts the pack
  where each of them would have gone, and a partition's records keep their order.
- A service's own log: a batch's entries for one partition are sent as packs
  (`own_log.Batch.records`); their chain is the entries' own, one after the other, so a
  pack is valid or void as a whole (docs/decisions/kernel.md, "Packs").

Both split past `PACK_MAX_RECORDS` or `PACK_MAX_BYTES`. A round settling 10,000 bets for
players on 6 partitions of `wallet.endings` is then about 100 records there instead of
10,000, and a wallet batch of 100 bets writes 1 to 2 ledger records instead of 100
(issue 29: records written per funded bet).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from shared.topics import ROUTED_TOPICS

Record = tuple[str, bytes, bytes]  # topic, key, value (as `own_log.Record`)

# A routed pack is one input record of its consumer: every entry it writes takes effect
# together (`own_log`, a record's parts), and its consumer's batch is counted in records:
# 100 keeps a batch of 100 records at 10,000 facts. The bytes keep every record on every
# topic under 64 KB (the platform's bound, docs/development.md), far from Kafka's 1 MB.
PACK_MAX_RECORDS = 100
PACK_MAX_BYTES = 60_000
_HEAD, _MID, _SEP, _TAIL = b'{"type":"pack","sizes":[', b'],"records":[', b",", b"]}"
EMPTY_SIZE = len(_HEAD) + len(_MID) + len(_TAIL)

PartitionFor = Callable[[str, bytes], int]  # (topic, key) -> the partition the key goes to


def cost(value: bytes) -> int:
    """What one more record adds to a pack's size (its bytes, its size, two separators)."""
    return len(value) + len(str(len(value))) + 2 * len(_SEP)


def fits(count: int, size: int, value: bytes) -> bool:
    """A pack of `count` records, `size` bytes, has room for `value`."""
    return count < PACK_MAX_RECORDS and size + cost(value) <= PACK_MAX_BYTES


def pack_values(values: Sequence[bytes]) -> bytes:
    """The pack holding `values` (JSON records), in order."""
    sizes = _SEP.join(str(len(v)).encode() for v in values)
    return _HEAD + sizes + _MID + _SEP.join(values) + _TAIL


@dataclass
class Packs:
    """Records split into packs within the bounds, in the order they were added: each pack
    is its records' consecutive run. The one pack builder of own logs and routed topics."""

    values: list[bytes] = field(default_factory=list)  # every record, as written
    firsts: list[int] = field(default_factory=list)  # each pack's first record's index
    size: int = EMPTY_SIZE  # the last pack's

    def add(self, value: bytes) -> bool:
        """Add `value` to the last pack, or start a new one when it has no room for it;
        True when it started a new one."""
        new = not self.firsts or not fits(len(self.values) - self.firsts[-1], self.size, value)
        if new:
            self.firsts.append(len(self.values))
            self.size = EMPTY_SIZE
        self.size += cost(value)
        self.values.append(value)
        return new

    def spans(self) -> list[tuple[int, int]]:
        """Each pack's records, as the indexes [first, end) of the records added."""
        return list(pairwise([*self.firsts, len(self.values)]))

    def packed(self) -> list[bytes]:
        """Each pack as the one record it is sent as: a record alone as itself."""
        return [self.values[a] if b - a == 1 else pack_values(self.values[a:b])
                for a, b in self.spans()]

    def pack_of(self, index: int) -> int:
        """Which pack holds the record added `index`-th."""
        return bisect_right(self.firsts, index) - 1


def records_of(value: bytes) -> list[bytes]:
    """The records one Kafka record holds: a pack's, or the record itself."""
    return unpack(value) or [value]


def unpack(value: bytes) -> list[bytes] | None:
    """The records a pack holds, each as it was written; None if `value` is not a pack.
    Raises ValueError on a pack whose sizes do not match what it holds."""
    if not value.startswith(_HEAD):
        return None
    mid = value.find(_MID, len(_HEAD))
    if mid < 0:
        raise ValueError("a pack without its records")
    try:
        sizes = [int(n) for n in value[len(_HEAD):mid].split(_SEP)]
    except ValueError:
        raise ValueError("a pack whose sizes are not numbers") from None
    at, out = mid + len(_MID), []
    for i, n in enumerate(sizes):
        if i:
            if value[at:at + len(_SEP)] != _SEP:
                raise ValueError(f"a pack whose record {i} is not where its sizes say")
            at += len(_SEP)
        if n <= 0 or at + n > len(value):
            raise ValueError(f"a pack whose record {i} has a size of {n}")
        out.append(value[at:at + n])
        at += n
    if value[at:] != _TAIL:
        raise ValueError("a pack with more than its sizes say")
    return out


def pack_routed(records: Sequence[Record], partition_for: PartitionFor) -> list[Record]:
    """`records` with those of a routed topic packed by (topic, partition), each pack
    where its first record was and keyed by its key; the others as they were, in order."""
    out: list[Record | None] = []
    packs: dict[tuple[str, int], Packs] = {}
    places: dict[tuple[str, int], list[tuple[int, bytes]]] = {}  # each pack's place, key
    for topic, key, value in records:
        if topic not in ROUTED_TOPICS:
            out.append((topic, key, value))
            continue
        where = (topic, partition_for(topic, key))
        if packs.setdefault(where, Packs()).add(value):
            places.setdefault(where, []).append((len(out), key))
            out.append(None)
    for where, group in packs.items():
        for (at, key), value in zip(places[where], group.packed(), strict=True):
            out[at] = (where[0], key, value)
    return [record for record in out if record is not None]
