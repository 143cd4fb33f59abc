"""The mutant table of `make mutants` (tests/crashsim/mutants.py) is well-formed against
today's code: cheap, no simulator run. A code move that orphans a mutant (its text no longer
found exactly once) fails here, loudly, instead of in a 20-minute run."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.crashsim import mutants
from tests.crashsim.mutants import GROUPS, JUSTIFIED, MUTANTS, Mutant


def test_every_mutant_applies_once_and_the_table_is_complete() -> None:
    assert mutants.table_problems() == []


def test_counts_per_service() -> None:
    assert len(MUTANTS) >= 30
    groups = Counter(m.group for m in MUTANTS)
    for group in GROUPS:
        assert groups[group] >= 5, (group, groups)
    assert len({m.id for m in MUTANTS}) == len(MUTANTS)
    assert len(JUSTIFIED) <= 3


def test_the_kernel_group_is_its_three_files() -> None:
    kernel = {m.file for m in MUTANTS if m.group == "kernel"}
    assert kernel <= set(mutants.KERNEL_FILES)
    assert mutants.group_of("services/infra/contiguous.py") == "infra"
    assert mutants.group_of("services/dealer_event/table_machine.py") == "dealer-event"


def test_a_moved_anchor_is_reported(tmp_path: Path) -> None:
    (tmp_path / "services").mkdir()
    (tmp_path / "services" / "a.py").write_text("x = 1\nx = 1\ny = 2\n")
    twice = Mutant("T1", "services/a.py", "x = 1", "x = 2", "a test")
    gone = Mutant("T2", "services/a.py", "z = 3", "z = 4", "a test")
    once = Mutant("T3", "services/a.py", "y = 2", "y = 3", "a test")
    broken = Mutant("T4", "services/a.py", "y = 2", "y = (", "a test")
    assert "2 times" in (mutants.apply_error(twice, tmp_path) or "")
    assert "0 times" in (mutants.apply_error(gone, tmp_path) or "")
    assert mutants.apply_error(once, tmp_path) is None
    assert "does not compile" in (mutants.apply_error(broken, tmp_path) or "")
    problems = mutants.table_problems((twice, twice), tmp_path)
    assert any("id used 2 times" in p for p in problems)


def test_planting_changes_one_place() -> None:
    for m in MUTANTS:
        text = mutants.source_of(m)
        after = mutants.planted(m, text)
        assert after != text
        assert after.count(m.replacement) == text.count(m.replacement) + 1, m.id


@pytest.mark.parametrize("lines, expected", [
    (["seed 4:", "  t1 ...", "violated:", "  result: r1: 0 different results", "  more"],
     "result: r1: 0 different results"),
    (["BROKEN balance_chain: p0 ...", "other"], "balance_chain: p0 ..."),
    (["simulate: 10 schedules from seed 1 over wallet: 0 broken"], None),
])
def test_the_first_violation_is_read_from_the_reproducer(lines: list[str],
                                                         expected: str | None) -> None:
    assert mutants.first_violation(lines) == expected


def test_a_mutant_that_names_what_the_code_no_longer_has_is_an_error_not_a_kill() -> None:
    assert not mutants.runs_as_code(
        "the run raised AttributeError: 'Batch' object has no attribute 'firsts'")
    assert not mutants.runs_as_code("the run raised NameError: name 'x' is not defined")
    assert mutants.runs_as_code("breach: negative_balance")
    assert mutants.runs_as_code("the run raised AssertionError: entry at 5 does not fold")
