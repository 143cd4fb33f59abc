"""What lets `make test` run its modules in several pytest-xdist processes on one machine:
each worker's test ports come from a slice of its own, and the jars a broker or the S3
server needs are fetched once however many processes ask at the same time."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

from services.infra.local_broker import JARS_MARKER, maven_jars
from tests.ports import worker_slice


def test_outside_xdist_a_process_has_the_whole_range():
    assert worker_slice(10_000, 32_768, {}) == (10_000, 32_768)
    assert worker_slice(10_000, 32_768, {"PYTEST_XDIST_WORKER": "master"}) == (10_000, 32_768)


def test_xdist_workers_take_slices_that_never_overlap():
    slices = [worker_slice(10_000, 32_768, {"PYTEST_XDIST_WORKER": f"gw{i}",
                                            "PYTEST_XDIST_WORKER_COUNT": "3"})
              for i in range(3)]
    ports = [set(range(low, high)) for low, high in slices]
    assert all(len(p) > 7_000 for p in ports)
    assert not (ports[0] & ports[1]) and not (ports[0] & ports[2]) and not (ports[1] & ports[2])
    assert all(10_000 <= low < high <= 32_768 for low, high in slices)


def test_jars_asked_for_at_once_are_fetched_once(tmp_path, monkeypatch):
    """Four threads ask for the same jars on a machine that has none: one runs Maven (a
    stand-in here that counts its runs and takes its time), the others wait and find them."""
    runs = tmp_path / "runs"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mvn = bin_dir / "mvn"
    mvn.write_text("#!/bin/sh\necho run >> " + str(runs) + "\nsleep 0.3\n"
                   'for a in "$@"; do case "$a" in -DoutputDirectory=*) '
                   'd="${a#-DoutputDirectory=}"; mkdir -p "$d"; touch "$d/a.jar";; esac; done\n')
    mvn.chmod(mvn.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    lib = tmp_path / "cache" / "kafka" / "lib"
    results: list[tuple[Path, bool]] = []
    threads = [threading.Thread(target=lambda: results.append(
        maven_jars(tmp_path / "pom.xml", lib, "test"))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert runs.read_text().count("run") == 1
    assert sorted(downloaded for _, downloaded in results) == [False, False, False, True]
    assert (lib / JARS_MARKER).exists() and (lib / "a.jar").exists()
