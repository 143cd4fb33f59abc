"""One home for every topic's name: `shared.topics`.

A topic's name is written once, as a constant of the catalogue; every service, benchmark
and test imports it from there; the ACLs are built from the catalogue, and the event
registry is keyed by those constants. A quoted topic name anywhere else (a string
constant equal to a catalogue name, or a literal part of an f-string that is one) fails
here with its file and line, so a rename of a topic is one edit and a typo is an import
error, not a topic nobody writes.
"""

from __future__ import annotations

import ast
from pathlib import Path

from shared.topics import CATALOGUE_NAMES, TABLE_EVENTS_TOPIC, WALLET_LEDGER_TOPIC

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("services", "shared", "benchmarks", "tests")
HOME = Path("shared/topics.py")
# tests that assert the wire-level names themselves (what a consumer outside the platform
# subscribes to), so they spell them out
WIRE_NAME_TESTS = {Path("tests/unit/test_topic_catalogue.py")}


def quoted_topic_names(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of each string constant equal to a catalogue topic name, including
    the literal parts of f-strings."""
    names = set(CATALOGUE_NAMES)
    return sorted((node.lineno, node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and node.value in names)


def offenders() -> list[str]:
    found = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if relative == HOME or relative in WIRE_NAME_TESTS:
                continue
            tree = ast.parse(path.read_text(), filename=str(relative))
            found += [f"{relative}:{line}: {name!r}" for line, name in quoted_topic_names(tree)]
    return found


def test_no_topic_name_is_quoted_outside_the_catalogue():
    found = offenders()
    assert not found, ("topic names quoted outside shared.topics (import its "
                       "constant instead):\n" + "\n".join(found))


def test_the_scan_sees_plain_strings_and_f_string_parts():
    tree = ast.parse('a = "table.events"\nb = f"{x}" "wallet.ledger"\nc = "table.event"\n')
    assert quoted_topic_names(tree) == [(1, TABLE_EVENTS_TOPIC), (2, WALLET_LEDGER_TOPIC)]


def test_the_allow_list_names_files_that_exist():
    assert all((ROOT / path).is_file() for path in WIRE_NAME_TESTS | {HOME})
