"""Whether the policy's cases name what the base has: each `function: "pkg.mod:name"` a module of the base's
tree that defines `name`, each `module: "pkg.mod"` a module of the tree (or of the standard library).

A case that names what the base lacks is the policy's mistake, not the change's: it would fail on every head
and charge each one. `gate policy check --repo DIR` and every range or PR (exit 2, naming the case) say so.
A module whose names cannot be read from its text (it does not parse, it defines `__getattr__` or imports
`*`) is taken as having them.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Sequence

from gate.policy.model import CaseSpec

Reader = Callable[[str], str | None]


def unresolved(cases: Sequence[CaseSpec], read: Reader, roots: Sequence[str], where: str = "cases"
               ) -> list[tuple[str, str]]:
    """(key, why) for each case of `cases` (under the key `where`) whose `function:` or `module:` the tree
    read through `read` lacks; modules are looked for under each import root of `roots` ("" is the tree's
    root)."""
    found = []
    for index, case in enumerate(cases):
        named = case.get("function")
        if isinstance(named, str) and ":" in named:
            module, _, name = named.partition(":")
            why = _missing(module, name, read, roots)
            if why:
                found.append((f"{where}[{index}].function", f"{named}: {why}"))
        module = case.get("module")
        if isinstance(module, str):
            why = _missing(module, None, read, roots)
            if why:
                found.append((f"{where}[{index}].module", f"{module}: {why}"))
    return found


def _missing(module: str, name: str | None, read: Reader, roots: Sequence[str]) -> str:
    """Why `module` (and `name` in it) cannot be found, or ""."""
    stem = module.replace(".", "/")
    for root in roots:
        prefix = f"{root.rstrip('/')}/" if root else ""
        for path in (f"{prefix}{stem}.py", f"{prefix}{stem}/__init__.py"):
            text = read(path)
            if text is not None:
                if name is None or _defines(text, name):
                    return ""
                return f"{path} defines no {name}"
    if module.split(".")[0] in sys.stdlib_module_names:
        return ""
    looked = ", ".join(f"{root or '.'}/" for root in roots)
    return f"no module {module} in the tree (looked under {looked})"


def _defines(text: str, name: str) -> bool:
    """Whether the module's top level binds `name` (in any branch of an `if` or `try` too), or may: it does
    not parse, defines `__getattr__` or imports `*`."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    return _binds(tree.body, name)


def _binds(body: list[ast.stmt], name: str) -> bool:
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name in (name, "__getattr__"):
                return True
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t)):
                return True
        elif isinstance(node, ast.Import | ast.ImportFrom):
            if any(alias.name == "*" or (alias.asname or alias.name).split(".")[0] == name for alias in node.names):
                return True
        elif isinstance(node, ast.If | ast.Try | ast.With | ast.For | ast.While):
            branches = [node.body, getattr(node, "orelse", []), getattr(node, "finalbody", []),
                        *(handler.body for handler in getattr(node, "handlers", []))]
            if any(_binds(branch, name) for branch in branches):
                return True
    return False
