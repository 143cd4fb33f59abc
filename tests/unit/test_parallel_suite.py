"""What lets `make test` run its modules in several pytest-xdist processes on one machine:
each worker's test ports come from a slice of its own, and the jars a broker or the S3
server needs are fetched once however many processes ask at the same time; each module
runs whole in one worker, and the platforms under load one after another."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

from services.infra.local_broker import JARS_MARKER, maven_jars
from tests.conftest import PLATFORMS_UNDER_LOAD, unit_of
from tests.ports import worker_slice

ROOT = Path(__file__).resolve().parents[2]


def test_a_module_is_its_own_unit_and_the_platforms_under_load_share_one():
    assert len(PLATFORMS_UNDER_LOAD) >= 2
    assert all((ROOT / "tests" / "e2e" / module).is_file() for module in PLATFORMS_UNDER_LOAD)
    assert {unit_of(f"tests/e2e/{m}") for m in PLATFORMS_UNDER_LOAD} == {"platforms-under-load"}
    others = ["tests/unit/test_parallel_suite.py", "tests/e2e/test_demo_cli.py",
              "tests/integration/test_money_live.py"]
    assert [unit_of(m) for m in others] == others


def test_two_workers_run_each_module_whole_and_the_platforms_in_one(tmp_path):
    """A real two-worker run of a scratch suite under the conftest's scheduler: where each
    test ran. (xdist's own `loadgroup` passes a check of its marks and still scatters every
    test under this pytest: pytest-xdist#1386.)"""
    (tmp_path / "conftest.py").write_text(
        "from tests.conftest import pytest_xdist_make_scheduler  # noqa: F401\n")
    # collected a, the two platforms, x, y: plain loadfile hands the two out to different
    # workers in about two runs of three
    names = ["test_a.py", *sorted(PLATFORMS_UNDER_LOAD)[:2], "test_x.py", "test_y.py"]
    ran = tmp_path / "ran.txt"
    for name in names:
        (tmp_path / name).write_text("import os\n" + "".join(
            f"def test_{i}():\n    with open({str(ran)!r}, 'a') as f:\n"
            "        f.write(f\"{__name__} {os.environ['PYTEST_XDIST_WORKER']}\\n\")\n"
            for i in range(8)))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
         "--dist", "loadfile", "-o", "addopts=", "--rootdir", str(tmp_path),
         str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    workers: dict[str, set[str]] = {}
    for line in ran.read_text().splitlines():
        module, worker = line.split()
        workers.setdefault(module, set()).add(worker)
    assert set(workers) == {n.removesuffix(".py") for n in names}
    assert all(len(w) == 1 for w in workers.values()), workers
    platforms = [n.removesuffix(".py") for n in names[1:3]]
    assert workers[platforms[0]] == workers[platforms[1]], workers


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
