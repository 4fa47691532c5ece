"""Whether the policy's cases name what the base has: each `function: "pkg.mod:name"` a module of the base's
tree that defines `name`, each `module: "pkg.mod"` a module of the tree (or of the standard library).

A case that names what the base lacks is the policy's mistake, not the change's: it would fail on every head
and charge each one. `gate policy check --repo DIR` and every range or PR (exit 2, naming the case) say so.
A module whose names cannot be read from its text (it does not parse, it defines `__getattr__` or imports
`*`, or it is a change's own module too long to parse in the gate's process: gate/syntax.py) is taken as
having them.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Sequence

from gate.policy.model import CaseSpec
from gate.syntax import IN_PROCESS_CHARS, parse_python

Reader = Callable[[str], str | None]
Parse = Callable[[str, str], ast.Module]  # (path, text) -> the module's tree; raises what ast.parse raises
ANY = "*"  # among a module's names: it may bind any name (no name is "*")


def unresolved(cases: Sequence[CaseSpec], read: Reader, roots: Sequence[str], where: str = "cases",
               changed: Parse | None = None) -> list[tuple[str, str]]:
    """(key, why) for each case of `cases` (under the key `where`) whose `function:` or `module:` the tree
    read through `read` lacks; modules are looked for under each import root of `roots` ("" is the tree's
    root). Each module is read and parsed once, however many cases name it; a changed tree's (a head's: its
    `changed` parses, so that the checks reuse the trees) only when it is short enough to parse in the gate's
    process."""
    found = []
    known: dict[tuple[str, str | None], str] = {}
    names = _Names(read, IN_PROCESS_CHARS if changed else None, changed or _parse)
    for index, case in enumerate(cases):
        for field in ("function", "module"):
            named = case.get(field)
            if not isinstance(named, str) or (field == "function" and ":" not in named):
                continue
            module, _, name = named.partition(":") if field == "function" else (named, "", None)
            if (module, name) not in known:
                known[module, name] = _missing(module, name, names, roots)
            if known[module, name]:
                found.append((f"{where}[{index}].{field}", f"{named}: {known[module, name]}"))
    return found


class _Names:
    """The names each module of a tree binds at its top level, read and parsed once per path."""

    def __init__(self, read: Reader, longest: int | None, parse: Parse) -> None:
        self._read = read
        self._longest = longest  # the most characters parsed (None: any)
        self._parse = parse
        self._found: dict[str, frozenset[str] | None] = {}

    def of(self, path: str) -> frozenset[str] | None:
        """The names `path` binds (holding ANY when it may bind any), or None when the tree has no such file."""
        if path not in self._found:
            text = self._read(path)
            if text is None:
                self._found[path] = None
            elif self._longest is not None and len(text) > self._longest:
                self._found[path] = frozenset({ANY})
            else:
                self._found[path] = _bound(path, text, self._parse)
        return self._found[path]


def _missing(module: str, name: str | None, names: _Names, roots: Sequence[str]) -> str:
    """Why `module` (and `name` in it) cannot be found, or ""."""
    stem = module.replace(".", "/")
    for root in roots:
        prefix = f"{root.rstrip('/')}/" if root else ""
        for path in (f"{prefix}{stem}.py", f"{prefix}{stem}/__init__.py"):
            bound = names.of(path)
            if bound is not None:
                if name is None or name in bound or ANY in bound:
                    return ""
                return f"{path} defines no {name}"
    if module.split(".")[0] in sys.stdlib_module_names:
        return ""
    looked = ", ".join(f"{root or '.'}/" for root in roots)
    return f"no module {module} in the tree (looked under {looked})"


def _parse(path: str, text: str) -> ast.Module:
    return parse_python(text, filename=path)


def _bound(path: str, text: str, parse: Parse) -> frozenset[str]:
    """The names the module's top level binds (in any branch of an `if` or `try` too), with ANY when it may
    bind any: it does not parse, defines `__getattr__` or imports `*`."""
    try:
        tree = parse(path, text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset({ANY})
    found: set[str] = set()
    return frozenset(found) if _bind(tree.body, found) else frozenset({ANY})


def _bind(body: list[ast.stmt], found: set[str]) -> bool:
    """Add the names `body` binds to `found`; False when it may bind any."""
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == "__getattr__":
                return False
            found.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            if any(alias.name == "*" for alias in node.names):
                return False
            found.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.If | ast.Try | ast.With | ast.For | ast.While):
            branches = [node.body, getattr(node, "orelse", []), getattr(node, "finalbody", []),
                        *(handler.body for handler in getattr(node, "handlers", []))]
            if not all(_bind(branch, found) for branch in branches):
                return False
    return True
