"""The code is imported as `croupier.shared` and `croupier.services`, never as `shared` or `services`.

`shared/` and `services/` sit at the top of the checkout, so from there Python would also
import them under their bare names: the same module twice, with two copies of every class
(an event model from one is not an instance of the other). This keeps every import on the
installed package's path.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BARE = re.compile(r"^\s*(?:from|import)\s+(?:shared|services)\b", re.MULTILINE)


def python_files() -> list[Path]:
    return [p for top in ("shared", "services", "tests", "benchmarks")
            for p in sorted((ROOT / top).rglob("*.py"))]


def test_no_module_imports_the_bare_folder_names() -> None:
    offenders = [f"{p.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
                 for p in python_files()
                 for text in [p.read_text(encoding="utf-8")]
                 for m in BARE.finditer(text)]
    assert offenders == []


def test_the_package_links_lead_to_the_folders() -> None:
    assert (ROOT / "croupier" / "shared").resolve() == ROOT / "shared"
    assert (ROOT / "croupier" / "services").resolve() == ROOT / "services"


def test_the_bare_rule_catches_a_bare_import() -> None:
    assert BARE.search("from shared.cards import Card\n")
    assert BARE.search("    import services.wallet\n")
    assert not BARE.search("from croupier.shared.cards import Card\n")
