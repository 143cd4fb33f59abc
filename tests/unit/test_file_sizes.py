"""No Python file of the project is over 700 lines: a file that grows past it is split into
modules that each do one thing (docs/decisions/replay.md names how replay was)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 700
TREES = ("services", "shared", "tests", "benchmarks")


def _lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for _ in f)


def test_no_python_file_is_over_700_lines() -> None:
    over = {str(path.relative_to(ROOT)): n for tree in TREES
            for path in sorted((ROOT / tree).rglob("*.py"))
            if (n := _lines(path)) > MAX_LINES}
    assert over == {}
