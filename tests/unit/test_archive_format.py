"""The archive's format and its verification, on a local directory: segments read back byte
for byte, the chain of manifests, and every kind of tampering named by `archive verify`."""

from __future__ import annotations

import json
import shutil

import pytest

from services.archive.segment import (
    ArchivedRecord,
    ArchiveFormatError,
    Manifest,
    decode_segment,
    encode_segment,
    sha256,
)
from services.archive.store_ops import head_of, read_archived, write_segment
from services.archive.verify import verify
from services.infra.archive_store import (
    ArchiveStoreError,
    DirectoryStore,
    ObjectExistsError,
    open_store,
)
from shared.topics import BETS_PLACED_TOPIC


def records(start: int, count: int, partition: int = 0, step: int = 1) -> list[ArchivedRecord]:
    return [ArchivedRecord(BETS_PLACED_TOPIC, partition, start + i * step, 1_700_000_000_000 + start + i,
                           f"T{i % 3}".encode(), json.dumps({"n": start + i}).encode(),
                           (("h", b"v"),) if i % 2 else ())
            for i in range(count)]


@pytest.fixture
def archive(tmp_path):
    """Three segments of partition 0 and one of partition 1."""
    store = DirectoryStore(tmp_path / "archive")
    head = head_of(store, BETS_PLACED_TOPIC, 0)
    for start in (0, 10, 20):
        _, head = write_segment(store, head, start, start + 10, records(start, 10))
    write_segment(store, head_of(store, BETS_PLACED_TOPIC, 1), 0, 5, records(0, 5, partition=1))
    return store


def problems(store) -> list[str]:
    return verify(store, [BETS_PLACED_TOPIC]).problems


def test_a_segment_reads_back_byte_for_byte():
    recs = records(100, 50, step=2)  # offsets may skip (transaction markers)
    data, manifest = encode_segment(BETS_PLACED_TOPIC, 0, 100, 200, recs, None)
    assert decode_segment(BETS_PLACED_TOPIC, data) == recs
    assert manifest.file_sha256 == sha256(data) and manifest.record_count == 50
    assert (manifest.first_offset, manifest.last_offset, manifest.end_offset) == (100, 198, 200)
    assert manifest.prev_manifest_sha256 is None
    assert Manifest.model_validate_json(manifest.to_bytes()) == manifest


def test_records_out_of_order_or_outside_the_segment_are_refused():
    with pytest.raises(ArchiveFormatError, match="out of order"):
        encode_segment(BETS_PLACED_TOPIC, 0, 0, 10, list(reversed(records(0, 3))), None)
    with pytest.raises(ArchiveFormatError, match="outside"):
        encode_segment(BETS_PLACED_TOPIC, 0, 0, 2, records(0, 3), None)
    with pytest.raises(ArchiveFormatError, match="in a segment of"):
        encode_segment(BETS_PLACED_TOPIC, 1, 0, 10, records(0, 3), None)


def test_the_position_comes_from_the_archive_and_the_chain_holds(archive):
    head = head_of(archive, BETS_PLACED_TOPIC, 0)
    assert head.end_offset == 30
    report = verify(archive, [BETS_PLACED_TOPIC])
    assert report.ok, report.problems
    assert (report.segments, report.records) == (4, 35)
    assert [r.offset for r in read_archived(archive, BETS_PLACED_TOPIC, 0, 5, 25)] == list(range(5, 25))
    with pytest.raises(ValueError, match="the archive ends at 30"):
        write_segment(archive, head, 31, 40, records(31, 9))


def test_reading_by_time_starts_at_the_segment_holding_that_time(archive):
    at = 1_700_000_000_000 + 15
    got = [r.offset for r in read_archived(archive, BETS_PLACED_TOPIC, 0, from_timestamp_ms=at)]
    assert got[0] <= 15 and got[-1] == 29 and got[0] >= 0


def test_a_changed_file_is_named(archive):
    path = archive.root / BETS_PLACED_TOPIC / "p0000" / "00000000000000000010.parquet"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    found = problems(archive)
    assert len(found) == 1 and "p0000/00000000000000000010.parquet: changed" in found[0]


def test_a_missing_file_is_named(archive):
    (archive.root / BETS_PLACED_TOPIC / "p0000" / "00000000000000000020.parquet").unlink()
    found = problems(archive)
    assert len(found) == 1 and "00000000000000000020.parquet: missing" in found[0]


def test_a_missing_segment_is_a_gap_and_a_broken_chain(archive):
    folder = archive.root / BETS_PLACED_TOPIC / "p0000"
    for suffix in (".parquet", ".manifest.json"):
        (folder / f"00000000000000000010{suffix}").unlink()
    found = "\n".join(problems(archive))
    assert "00000000000000000020.manifest.json: does not follow" in found
    assert "gap in the offsets: the previous segment ends at 10" in found


def test_a_missing_first_segment_is_named(archive):
    folder = archive.root / BETS_PLACED_TOPIC / "p0000"
    for suffix in (".parquet", ".manifest.json"):
        (folder / f"00000000000000000000{suffix}").unlink()
    found = problems(archive)
    assert any("00000000000000000010.manifest.json: first manifest" in p for p in found)


def test_reordered_segments_are_named(archive):
    folder = archive.root / BETS_PLACED_TOPIC / "p0000"
    a, b = "00000000000000000000", "00000000000000000010"
    for suffix in (".parquet", ".manifest.json"):
        (folder / f"{a}{suffix}").rename(folder / f"x{suffix}")
        (folder / f"{b}{suffix}").rename(folder / f"{a}{suffix}")
        (folder / f"x{suffix}").rename(folder / f"{b}{suffix}")
    found = "\n".join(problems(archive))
    assert f"{a}.manifest.json: named for offset 0 but covers offsets from 10" in found
    assert f"{b}.manifest.json: named for offset 10 but covers offsets from 0" in found


def test_a_rewritten_manifest_breaks_the_chain_after_it(archive):
    """Changing a file and its manifest's hash to match still leaves the next manifest
    pointing at the old manifest."""
    folder = archive.root / BETS_PLACED_TOPIC / "p0000"
    path = folder / "00000000000000000010.manifest.json"
    manifest = Manifest.model_validate_json(path.read_bytes())
    forged = manifest.model_copy(update={"record_count": 9})
    path.write_bytes(forged.to_bytes())
    found = "\n".join(problems(archive))
    assert "00000000000000000020.manifest.json: does not follow" in found
    assert "00000000000000000010.parquet: holds 10 records that do not match" in found


def test_a_manifest_moved_to_another_partition_is_named(archive):
    src = archive.root / BETS_PLACED_TOPIC / "p0001"
    dst = archive.root / BETS_PLACED_TOPIC / "p0002"
    shutil.copytree(src, dst)
    found = "\n".join(problems(archive))
    assert "p0002/00000000000000000000.manifest.json: describes bets.placed[1]" in found


def test_a_file_left_by_a_kill_is_a_note_and_is_written_again(archive):
    head = head_of(archive, BETS_PLACED_TOPIC, 0)
    leftover = archive.root / BETS_PLACED_TOPIC / "p0000" / "00000000000000000030.parquet"
    leftover.write_bytes(b"half a file")
    report = verify(archive, [BETS_PLACED_TOPIC])
    assert report.ok and "without its manifest at the partition's end" in report.notes[0]
    write_segment(archive, head, 30, 35, records(30, 5))
    assert verify(archive, [BETS_PLACED_TOPIC]).ok and not verify(archive, [BETS_PLACED_TOPIC]).notes
    stray = archive.root / BETS_PLACED_TOPIC / "p0000" / "00000000000000000012.parquet"
    stray.write_bytes(b"x")
    assert any("a file no manifest describes" in p for p in problems(archive))


def test_a_manifest_is_written_once(archive):
    stale = head_of(archive, BETS_PLACED_TOPIC, 1)
    stale = stale.__class__(BETS_PLACED_TOPIC, 1, 0, None)
    with pytest.raises(ObjectExistsError, match="already exists"):
        write_segment(archive, stale, 0, 5, records(0, 5, partition=1))


def test_nothing_aged_out_of_the_log_unarchived(archive):
    report = verify(archive, [BETS_PLACED_TOPIC], log_starts=lambda _t: {0: 25, 1: 7, 2: 3})
    assert report.problems == [
        "bets.placed[1]: offsets 5..6 are neither archived nor in the log any more "
        "(aged out before archived)",
        "bets.placed[2]: offsets 0..2 are neither archived nor in the log any more "
        "(aged out before archived)"]


def test_archive_urls(tmp_path):
    assert isinstance(open_store((tmp_path / "a").as_uri()), DirectoryStore)
    for bad, why in [("ftp://x/y", "use file:///path or s3://bucket/prefix"),
                     ("file://host/x", "names a local path"),
                     ("s3:///prefix", "names no bucket"),
                     ("s3://b/p?endpont=x", "unknown parameter")]:
        with pytest.raises(ArchiveStoreError, match=why):
            open_store(bad)


def test_query_columns_are_copied_from_json_objects_only():
    import pyarrow as pa

    from services.archive.segment import query_columns

    values = pa.array([b'{"type":"bet_placed","player_id":"p1","table_id":"T","round_id":"R"}',
                       b"\xff\xfe not utf-8", b"not json", b'{"player_id": 5}', None, b"[1]",
                       b'{"nested":{"player_id":"p9"}}'], pa.binary())
    kind, table, round_, player = (c.to_pylist() for c in query_columns(values))
    assert kind == ["bet_placed", None, None, None, None, None, None]
    assert player == ["p1", None, None, None, None, None, None]
    assert (table[0], round_[0]) == ("T", "R")
    assert query_columns(pa.array([], pa.binary()))[0].to_pylist() == []
