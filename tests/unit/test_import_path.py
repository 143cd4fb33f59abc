"""The installed packages are the real folders `services/` and `shared/` (issue 32).

Every import reads `services…` or `shared…`: the folder a file sits in is its import path,
for Python, pip, mypy, ruff, pytest and any static import reader alike, without running
code. So the tree holds no links (a link is a second path to the same file, and a copy of
the tree that drops or follows it is another tree), `services/`, `shared/` and `tests/` are
real package folders at the top, nothing imports or names the former `croupier` package,
and, `services` and `shared` being generic names, no other installed distribution claims
them and both import from this checkout.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("services", "shared", "tests")
# not the project's own files: version control, the venv (a link in a worktree), build
# output and runtime state at the top; caches anywhere
TOP_SKIP = {".git", ".venv", "var", "build", "dist"}
SKIP = {"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis", "node_modules"}
# the former package's module path (`croupier` dot `services`) or folder path (slash)
FORMER = re.compile(r"(?<![\w.])croupier[./](?:services|shared)(?![\w-])")


def tree() -> list[Path]:
    """Every file and folder of the project (links included, not followed)."""
    found: list[Path] = []
    for here, dirs, files in os.walk(ROOT):
        skip = SKIP | (TOP_SKIP if Path(here) == ROOT else set())
        dirs[:] = sorted(d for d in dirs if d not in skip and not d.endswith(".egg-info"))
        found += [Path(here) / name for name in (*dirs, *sorted(files))]
    return found


def text_files() -> list[tuple[Path, str]]:
    found = []
    for path in tree():
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            if b"\0" not in data:
                try:
                    found.append((path, data.decode("utf-8")))
                except UnicodeDecodeError:
                    pass
    return found


def former_imports(source: str) -> list[int]:
    """The lines of `source` that import the former `croupier` package."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                 else [node.module] if isinstance(node, ast.ImportFrom) and node.module
                 and node.level == 0 else [])
        if any(name == "croupier" or name.startswith("croupier.") for name in names):
            lines.append(node.lineno)
    return sorted(lines)


def test_the_tree_holds_no_links() -> None:
    assert [str(p.relative_to(ROOT)) for p in tree() if p.is_symlink()] == []


@pytest.mark.parametrize("name", PACKAGES)
def test_each_package_is_a_real_folder_at_the_top(name: str) -> None:
    folder = ROOT / name
    assert folder.is_dir() and not folder.is_symlink()
    assert (folder / "__init__.py").is_file() and not (folder / "__init__.py").is_symlink()


def test_the_former_package_folder_is_gone() -> None:
    assert not (ROOT / "croupier").exists() and not (ROOT / "croupier").is_symlink()


@pytest.mark.parametrize("name", PACKAGES)
def test_each_package_imports_from_this_checkout(name: str) -> None:
    """A generic name: an installed `services` or `shared` from elsewhere would win or lose
    by path order; the one imported is this checkout's folder."""
    module = importlib.import_module(name)
    assert module.__file__ is not None
    assert Path(module.__file__).resolve() == ROOT / name / "__init__.py"


@pytest.mark.parametrize("name", ["services", "shared"])
def test_no_other_installed_distribution_claims_the_name(name: str) -> None:
    claimed = set(importlib.metadata.packages_distributions().get(name, []))
    assert claimed <= {"croupier"}, f"{sorted(claimed)} also install a top-level {name}"


def test_no_module_imports_the_former_package() -> None:
    offenders = [f"{path.relative_to(ROOT)}:{line}"
                 for path, text in text_files() if path.suffix == ".py"
                 for line in former_imports(text)]
    assert offenders == []


def test_nothing_names_the_former_package_paths() -> None:
    """Module paths in code, commands (`python -m`), configuration and docs, and the
    former folder paths."""
    offenders = [f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group()}"
                 for path, text in text_files() for m in FORMER.finditer(text)]
    assert offenders == []


def test_the_rules_catch_what_they_guard() -> None:
    old = "croupier"
    assert former_imports(f"import json\nfrom {old}.shared.cards import Card\n") == [2]
    assert former_imports(f"import {old}.services.cli as cli\n") == [1]
    assert former_imports(f"import {old}\n") == [1]
    assert former_imports("from shared.cards import Card\nfrom . import croupier\n") == []
    assert FORMER.search(f"python -m {old}.services.cli schemas")
    assert FORMER.search(f'"{old}.shared.profiles" = ["*.json"]')
    assert FORMER.search(f"`{old}/shared` links to it")
    for other in (f'logging.getLogger("{old}.wallet")', f"{old}_bets_settled_total",
                  f"{old}.egg-info", f"{old} topics apply", f"x{old}.shared", f"{old}.shared_pool"):
        assert not FORMER.search(other), other
