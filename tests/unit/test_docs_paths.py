"""Every repository path and module the docs name exists (issue 13: drifted docs).

README.md and docs/**/*.md name files (`services/infra/batching.py`), folders
(`deploy/grafana/`), globs (`deploy/grafana/dashboards/*.json`), templates
(`shared/profiles/released/<name>/v<N>.json`) and dotted modules or their names
(`services.devtools.grafana_dashboards`, `shared.settlement.validate_bet`).
Only what is clearly the repository's is checked: a path starting at one of its top-level
folders (not inside a longer path or URL) and a dotted name starting at `services.`
or `shared.`.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOP = ("services", "shared", "schemas", "deploy", "tests", "benchmarks", "docs")

# A path starts at a top-level folder, not inside a longer path (`/work/shared/seeds/`,
# `http://host/docs/`) or word (`my-tests/`).
PATH = re.compile(r"(?<![\w./~-])((?:" + "|".join(TOP) + r")/[\w.*<>{}/-]*)")
MODULE = re.compile(r"(?<![\w./-])((?:services|shared)(?:\.[A-Za-z_]\w*)+)")
PLACEHOLDER = re.compile(r"<[^<>/]*>|\{[^{}/]*\}")


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def path_exists(mention: str) -> bool:
    pattern = PLACEHOLDER.sub("*", mention).rstrip("/")
    if "*" in pattern:
        return any(True for _ in ROOT.glob(pattern))
    return (ROOT / pattern).exists()


@cache
def _source(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _defines(module: Path, name: str) -> bool:
    """Whether a module's source defines or imports `name` (text only: nothing imported)."""
    n = re.escape(name)
    return re.search(rf"^\s*(?:async\s+def|def|class)\s+{n}\b|^{n}\s*[:=]|"
                     rf"^\s*(?:from\s+\S+\s+)?import\s[^\n]*\b{n}\b", _source(module),
                     re.MULTILINE) is not None


def module_exists(dotted: str) -> bool:
    """`a.b.c`: packages and modules as far as they go, then a name the last one defines."""
    parts = dotted.split(".")
    here = ROOT / parts[0]
    module: Path | None = None
    for i, part in enumerate(parts[1:], start=1):
        if module is None and (here / part).is_dir():
            here = here / part
        elif module is None and (here / f"{part}.py").is_file():
            module = here / f"{part}.py"
        else:
            # Names past the module (or a package's __init__): the first must be defined;
            # attributes of it (a class's method) are not checked.
            owner = module if module is not None else here / "__init__.py"
            return i > 1 and owner.is_file() and _defines(owner, part)
    return True


def mentions(path: Path) -> list[tuple[int, str]]:
    """(line number, path or module) for every repository path or module on each line."""
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        for match in PATH.finditer(line):
            found.append((number, match.group(1).rstrip(".,;:")))
        for match in MODULE.finditer(line):
            found.append((number, match.group(1)))
    return found


def missing(path: Path) -> list[str]:
    where = path.relative_to(ROOT)
    return [f"{where}:{number}: {mention} does not exist"
            for number, mention in mentions(path)
            if not (path_exists(mention) if "/" in mention else module_exists(mention))]


@pytest.mark.parametrize("doc", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_path_and_module_a_doc_names_exists(doc):
    problems = missing(doc)
    assert not problems, "\n".join(problems)


def test_the_docs_name_paths_at_all():
    """The scanner finds what it should (a regex that matches nothing passes everything)."""
    named = [m for doc in doc_files() for _, m in mentions(doc)]
    assert "services/infra/batching.py" in named  # docs/architecture.md
    assert "services.devtools.grafana_dashboards" in named  # docs/operator-guide.md
    assert sum(len(mentions(d)) for d in doc_files()) > 100


@pytest.mark.parametrize("mention, exists", [
    ("services/infra/batching.py", True),
    ("services/infra/batch.py", False),
    ("deploy/grafana/dashboards/*.json", True),
    ("deploy/grafana/dashboards/*.yaml", False),
    ("shared/profiles/released/<name>/v<N>.json", True),
    ("tests/e2e/", True),
    ("services.infra.consumer", True),
    ("services.infra.consumers", False),
    ("shared.settlement.validate_bet", True),
    ("shared.settlement.validate_everything", False),
    ("services.simulators.players.PlayerSimulator", True),
    ("shared.events.bet_events.manifest_digest", True),
    ("services.nothing", False),
])
def test_the_checker_tells_present_from_missing(mention, exists):
    assert (path_exists(mention) if "/" in mention else module_exists(mention)) is exists


def test_only_the_repositorys_paths_are_read():
    line = ("the sheets (`/work/shared/seeds/`), https://example.org/docs/x, my-tests/a, "
            "`services/wallet/ledger.py`, services.wallet, see the services. Then")
    found = [m.group(1) for m in PATH.finditer(line)] + [m.group(1) for m in MODULE.finditer(line)]
    assert found == ["services/wallet/ledger.py", "services.wallet"]


LAYOUT = ROOT / "docs" / "architecture.md"  # the repository's layout (the README links it)


def _layout() -> str:
    doc = LAYOUT.read_text(encoding="utf-8")
    section = doc.split("\n## Layout\n", 1)[1]
    return section.split("```", 2)[1]


def _folders(top: str) -> list[str]:
    """The folders under a top-level folder that hold something besides caches."""
    return sorted(d.name for d in (ROOT / top).iterdir()
                  if d.is_dir() and not d.name.startswith((".", "__"))
                  and any(f.is_file() and "__pycache__" not in f.parts for f in d.rglob("*")))


def test_the_layout_names_every_top_level_folder_and_the_folders_under_it():
    """`schemas/` is left out below the top: its folders are the topics, one per event."""
    block = _layout()
    problems = [f"docs/architecture.md Layout: no line for {top}/" for top in TOP
                if not re.search(rf"^{top}/", block, re.MULTILINE)]
    problems += [f"docs/architecture.md Layout: {top}/{name} is not named"
                 for top in TOP if top != "schemas" for name in _folders(top)
                 if not re.search(rf"(?<![\w-]){re.escape(name)}\b", block)]
    assert not problems, "\n".join(problems)


def _code(path: Path) -> list[tuple[int, str]]:
    """(line number, code) for each inline code span and each line of a fenced block."""
    found, fenced = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced:
            found.append((number, line))
        else:
            found += [(number, span) for span in re.findall(r"`([^`]+)`", line)]
    return found


def test_every_make_target_a_doc_names_exists():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([\w-]+)\s*:", makefile, re.MULTILINE))
    assert {"demo", "test"} <= targets
    problems = [f"{doc.relative_to(ROOT)}:{number}: make {target} is not a Makefile target"
                for doc in doc_files() for number, code in _code(doc)
                for target in re.findall(r"(?<![\w-])make ([a-z][\w-]*)", code)
                if target not in targets]
    assert not problems, "\n".join(problems)
