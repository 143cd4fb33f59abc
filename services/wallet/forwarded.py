"""The endings forwarder's own checkpoints: where it resumes `bets.decisions` and
`bets.settled` after a crash, a rebalance or a partition move, read from a log of its own,
never from the consumer group's committed offset alone (faust-streaming 0.15.3 can commit
past a record nobody processed: an ending so passed over would be a credit never paid).

The forwarder turns each bet ending into a wallet command; once a batch's commands are
acknowledged it writes, for each input partition of the batch, the next offset to forward
(`Forwarded`) on the wallet's private, compacted topic `<instance>-wallet-forwarded`. A
worker assigned an input partition resumes at the highest offset that topic names for it
(the group's commit only where it names none: a first start). A checkpoint is written only
after what it covers is in the log, so it is never ahead of the commands: a crash between
the two forwards a batch again, and the wallet applies a command once whatever the
redelivery (every movement's tx id is its record's). A worker that lost the partition and
writes a checkpoint late writes one its own acknowledged commands back, so the highest one
is always true; an older one kept by compaction only forwards more again, never less.
Bounded: one key per input partition (docs/decisions/ledger.md)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping

from faust.types import TP
from pydantic import BaseModel, ConfigDict, Field

from croupier.services.infra.batching import Record
from croupier.services.infra.log_reader import read_to_end


class Forwarded(BaseModel):
    """Every ending of `topic[partition]` before `next_offset` is a command in the log."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    topic: str
    partition: int = Field(ge=0)
    next_offset: int = Field(ge=0)


def forwarded_topic(instance: str) -> str:
    return f"{instance}-wallet-forwarded"


def checkpoint_records(topic: str, positions: Iterable[tuple[str, int, int]]) -> list[Record]:
    """The checkpoints of a forwarded batch, given each record's (topic, partition, offset):
    one per input partition, past its highest offset."""
    nexts: dict[tuple[str, int], int] = {}
    for source, partition, offset in positions:
        key = (source, partition)
        nexts[key] = max(nexts.get(key, 0), offset + 1)
    return [(topic, f"{source}:{partition}".encode(),
             Forwarded(topic=source, partition=partition, next_offset=nxt)
             .model_dump_json().encode())
            for (source, partition), nxt in sorted(nexts.items())]


def fold_checkpoints(values: Iterable[bytes]) -> dict[TP, int]:
    """The highest next offset each input partition's checkpoints name. A value that is not
    a checkpoint is refused, never guessed."""
    out: dict[TP, int] = {}
    for value in values:
        mark = Forwarded.model_validate_json(value)
        tp = TP(mark.topic, mark.partition)
        out[tp] = max(out.get(tp, 0), mark.next_offset)
    return out


def resume_points(own: Mapping[TP, int], committed: Mapping[TP, int]) -> dict[TP, int]:
    """Where each input partition resumes: after what the forwarder's own log says it
    forwarded; the group's commit only for a partition its log names nothing of."""
    return {**{tp: offset for tp, offset in committed.items() if tp not in own}, **own}


async def read_checkpoints(bootstrap: str, topic: str, principal: str) -> dict[TP, int]:
    def read() -> dict[TP, int]:
        return fold_checkpoints(r.value for r in read_to_end(bootstrap, topic,
                                                             principal=principal)
                                if r.value is not None)

    return await asyncio.to_thread(read)
