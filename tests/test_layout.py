"""The map of the code holds: no import circle between modules of gate/, and every import goes down the layers
docs/layout.md lists (or is one of the imports up them that it names, each with why).

Every module is parsed with `ast`; an import inside a function counts as much as one at the top (it only runs
later). An import under `if TYPE_CHECKING:` does not: it never runs. The registries' `importlib.import_module` by
name (gate/checks/__init__.py) is not an import statement and is not seen here.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYOUT = ROOT / "docs" / "layout.md"
MAX_UP = 1  # imports up the layers docs/layout.md may name


@dataclass(frozen=True)
class Import:
    """One import of a gate module by another: where it is, and whether it runs only when a function does."""

    source: str
    target: str
    line: int
    in_function: bool

    def __str__(self) -> str:
        return f"{self.source}:{self.line} imports {self.target}" + (" (in a function)" if self.in_function else "")


def modules(root: Path) -> dict[str, Path]:
    """Every module of the `gate` package under `root`, by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for path in sorted((root / "gate").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


@functools.cache
def imports(root: Path) -> tuple[Import, ...]:
    """Every import of one gate module by another that runs (not type-only), resolved to the module it loads."""
    known = modules(root)
    found: list[Import] = []
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node, in_function in _statements(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            for target in _targets(node, package, known):
                if target != name:
                    found.append(Import(name, target, node.lineno, in_function))
    return tuple(found)


def _statements(tree: ast.AST, in_function: bool = False) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, in_function
        elif isinstance(node, ast.If) and _type_checking(node.test):
            for child in node.orelse:
                yield from _statements(ast.Module(body=[child], type_ignores=[]), in_function)
        else:
            yield from _statements(node, in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef))


def _type_checking(test: ast.expr) -> bool:
    """`if TYPE_CHECKING:` (typing's, or a module's own `TYPE_CHECKING = False`)."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _targets(node: ast.Import | ast.ImportFrom, package: str, known: dict[str, Path]) -> list[str]:
    """The gate modules an import statement loads: `from gate.x import y` is gate.x.y when that is a module."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            parts = package.split(".")[:len(package.split(".")) - node.level + 1]
            base = ".".join([*parts, *([base] if base else [])])
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
    targets = []
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name:
            targets.append(name)
    return list(dict.fromkeys(targets))


def cycles(found: tuple[Import, ...]) -> list[list[Import]]:
    """One circle of imports for each group of modules that import each other (Tarjan's strongly connected
    components), as the imports that close it, in order."""
    edges: dict[str, list[Import]] = {}
    for each in found:
        edges.setdefault(each.source, []).append(each)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def visit(node: str) -> None:  # (recursive: the gate's import graph is a few hundred modules deep at most)
        index[node] = low[node] = len(index)
        stack.append(node)
        for edge in edges.get(node, []):
            if edge.target not in index:
                visit(edge.target)
                low[node] = min(low[node], low[edge.target])
            elif edge.target in stack:
                low[node] = min(low[node], index[edge.target])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in list(edges):
        if node not in index:
            visit(node)
    return [_circle(min(group), group, edges) for group in groups]


def _circle(start: str, group: set[str], edges: dict[str, list[Import]]) -> list[Import]:
    """A shortest path of imports inside `group` from `start` back to it."""
    paths: dict[str, list[Import]] = {start: []}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for edge in edges.get(node, []):
                if edge.target == start:
                    return [*paths[node], edge]
                if edge.target in group and edge.target not in paths:
                    paths[edge.target] = [*paths[node], edge]
                    following.append(edge.target)
        frontier = following
    raise AssertionError(f"no circle through {start}")


def layers(text: str) -> list[tuple[str, ...]]:
    """docs/layout.md's layers, top first: each a row of the table under `## Layers`, its modules in backticks
    in the second column."""
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| layer")]
    return [tuple(re.findall(r"`(gate[\w.]*)`", row.split("|")[2])) for row in rows]


def allowed_up(text: str) -> list[tuple[str, str]]:
    """The imports up the layers docs/layout.md names: `- \\`a\\` imports \\`b\\`: why` under `### Imports up
    the layers`."""
    section = text.split("\n### Imports up the layers\n", 1)[1].split("\n#", 1)[0]
    return re.findall(r"^- `(gate[\w.]*)` imports `(gate[\w.]*)`:", section, re.M)


def layer_of(module: str, table: list[tuple[str, ...]]) -> int | None:
    """The layer of the longest name in the table that names `module` or a package holding it (`gate` names the
    package's own module only: a new package is in no layer until the table says where)."""
    best: tuple[int, int] | None = None
    for number, names in enumerate(table):
        for name in names:
            holds = module.startswith(name + ".") and name != "gate"
            if (module == name or holds) and (best is None or len(name) > best[1]):
                best = (number, len(name))
    return best[0] if best else None


def test_no_module_of_gate_imports_itself_back() -> None:
    found = cycles(imports(ROOT))
    assert not found, "import circles:\n" + "\n".join(" -> ".join(str(edge) for edge in circle) for circle in found)


def test_every_import_goes_down_the_layers_of_the_map() -> None:
    text = LAYOUT.read_text(encoding="utf-8")
    table, exceptions = layers(text), allowed_up(text)
    assert table, "docs/layout.md has no table of layers under `## Layers`"
    placed = {name: layer_of(name, table) for name in modules(ROOT)}
    unplaced = [name for name, layer in placed.items() if layer is None]
    assert not unplaced, f"modules in no layer of docs/layout.md: {', '.join(unplaced)}"
    number = {name: layer for name, layer in placed.items() if layer is not None}
    up = [edge for edge in imports(ROOT) if number[edge.target] < number[edge.source]]
    unexplained = [str(edge) for edge in up if (edge.source, edge.target) not in exceptions]
    assert not unexplained, "imports up the layers that docs/layout.md does not name:\n" + "\n".join(unexplained)
    assert len(exceptions) <= MAX_UP, f"docs/layout.md names {len(exceptions)} imports up the layers; at most {MAX_UP}"
    stale = [pair for pair in exceptions if pair not in {(edge.source, edge.target) for edge in up}]
    assert not stale, f"docs/layout.md names imports up the layers that are not there (any more): {stale}"


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    """A small package named gate: a circle through a function's import, and a type-only import that is none."""
    package = tmp_path / "gate"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "low.py").write_text("def f():\n    from gate.sub import high\n    return high\n")
    (package / "sub" / "high.py").write_text("from .. import low\nfrom gate.typed import T\n")
    (package / "typed.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from gate import low\n"
                                      "else:\n    import json\nT = int\n")
    return tmp_path


def test_a_circle_through_a_function_is_named_and_a_type_only_import_is_not_one(tree: Path) -> None:
    found = imports(tree)
    assert {(edge.source, edge.target, edge.in_function) for edge in found} == {
        ("gate.low", "gate.sub.high", True), ("gate.sub.high", "gate.low", False),
        ("gate.sub.high", "gate.typed", False)}
    [circle] = cycles(found)
    assert [str(edge) for edge in circle] == ["gate.low:2 imports gate.sub.high (in a function)",
                                              "gate.sub.high:1 imports gate.low"]


def test_the_layers_are_read_from_the_map_and_the_longest_name_decides() -> None:
    text = ("\n## Layers\n\n| layer | modules | what |\n|---|---|---|\n| 1 | `gate.sub.high` | top |\n"
            "| 2 | `gate.sub`, `gate.low` | the rest |\n\n### Imports up the layers\n\n- `gate.low` imports "
            "`gate.sub.high`: why\n\n## Next\n")
    table = layers(text)
    assert table == [("gate.sub.high",), ("gate.sub", "gate.low")]
    found = [layer_of(name, table) for name in ("gate.sub.high", "gate.sub.other", "gate", "gate.new")]
    assert found == [0, 1, None, None]
    assert layer_of("gate.new", [("gate",)]) is None and layer_of("gate", [("gate",)]) == 0
    assert allowed_up(text) == [("gate.low", "gate.sub.high")]
