"""Snapshots of an own log's partitions (services/infra/snapshots.py): the format round-trips
every field of the folded state, a recovery uses the newest snapshot the log confirms and
otherwise folds from 0, and always ends in the state the full fold gives, record for record.
In memory: the snapshot topic and the own log are an in-memory double of Kafka."""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest

from services.infra.kernel import OwnLog
from services.infra.own_log import Landed, Logged, PartitionState, fold_entry
from services.infra.snapshots import (
    CHUNK_BYTES,
    DATETIME,
    SPECIAL_FIELDS,
    SnapshotCoverageError,
    SnapshotError,
    SnapshotStore,
    build_manifest,
    check_coverage,
    copy_state,
    decode,
    encode,
)
from services.wallet.ledger_fold import WALLET_FOLD, WalletFold
from services.wallet.snapshot_codec import WALLET_CODEC
from shared.events.sources import InputRef
from shared.events.wallet_ledger import LedgerEntry
from shared.topics import BETS_SETTLED_TOPIC, WALLET_LEDGER_SNAPSHOTS_TOPIC, WALLET_LEDGER_TOPIC
from tests.ledger_builder import COMMANDS, Ledger
from tests.unit.agent_loop_support import APPENDED

PARSE = LedgerEntry.model_validate_json


class MemoryKafka:
    """The own log's `LogIO` and the snapshot topic's `SnapshotIO` over partitions in
    memory: a send lands at the partition's end, a read returns what is there."""

    def __init__(self) -> None:
        self.parts: dict[tuple[str, int], list[tuple[bytes | None, bytes | None]]] = {}
        self.published: list[Any] = []

    def _part(self, topic: str, partition: int) -> list[tuple[bytes | None, bytes | None]]:
        return self.parts.setdefault((topic, partition), [])

    def append(self, topic: str, partition: int, key: bytes | None, value: bytes | None) -> int:
        part = self._part(topic, partition)
        part.append((key, value))
        return len(part) - 1

    async def send(self, topic, partition, records):
        return [Landed(self.append(topic, partition, k, v), APPENDED) for k, v in records]

    async def send_keyed(self, topic, partition, records):
        return [self.append(topic, partition, k, v) for k, v in records]

    async def read(self, topic, partition, start):
        part = self._part(topic, partition)
        return [Logged(o, v, APPENDED) for o, (_, v) in enumerate(part) if o >= start], len(part)

    async def read_keyed(self, topic, partition):
        return [(o, k, v) for o, (k, v) in enumerate(self._part(topic, partition))]

    async def publish(self, records):
        self.published += records

    async def end(self, topic, partition):
        return len(self._part(topic, partition))

    def write_ledger(self, entries, partition: int = 0) -> None:
        for e in entries:
            self.append(WALLET_LEDGER_TOPIC, partition, e.account.player_id.encode(),
                        e.model_dump_json().encode())

    def snapshot_records(self, partition: int = 0):
        return self._part(WALLET_LEDGER_SNAPSHOTS_TOPIC, partition)


def full_fold(kafka: MemoryKafka, partition: int = 0) -> PartitionState:
    """The state a worker with no snapshot folds from offset 0."""
    own = worker(kafka, "full", snapshots=False)
    return asyncio.run(own.recover(partition))


def worker(kafka: MemoryKafka, writer: str, snapshots: bool = True, **store) -> OwnLog:
    own: OwnLog = OwnLog("wallet", WALLET_LEDGER_TOPIC, WALLET_FOLD, PARSE,
                         lambda e: e.account.player_id.encode(), writer)
    own.io = kafka  # type: ignore[assignment]
    if snapshots:
        own.snapshots = SnapshotStore(WALLET_LEDGER_TOPIC, WALLET_CODEC, writer, **store)
    return own


def folded(entries, fold=WALLET_FOLD) -> PartitionState:
    state: PartitionState = PartitionState(0)
    for offset, e in enumerate(entries):
        assert fold_entry(state, offset, e, fold, e.recorded_at)
    return state


def round_trip(state: PartitionState, **kw) -> PartitionState:
    encoded = encode(state, WALLET_CODEC, **kw)
    manifest = build_manifest(WALLET_LEDGER_TOPIC, state.partition, "s1", "w", encoded)
    return decode(manifest, encoded.chunks, WALLET_CODEC)


def state_with_every_field_set() -> PartitionState:
    ledger = Ledger(players=10)
    state = folded(ledger.entries(30), WalletFold(timedelta(days=1)))  # a clock, deadlines
    state.partition = 3
    state.inputs[(BETS_SETTLED_TOPIC, 2)] = 41
    state.passed[(BETS_SETTLED_TOPIC, 2)] = 44  # decided, wrote nothing: this worker's memory
    state.published_through = 20
    state.unpublished = [(o, e) for o, e in enumerate(Ledger("u").entries(3), start=21)]
    state.void = 2
    state.held = [(31, ledger.next())]
    state.end = 33
    return state


def test_a_state_with_every_field_set_round_trips():
    state = state_with_every_field_set()
    default: PartitionState = PartitionState(0)
    unset = [f.name for f in dataclasses.fields(state)
             if getattr(state, f.name) == getattr(default, f.name)]
    assert unset == []  # the test sets every field, so a lost one would show
    assert set(state.kv) >= {"a/snap-p2", "t/snap-p2/1", "x/snap-p2/deposit:d2"}
    assert any(k.startswith("b/") for k in state.kv) and any(k.startswith("s/") for k in state.kv)
    back = round_trip(state)
    assert back == dataclasses.replace(state, passed={})  # not the log's word: not kept
    assert back.resume_at(BETS_SETTLED_TOPIC, 2) == 42  # so decided again after a restore
    assert list(back.kv) == list(state.kv)  # and in the same order


def test_a_large_state_is_cut_into_chunks_of_at_most_256_kb():
    state = folded(Ledger(players=300).entries(6000))
    encoded = encode(state, WALLET_CODEC)
    assert len(encoded.chunks) >= 4
    assert all(len(c) <= CHUNK_BYTES for c in encoded.chunks)
    assert all(c.endswith(b"\n") for c in encoded.chunks)  # cut between lines
    assert round_trip(state) == state


def test_a_line_over_a_chunk_and_a_key_with_no_codec_are_refused():
    state = folded(Ledger().entries(3))
    with pytest.raises(SnapshotError, match="over a chunk"):
        encode(state, WALLET_CODEC, chunk_bytes=100)
    state.kv["zz/1"] = 5
    with pytest.raises(SnapshotError, match="no codec"):
        encode(state, WALLET_CODEC)


# --------------------------------------------------------------------- field coverage

@dataclass
class WithANewField(PartitionState):
    leases: dict[str, int] = field(default_factory=dict)


def test_a_field_with_no_serialisation_fails_the_coverage_check_loudly():
    check_coverage()  # today's PartitionState: every field known
    with pytest.raises(SnapshotCoverageError, match=r"\['leases'\]"):
        check_coverage(WithANewField)
    with pytest.raises(SnapshotCoverageError):
        encode(WithANewField(0), WALLET_CODEC)
    stale = {**SPECIAL_FIELDS, "gone": DATETIME}
    with pytest.raises(SnapshotCoverageError, match="gone"):
        check_coverage(PartitionState, stale)


def test_a_snapshot_written_before_the_expiry_fields_existed_is_not_used():
    old = build_manifest(WALLET_LEDGER_TOPIC, 0, "s0", "w", encode(PartitionState(0), WALLET_CODEC))
    fields = {k: v for k, v in old.fields.items() if k != "clock"}
    older = old.model_copy(update={"fields": fields})
    with pytest.raises(SnapshotError):
        decode(older, [], WALLET_CODEC)


# --------------------------------------------------------------------- recovery

def test_a_new_worker_recovers_from_the_snapshot_and_the_tail_as_the_full_fold():
    kafka, ledger = MemoryKafka(), Ledger()
    kafka.write_ledger(ledger.entries(400))
    owner = worker(kafka, "owner", every_entries=100)
    state = asyncio.run(owner.recover(0))
    assert owner.snapshots is not None and owner.snapshots.due(state)
    taken = asyncio.run(snapshot_if_due(owner))
    assert taken is not None and taken.manifest.end == 400
    kafka.write_ledger(ledger.entries(150))  # the tail, after the snapshot
    heir = worker(kafka, "heir")
    recovered = asyncio.run(heir.recover(0))
    assert heir.snapshots is not None
    used, refused = heir.snapshots.restores[0]
    assert used is not None and used.snapshot_id == taken.manifest.snapshot_id and not refused
    full = full_fold(kafka)
    assert recovered == full and recovered.head == 549
    assert list(recovered.kv) == list(full.kv)
    # and it resumes its input after the last command the log applied
    assert recovered.resume_at(COMMANDS, 0) == 550


async def snapshot_if_due(own: OwnLog):
    """What the kernel does between batches; the snapshot it started, written (or None)."""
    assert own.snapshots is not None
    before = own.snapshots._of(0).running
    own.snapshot_if_due({0})
    task = own.snapshots._of(0).running
    return None if task is before or task is None else await task


def write_snapshot(kafka: MemoryKafka, writer: str, state: PartitionState) -> Any:
    store = SnapshotStore(WALLET_LEDGER_TOPIC, WALLET_CODEC, writer)
    return asyncio.run(store.write(kafka, copy_state(state))).manifest  # type: ignore[arg-type]


def test_a_corrupt_chunk_falls_back_to_the_older_snapshot_then_to_the_full_fold():
    kafka, ledger = MemoryKafka(), Ledger(players=300)
    kafka.write_ledger(ledger.entries(3000))
    older = write_snapshot(kafka, "a", full_fold(kafka))
    kafka.write_ledger(ledger.entries(2000))
    newer = write_snapshot(kafka, "b", full_fold(kafka))
    assert newer.chunks > 1
    kafka.write_ledger(ledger.entries(10))
    # a chunk of the newer one rewritten under its key (compaction keeps the last value)
    kafka.append(WALLET_LEDGER_SNAPSHOTS_TOPIC, 0, newer.chunk_key(1), b"a/x\t{}\n")
    used, refused = recovered_as_full_fold(kafka)
    assert used == older and "sha256" in refused[0]
    # the older one loses a chunk (a tombstone): nothing usable, folded from 0
    kafka.append(WALLET_LEDGER_SNAPSHOTS_TOPIC, 0, older.chunk_key(0), None)
    used, refused = recovered_as_full_fold(kafka)
    assert used is None and "missing" in refused[1]


def recovered_as_full_fold(kafka: MemoryKafka) -> tuple[Any, list[str]]:
    """A new worker recovers partition 0 into the full fold's state, record for record: the
    snapshot it used (None: folded from 0) and why it refused the others."""
    heir = worker(kafka, "heir")
    assert asyncio.run(heir.recover(0)) == full_fold(kafka)
    assert heir.snapshots is not None
    return heir.snapshots.restores[0]


def test_a_snapshot_whose_head_is_not_in_the_log_is_refused_and_the_log_folded_from_0():
    """The log the snapshot was taken of is gone (the topic recreated, or a lost branch):
    the entry at its stamped head offset has another id."""
    kafka = MemoryKafka()
    kafka.write_ledger(Ledger("before").entries(200))
    write_snapshot(kafka, "a", full_fold(kafka))
    kafka.parts[(WALLET_LEDGER_TOPIC, 0)] = []
    kafka.write_ledger(Ledger("after").entries(260))
    used, refused = recovered_as_full_fold(kafka)
    assert used is None and "lost branch" in refused[0]


def test_a_zombies_snapshot_of_a_branch_the_log_does_not_have_is_ignored():
    """The owner snapshots at 100. A zombie's state folded entries of its own at the same
    offsets (a branch the log lost); its snapshot is newer (stamped further on), yet the
    log's entry at its stamped head is the owner's: the owner's snapshot is used."""
    kafka, owner = MemoryKafka(), Ledger("owner")
    kafka.write_ledger(owner.entries(100))
    by_owner = write_snapshot(kafka, "owner", full_fold(kafka))
    zombie = Ledger("owner")
    base = list(zombie.entries(100))
    zombie.writer = "zombie"
    branch = folded([*base, *zombie.entries(80)])
    by_zombie = write_snapshot(kafka, "zombie", branch)
    assert by_zombie.end > by_owner.end
    kafka.write_ledger(owner.entries(120))  # the log's own continuation
    used, refused = recovered_as_full_fold(kafka)
    assert used == by_owner and "'zombie:180'" in refused[0]


def test_a_snapshot_is_taken_only_of_an_owned_partition_and_then_tombstones_the_older():
    kafka, ledger = MemoryKafka(), Ledger()
    kafka.write_ledger(ledger.entries(300))
    own = worker(kafka, "w", every_entries=100)
    asyncio.run(own.recover(0))
    own.revoke({0})
    assert asyncio.run(snapshot_if_due(own)) is None  # no longer ours: nothing
    assert kafka.snapshot_records() == []
    asyncio.run(own.recover(0))
    first = asyncio.run(snapshot_if_due(own))
    kafka.write_ledger(ledger.entries(50))
    asyncio.run(own.recover(0))
    assert asyncio.run(snapshot_if_due(own)) is None  # 50 entries since: not due
    kafka.write_ledger(ledger.entries(60))
    asyncio.run(own.recover(0))
    second = asyncio.run(snapshot_if_due(own))
    assert first is not None and second is not None
    assert second.tombstones == first.manifest.chunks + 1
    live = {}
    for key, value in kafka.snapshot_records():
        live[key] = value
    assert {k for k, v in live.items() if v is not None} == {
        *(second.manifest.chunk_key(n) for n in range(second.manifest.chunks)),
        second.manifest.key}


def test_a_snapshot_is_due_after_n_entries_or_after_some_time_with_something_new():
    now = [0.0]
    store = SnapshotStore(WALLET_LEDGER_TOPIC, WALLET_CODEC, "w", every_entries=1000,
                          every_seconds=300, clock=lambda: now[0])
    state = folded(Ledger().entries(10))
    assert not store.due(state)
    now[0] = 301
    assert store.due(state)
    store._of(0).last_end, store._of(0).last_at = state.end, now[0]
    now[0] = 700
    assert not store.due(state)  # nothing folded since
    store._of(0).last_at = now[0]  # and not long enough ago either
    state.end += 20  # 20 records holding 999 entries (packs): not yet
    store.folded(0, 999)
    assert not store.due(state)
    store.folded(0, 1)
    assert store.due(state)


def test_chunks_a_crash_left_without_their_manifest_are_tombstoned_by_the_next_snapshot():
    kafka, ledger = MemoryKafka(), Ledger(players=300)
    kafka.write_ledger(ledger.entries(3000))
    kept = write_snapshot(kafka, "a", full_fold(kafka))
    # a writer killed after two chunks, before its manifest
    cut = [(b"0/dead.1/c/0", b"a/x\t{}\n"), (b"0/dead.1/c/1", b"a/y\t{}\n")]
    for key, value in cut:
        kafka.append(WALLET_LEDGER_SNAPSHOTS_TOPIC, 0, key, value)
    kafka.append(WALLET_LEDGER_SNAPSHOTS_TOPIC, 0, b"0/m/bogus", b"not a manifest")
    kafka.write_ledger(ledger.entries(200))
    heir = worker(kafka, "heir", every_entries=100)
    assert asyncio.run(heir.recover(0)) == full_fold(kafka)
    assert heir.snapshots is not None and heir.snapshots.restores[0][0] == kept
    kafka.write_ledger(ledger.entries(200))
    asyncio.run(heir.recover(0))
    taken = asyncio.run(snapshot_if_due(heir))
    assert taken is not None
    assert taken.tombstones == kept.chunks + 1 + len(cut) + 1
    live: dict[bytes | None, bytes | None] = {}
    for key, value in kafka.snapshot_records():
        live[key] = value
    assert {k for k, v in live.items() if v is not None} == {
        taken.manifest.key, *(taken.manifest.chunk_key(n) for n in range(taken.manifest.chunks))}


def test_a_snapshot_taken_between_the_entries_of_one_record_holds_them_until_the_last():
    """One input record wrote three entries; the snapshot is taken after the first two
    (they are held: not applied yet); the third, in the tail, applies all three."""
    kafka, ledger = MemoryKafka(), Ledger(players=20)
    kafka.write_ledger(ledger.entries(100))
    parts = []
    for part in range(3):
        e = ledger.next()
        parts.append(e.model_copy(update={"source": InputRef(
            topic=COMMANDS, partition=0, offset=100, part=part, last=part == 2)}))
    kafka.write_ledger(parts[:2])
    state = full_fold(kafka)
    assert [e for _, e in state.held] == parts[:2]
    assert state.kv.get(f"a/{parts[0].account.player_id}") != parts[0].account
    write_snapshot(kafka, "a", state)
    kafka.write_ledger([parts[2], *ledger.entries(10)])
    used, _ = recovered_as_full_fold(kafka)
    assert used is not None and used.items["held"] == 2
    assert full_fold(kafka).held == [] and full_fold(kafka).resume_at(COMMANDS, 0) == 113
