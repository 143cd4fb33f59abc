"""One round-phase vocabulary (issue 32; docs/decisions/round-phase.md), read from the
source (AST only).

In the modules that follow a round's phase from table events, every string compared with,
or assigned to, something named like a phase (`phase`, `rnd.phase`, `round_status[...]`,
`round_phase`) is one of `shared.round_phase.ROUND_PHASES`. A word of another vocabulary
("complete", "open", "closed") there is a second vocabulary coming back.
"""

from __future__ import annotations

import ast
from pathlib import Path

from shared.round_phase import ROUND_PHASES

ROOT = Path(__file__).resolve().parents[2]
# the modules that fold a round's phase, or decide by it
FOLDERS = (
    "services/dealer_event/state.py", "services/dealer_event/table_checks.py",
    "services/dealer_event/table_machine.py", "services/wallet/rounds_view.py",
    "services/wallet/table_views.py", "services/operator/replay_story.py",
    "services/operator/console_floor.py", "services/archive/queries.py",
    "shared/round_phase.py",
)
PHASE_NAMES = ("phase", "round_status")


def _names_a_phase(node: ast.AST) -> bool:
    """`phase`, `x.phase`, `state.round_status[r]`, `round_phase`, ... (not a call)."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Name):
        return any(word in node.id for word in PHASE_NAMES)
    if isinstance(node, ast.Attribute):
        return any(word in node.attr for word in PHASE_NAMES)
    return False


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for elt in node.elts for s in _strings(elt)]
    return []


def phase_words(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, word) of every string compared with or assigned to a phase."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_names_a_phase(o) for o in operands):
                found += [(node.lineno, s) for o in operands for s in _strings(o)]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_names_a_phase(t) for t in targets):
                found += [(node.lineno, s) for s in _strings(node.value)]
        elif isinstance(node, ast.keyword) and node.arg and _names_a_phase(
                ast.Name(id=node.arg)):
            found += [(node.value.lineno, s) for s in _strings(node.value)]
    return found


def test_the_modules_that_fold_a_rounds_phase_speak_only_its_words():
    seen, wrong = 0, []
    for rel in FOLDERS:
        words = phase_words(ast.parse((ROOT / rel).read_text(), rel))
        seen += len(words)
        wrong += [f"{rel}:{line}: {word!r}" for line, word in words
                  if word not in ROUND_PHASES]
    assert not wrong, "not a round phase (shared.round_phase.RoundPhase):\n" + "\n".join(wrong)
    assert seen >= 10  # the check reads real comparisons (it is not looking at nothing)


def test_the_check_sees_an_old_word():
    old = ast.parse('if rnd.phase == "complete" or state.round_status[r] in ("open",):\n'
                    '    x = KnownRound(phase="closed")\nround_phase = "betting"\n')
    assert sorted(w for _, w in phase_words(old)) == ["betting", "closed", "complete", "open"]
