"""The reason codes `docs/decisions/tables.md` lists are the code's, and so is their count
(issue 13: the page once counted 28 codes when the code had 29)."""

from __future__ import annotations

import re
from pathlib import Path

from services.dealer_event.refusals import CODES

TABLES_MD = Path(__file__).resolve().parents[2] / "docs" / "decisions" / "tables.md"


def _section() -> str:
    text = TABLES_MD.read_text(encoding="utf-8")
    return text.split("\n## Reason codes\n", 1)[1].split("\n## ", 1)[0]


def test_the_listed_reason_codes_are_the_codes_refusals_knows():
    section = _section()
    listed = re.findall(r"[a-z_]+", section.split("`", 2)[1])
    extra = set(re.findall(r"plus `([a-z_]+)`", section))
    assert len(listed) == len(set(listed)), "a code is listed twice"
    documented = set(listed) | extra
    assert documented == CODES, (
        f"docs/decisions/tables.md lists codes the code does not know: "
        f"{sorted(documented - CODES)}; and misses {sorted(CODES - documented)}")


def test_the_stated_count_is_the_number_listed():
    section = _section()
    listed = re.findall(r"[a-z_]+", section.split("`", 2)[1])
    counts = [int(a or b) for a, b in re.findall(r"\((\d+), plus|exercises the (\d+)\)", section)]
    assert counts, "docs/decisions/tables.md no longer states how many codes it lists"
    assert set(counts) == {len(listed)}, (
        f"docs/decisions/tables.md says {counts} codes, lists {len(listed)}")
