"""The floors of the code, read from the source (AST only: nothing is imported here).

- No module global is rebound: no `global` statement in `services/` or `shared/` (a
  service's composition root, `services/<svc>/bootstrap.py`, returns what it builds).
- `shared/` is the ground floor: it imports nothing from `services/`.
- `services/infra` is the floor every service stands on: it imports from no other
  `services/<x>` package (what it needs from above is passed in).
- No import cycle among the rooms (`shared`, each package of `services/`), and none among
  the modules of `services/` and `shared/`, counting imports at
  module level and inside functions alike. Imports under `if TYPE_CHECKING:` are left out
  of the cycle check only (they run for the type checker, never at run time); the floors
  above count them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FLOORS = ("services", "shared")


@dataclass(frozen=True)
class Import:
    target: str  # the module imported (`services.x.y`), resolved to a known one
    line: int
    type_only: bool  # under `if TYPE_CHECKING:`


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def sources() -> dict[str, Path]:
    """Every module of services/ and shared/, by its import name."""
    return {module_name(p): p for floor in FLOORS for p in sorted((ROOT / floor).rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(node: ast.AST, type_only: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    """Every node under `node`, with whether it sits in an `if TYPE_CHECKING:` body."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            yield child, type_only
            for stmt in child.body:
                yield stmt, True
                yield from _walk(stmt, True)
            for stmt in child.orelse:
                yield stmt, type_only
                yield from _walk(stmt, type_only)
            continue
        yield child, type_only
        yield from _walk(child, type_only)


def imports_of(path: Path, known: set[str]) -> list[Import]:
    """The modules of services/ and shared/ that `path` imports, each resolved to the module
    that runs: `from a.b import c` is `a.b.c` when that is a module, else `a.b`."""
    found = []
    for node, type_only in _walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in known
                     else node.module for alias in node.names]
        else:
            continue
        found += [Import(name, node.lineno, type_only) for name in names
                  if name.split(".")[0] in FLOORS]
    return found


def graph() -> dict[str, list[Import]]:
    modules = sources()
    known = set(modules)
    return {name: imports_of(path, known) for name, path in modules.items()}


def test_no_module_global_is_rebound() -> None:
    rebound = [f"{name}:{node.lineno}: global {', '.join(node.names)}"
               for name, path in sources().items()
               for node, _ in _walk(ast.parse(path.read_text(encoding="utf-8")))
               if isinstance(node, ast.Global)]
    assert rebound == []


def test_shared_imports_nothing_from_services() -> None:
    upward = [f"{name}:{i.line} imports {i.target}" for name, found in graph().items()
              if name.startswith("shared") for i in found
              if i.target.startswith("services")]
    assert upward == []


def _package(module: str) -> str:
    """`services.<x>` of a module of services/."""
    return ".".join(module.split(".")[:2])


def test_infra_imports_no_other_service_package() -> None:
    infra = "services.infra"
    upward = [f"{name}:{i.line} imports {i.target}" for name, found in graph().items()
              if _package(name) == infra for i in found
              if i.target.startswith("services.") and _package(i.target) != infra]
    assert upward == []


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in edges.get(node, ()):
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle() -> None:
    modules = graph()
    edges = {name: {i.target for i in found if not i.type_only and i.target in modules}
             for name, found in modules.items()}
    assert cycles(edges) == []


def room(module: str) -> str:
    """The room a module is in: `shared`, or its package of services/ (`services.wallet`)."""
    return "shared" if module.split(".")[0] == "shared" else _package(module)


def test_no_import_cycle_between_rooms() -> None:
    """The rooms (shared, and each package of services/) import each other without a
    cycle: the picture of the house reads one way, from the CLI down to shared."""
    edges: dict[str, set[str]] = {}
    for name, found in graph().items():
        for i in found:
            if not i.type_only and room(i.target) != room(name):
                edges.setdefault(room(name), set()).add(room(i.target))
    assert cycles(edges) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
