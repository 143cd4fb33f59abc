"""Records of a routed topic, packed by partition: fewer records for the same facts.

A routed topic (`shared.topics.ROUTED_TOPICS`: today `wallet.endings`) carries copies of
another topic's records re-keyed for the service that applies them. Its consumer applies
them by partition, never by record, so the kernel's outbox sends each partition's share of
a batch's outputs as one record (a pack: `{"type": "pack", "records": [...]}`, the records
as they were, in order), split only past `PACK_MAX_RECORDS` or `PACK_MAX_BYTES`. The pack is
keyed by its first record's key: every record in it has a key of the same partition, so
the producer's partitioner puts the pack where each of them would have gone, and the order
of a partition's records is the order of its packs (a settlement's reversal still reaches
the wallet before the refund after it).

A round settling 10,000 bets for players on 6 partitions of `wallet.endings` is then about
100 records there instead of 10,000 (issue 29: records written per funded bet).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from services.infra.own_log import Record
from shared.topics import ROUTED_TOPICS

# A pack is one input record of its consumer: every entry it writes takes effect together
# (`own_log`, a record's parts), and its consumer's batch is counted in records. These keep
# a pack well under Kafka's 1 MB and a consumer's batch of 100 records at 10,000 facts.
PACK_MAX_RECORDS = 100
PACK_MAX_BYTES = 256 * 1024
_HEAD, _SEP, _TAIL = b'{"type":"pack","records":[', b",", b"]}"

PartitionFor = Callable[[str, bytes], int]  # (topic, key) -> the partition the key goes to


@dataclass
class _Pack:
    at: int  # its place among the outputs (where its first record was)
    topic: str
    key: bytes
    values: list[bytes] = field(default_factory=list)
    size: int = len(_HEAD) + len(_TAIL)

    def fits(self, value: bytes) -> bool:
        return (len(self.values) < PACK_MAX_RECORDS
                and self.size + len(_SEP) + len(value) <= PACK_MAX_BYTES)

    def add(self, value: bytes) -> None:
        self.values.append(value)
        self.size += len(_SEP) + len(value)


def pack_values(values: Sequence[bytes]) -> bytes:
    """The pack holding `values` (JSON records), in order."""
    return _HEAD + _SEP.join(values) + _TAIL


def pack_routed(records: Sequence[Record], partition_for: PartitionFor) -> list[Record]:
    """`records` with those of a routed topic packed by (topic, partition), each pack
    where its first record was; the others as they were, in order."""
    out: list[Record | None] = []
    packs: list[_Pack] = []
    open_: dict[tuple[str, int], _Pack] = {}
    for topic, key, value in records:
        if topic not in ROUTED_TOPICS:
            out.append((topic, key, value))
            continue
        where = (topic, partition_for(topic, key))
        pack = open_.get(where)
        if pack is None or (pack.values and not pack.fits(value)):
            pack = open_[where] = _Pack(len(out), topic, key)
            packs.append(pack)
            out.append(None)
        pack.add(value)
    for pack in packs:
        out[pack.at] = (pack.topic, pack.key, pack_values(pack.values))
    return [record for record in out if record is not None]
