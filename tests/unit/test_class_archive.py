"""The local nodes' class archive: trained by a node without one, kept only after a clean
stop, named by the jars and the JVM, and usable by the real JVM (-Xshare:on refuses to
start on an archive it cannot map)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from services.infra import class_archive
from services.infra.class_archive import TRAINING_NOTE, ClassArchive
from services.infra.local_broker import ensure_jars
from services.infra.settings import Settings


def _archive(tmp_path: Path) -> ClassArchive:
    lib = tmp_path / "lib"
    lib.mkdir()
    return ClassArchive(lib, store=tmp_path / "store")


def _trained(data_dir: Path, archive: ClassArchive, *, ready: bool = True) -> Path:
    """What a training JVM leaves at exit: the file its flag named."""
    (flag,) = archive.node_flags(data_dir)
    assert flag.startswith("-XX:ArchiveClassesAtExit=")
    training = Path(flag.split("=", 1)[1])
    assert training.parent == data_dir
    if ready:
        archive.node_ready(data_dir)
    training.write_bytes(b"archive")
    return training


def test_a_node_without_an_archive_trains_one_and_a_clean_stop_keeps_it(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    (tmp_path / "store").mkdir()
    data = tmp_path / "node"
    data.mkdir()
    assert archive.use_flags() == []
    training = _trained(data, archive)

    assert archive.keep_training(data, clean_exit=True)
    assert archive.path.read_bytes() == b"archive"
    assert not training.exists() and not (data / TRAINING_NOTE).exists()
    # every later node maps it, and trains nothing
    assert archive.node_flags(data) == [f"-XX:SharedArchiveFile={archive.path}"]
    assert archive.use_flags() == [f"-XX:SharedArchiveFile={archive.path}"]
    assert not (data / TRAINING_NOTE).exists()


def test_a_node_killed_or_stopped_by_force_leaves_no_archive(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    (tmp_path / "store").mkdir()
    data = tmp_path / "node"
    data.mkdir()
    training = _trained(data, archive)

    assert not archive.keep_training(data, clean_exit=False)
    assert not archive.path.exists() and not training.exists()
    # the next node trains again
    assert archive.node_flags(data)[0].startswith("-XX:ArchiveClassesAtExit=")


def test_a_second_trained_archive_does_not_replace_the_first(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    (tmp_path / "store").mkdir()
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    _trained(first, archive)
    later = _trained(second, archive)
    later.write_bytes(b"later")
    assert archive.keep_training(first, clean_exit=True)
    assert not archive.keep_training(second, clean_exit=True)
    assert archive.path.read_bytes() == b"archive"
    assert not later.exists()


def test_the_archive_is_named_by_the_jars_and_the_jvm(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    archive = _archive(tmp_path)
    other_lib = tmp_path / "lib-other"
    other_lib.mkdir()
    assert ClassArchive(other_lib, store=tmp_path / "store").path != archive.path
    before = archive.path
    (archive.lib / "kafka.jar").write_bytes(b"jar")  # jars fetched again
    assert archive.path != before
    before = archive.path
    monkeypatch.setattr(class_archive, "jvm_identity", lambda: "another-jvm-build")
    assert archive.path != before
    assert archive.path.parent == tmp_path / "store"


def test_a_node_stopped_before_it_was_ready_keeps_no_archive(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    (tmp_path / "store").mkdir()
    data = tmp_path / "node"
    data.mkdir()
    training = _trained(data, archive, ready=False)
    assert not archive.keep_training(data, clean_exit=True)
    assert not archive.path.exists() and not training.exists()


def test_the_archive_kept_is_the_one_named_when_the_node_started(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A JVM upgraded while the node ran: its archive keeps the old JVM's name."""
    archive = _archive(tmp_path)
    (tmp_path / "store").mkdir()
    data = tmp_path / "node"
    data.mkdir()
    named = archive.path
    _trained(data, archive)
    monkeypatch.setattr(class_archive, "jvm_identity", lambda: "the-upgraded-jvm")
    assert archive.keep_training(data, clean_exit=True)
    assert named.exists() and not archive.path.exists()


def test_a_training_file_left_by_a_dead_node_is_removed_at_the_next_start(
        tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    data = tmp_path / "node"
    data.mkdir()
    left = _trained(data, archive)
    archive.node_flags(data)
    assert not left.exists()


def test_an_archive_that_cannot_be_kept_does_not_fail_the_stop(tmp_path: Path) -> None:
    archive = _archive(tmp_path)  # its store does not exist: the copy fails
    data = tmp_path / "node"
    data.mkdir()
    training = _trained(data, archive)
    assert not archive.keep_training(data, clean_exit=True)
    assert not training.exists() and not (data / TRAINING_NOTE).exists()


def test_a_stop_with_nothing_trained_changes_nothing(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    assert not archive.keep_training(tmp_path, clean_exit=True)
    assert not archive.path.exists()


@pytest.mark.kafka
def test_the_real_jvm_maps_an_archive_trained_on_the_kafka_jars(tmp_path: Path) -> None:
    lib, _ = ensure_jars(Settings().cache_dir)
    archive = ClassArchive(lib, store=tmp_path)
    data = tmp_path / "node"
    data.mkdir()
    tool = ["-cp", f"{lib}/*", "kafka.tools.StorageTool", "random-uuid"]
    trained = subprocess.run(["java", *archive.node_flags(data), *tool],
                             capture_output=True, text=True, timeout=120)
    assert trained.returncode == 0, trained.stderr
    archive.node_ready(data)
    assert archive.keep_training(data, clean_exit=True)

    # -Xshare:on: the JVM exits with an error unless it maps the archive
    mapped = subprocess.run(["java", "-Xshare:on", *archive.use_flags(), *tool],
                            capture_output=True, text=True, timeout=120)
    assert mapped.returncode == 0, mapped.stdout + mapped.stderr
    assert len(mapped.stdout.strip()) == 22  # a cluster id, as without the archive


def test_a_training_path_with_spaces_is_kept_and_an_older_note_is_dropped(
        tmp_path: Path) -> None:
    spaced = tmp_path / "a home" / "node 1"
    spaced.mkdir(parents=True)
    archive = _archive(spaced.parent)
    (spaced.parent / "store").mkdir()
    _trained(spaced, archive)
    assert archive.keep_training(spaced, clean_exit=True) and archive.path.exists()
    # a note as the first form wrote it (the training file alone): nothing to keep by
    left = spaced / "classes-old.jsa"
    left.write_bytes(b"archive")
    (spaced / TRAINING_NOTE).write_text(f"{left}\n")
    assert not archive.keep_training(spaced, clean_exit=True)
    assert not left.exists() and not (spaced / TRAINING_NOTE).exists()


def test_a_node_with_a_java_agent_maps_the_archive_but_never_trains_one(
        tmp_path: Path) -> None:
    """JDK 17 refuses to dump an archive with a Java agent (the metrics exporter): the
    node exited at start-up on a machine with no archive yet."""
    archive = _archive(tmp_path)
    (tmp_path / "store").mkdir()
    data = tmp_path / "node"
    data.mkdir()
    assert archive.node_flags(data, may_train=False) == []
    assert not (data / TRAINING_NOTE).exists()
    _trained(data, archive)
    assert archive.keep_training(data, clean_exit=True)
    assert archive.node_flags(data, may_train=False) == [f"-XX:SharedArchiveFile={archive.path}"]
