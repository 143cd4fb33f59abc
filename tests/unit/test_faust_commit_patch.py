"""Faust 0.15.3 commits past an offset it never processed (faust-streaming issue 606):
`services/infra/faust_patches.py` replaces `Consumer._new_offset` and `perform_seek`.

Each case runs on a real Faust consumer (the aiokafka driver's, built without a broker)
with the patched function and with upstream's: where upstream is wrong the test asserts
its wrong answer, so it fails the day upstream is fixed and the patch can go."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import faust
import pytest
from faust.transport.consumer import Consumer
from faust.types import TP

from croupier.services.infra import faust_patches

TOPIC = TP("table.events", 0)


@pytest.fixture(scope="module")
def app() -> faust.App:
    return faust.App("faust-commit-patch-test", broker="kafka://localhost:1", store="memory://")


def consumer(app: faust.App, committed: int | None, acked: list[int],
             gaps: list[tuple[int, int]] = ()) -> Consumer:
    """A real consumer whose partition has `committed` as committed offset, `acked` acked
    and `gaps` (first, last) the fetcher saw the log skip."""
    made = app.transport.create_consumer(callback=lambda message: None,
                                         on_partitions_revoked=None,
                                         on_partitions_assigned=None)
    if committed is not None:
        made._committed_offset[TOPIC] = committed
    made._acked[TOPIC].extend(acked)
    made._acked_index[TOPIC].update(acked)
    for first, last in gaps:
        made._gap[TOPIC].addi(first, last + 1)
    return made


def patched(made: Consumer) -> int | None:
    return faust_patches.new_offset(made, TOPIC)


def upstream(made: Consumer) -> int | None:
    return faust_patches.upstream_new_offset(made, TOPIC)


# committed, acked, gaps, the patch's answer, upstream's (the same where upstream is right)
CASES = {
    "the committed offset unprocessed": (31, [32, 33], [], None, 34),
    "the committed offset processed": (31, [31, 32], [], 33, 33),
    "offset 0 unprocessed, 0 committed": (0, [1, 2], [], None, 3),
    "offset 0 processed, 0 committed": (0, [0, 1], [], 2, 2),
    "nothing known committed": (None, [1, 2], [], None, 3),
    "nothing known committed, from 0": (None, [0, 1], [], None, 2),
    "a gap after the head: up to the gap": (31, [31, 32, 35, 36], [], 33, 33),
    "acked below the committed offset": (31, [29, 30, 32], [], 31, 31),
    "offsets the log skipped fill the run": (31, [31, 32, 36], [(33, 35)], 37, 37),
    "offsets the log skipped, not the head": (31, [34, 35], [(32, 33)], None, 36),
    "nothing acked": (31, [], [], None, None),
}


@pytest.mark.parametrize("case", CASES)
def test_the_patched_offset_to_commit(app, case):
    committed, acked, gaps, answer, _ = CASES[case]
    assert patched(consumer(app, committed, acked, gaps)) == answer


@pytest.mark.parametrize("case", CASES)
def test_upstream_answers(app, case):
    committed, acked, gaps, _, upstream_answer = CASES[case]
    assert upstream(consumer(app, committed, acked, gaps)) == upstream_answer


def test_commits_the_rest_once_the_committed_offset_is_acked(app):
    made = consumer(app, 31, [32, 33])
    assert patched(made) is None
    made._acked[TOPIC].append(31)
    made._acked_index[TOPIC].add(31)
    assert patched(made) == 34
    assert not made._acked[TOPIC] and not made._acked_index[TOPIC]


def test_a_run_below_the_committed_offset_is_not_committed_again(app):
    made = consumer(app, 31, [29, 30, 32])
    assert faust_patches.new_offset(made, TOPIC) == 31
    assert not made._should_commit(TOPIC, 31)  # Faust's own filter drops it
    assert patched(made) is None  # then 31 itself is missing


def seeking(app: faust.App, committed: dict[TP, int | None], positions: dict[TP, int],
            stale: dict[TP, int] | None = None) -> Consumer:
    made = consumer(app, None, [])
    made._committed_offset.update(stale or {})

    async def seek_to_committed():
        return dict(committed)

    async def position(tp):
        if tp not in positions:
            raise RuntimeError(f"{tp} is not assigned")
        return positions[tp]

    made.seek_to_committed = seek_to_committed
    made.position = position
    return made


def test_the_seek_records_a_committed_zero_and_the_position_of_an_uncommitted_partition(app):
    zero, none, some = TP("t", 0), TP("t", 1), TP("t", 2)
    made = seeking(app, {zero: 0, none: None, some: 40}, {none: 7})
    asyncio.run(faust_patches.perform_seek(made))
    assert made._committed_offset == {zero: 0, none: 7, some: 40}
    assert made._read_offset == {zero: 0, none: None, some: 40}  # upstream's, unchanged
    made._acked[none].extend([8, 9])
    assert faust_patches.new_offset(made, none) is None  # offset 7 was read, never acked
    made._acked[none].append(7)
    assert faust_patches.new_offset(made, none) == 10


def test_upstream_seek_forgets_a_committed_zero_and_an_uncommitted_partition(app):
    zero, none = TP("t", 0), TP("t", 1)
    made = seeking(app, {zero: 0, none: None}, {none: 7})
    asyncio.run(faust_patches.upstream_perform_seek(made))
    assert made._committed_offset[zero] is None and made._committed_offset[none] is None


def test_no_position_leaves_the_partition_unknown_so_uncommitted(app):
    lost = TP("t", 3)
    made = seeking(app, {lost: None}, {})
    asyncio.run(faust_patches.perform_seek(made))
    assert made._committed_offset[lost] is None
    made._acked[lost].extend([0, 1])
    assert faust_patches.new_offset(made, lost) is None


def test_importing_the_app_module_installs_the_patch():
    probe = ("from croupier.services.infra import faust_patches\n"
             "assert not faust_patches.installed()\n"
             "import croupier.services.infra.faust_app\n"
             "from faust.transport.consumer import Consumer\n"
             "assert faust_patches.installed()\n"
             "assert Consumer._new_offset is faust_patches.new_offset\n"
             "faust_patches.install()\n"
             "assert faust_patches.upstream_new_offset is not faust_patches.new_offset\n")
    subprocess.run([sys.executable, "-c", probe], check=True, timeout=60)


def test_install_refuses_another_faust_version(monkeypatch):
    monkeypatch.setattr(faust_patches, "version", lambda name: "0.15.4")
    with pytest.raises(AssertionError, match="0.15.4"):
        faust_patches.install()


def test_a_position_that_never_comes_leaves_only_its_partition_unknown(app, monkeypatch):
    slow, quick = TP("t", 4), TP("t", 5)
    made = seeking(app, {slow: None, quick: None}, {quick: 3})

    async def position(tp):
        if tp == slow:
            await asyncio.sleep(3600)
        return 3

    made.position = position
    monkeypatch.setattr(faust_patches, "POSITION_TIMEOUT_SECONDS", 0.05)
    asyncio.run(faust_patches.perform_seek(made))
    assert made._committed_offset == {quick: 3}


def test_streams_use_the_compiled_iterator_which_acks_no_dropped_event():
    """Faust's pure-Python stream iterator acks an event it drops around a rebalance (flow
    control off, an older generation) though no agent saw it (`Stream._py_aiter`); the
    compiled one does not, and it is the one used (see docs/decisions/scale.md)."""
    import faust.streams

    assert faust.streams._CStreamIterator is not None
