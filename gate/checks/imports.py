"""The imports check: every import inside the allow-list and outside the deny-list, and no dynamic loader.

What counts as an import: `import a.b`, `from a import b` (which may name the submodule `a.b`), and
`__import__("a")` / `importlib.import_module("a")` with a constant name. Relative imports (`from . import x`)
name the candidate's own package and are not checked; `from __future__ import ...` is a compiler directive.

Dynamic loaders are `__import__`, `importlib.import_module`, `importlib.__import__`, `pkgutil.resolve_name` (it
imports the module a string names and returns any object of it), `eval`, `exec` and
`compile`, reached directly, under another name (`from importlib import import_module as load`, `f = eval`),
through `builtins.` / `__builtins__.`, or through `getattr(builtins, ...)`; any use of `__builtins__` itself
counts too, and so do `sys.modules` (it hands out any loaded module) and the attributes that reach the
interpreter's internals (`__subclasses__`, `__globals__`, `__loader__`). Only a `def` or `class` of the same
name shadows a loader: an assignment does not (`eval = eval` would otherwise hide one). This is a fast reject,
not a sandbox: names built at run time escape it.

A denied package denies its submodules (deny `os` catches `os.path`); an allow-list entry allows its
submodules. The task's `allowed_imports`, when given, is the allow-list (an empty list allows nothing);
the policy's deny-list applies either way. With `scope: added` only imports on lines the change adds count.
"""

from __future__ import annotations

import ast
import weakref

import msgspec

from gate.checks.base import Check, CheckContext, CheckResult, Product
from gate.checks.parse import tree_coverage
from gate.policy.keys import Charge
from gate.policy.model import DYNAMIC_LOADERS, Policy
from gate.subject import SourceFile
from gate.verdict import Location, Penalty, listing

_BUILTIN_PREFIXES = ("builtins.", "__builtins__.")
# `sys.modules` hands out any module already loaded (`os` always is), whatever the allow-list says;
# `pkgutil.resolve_name("unittest.mock:ANY")` imports what a string names and returns any object of it.
_LOADERS = frozenset({*DYNAMIC_LOADERS, "importlib.__import__", "pkgutil.resolve_name", "sys.modules"})
# Attributes that reach the interpreter's internals: the classic escape `().__class__.__base__.__subclasses__()`
# and a function's globals.
_INTERNALS = frozenset({"__subclasses__", "__globals__", "__builtins__", "__import__", "__loader__"})
_IMPORTING_LOADERS = frozenset({"__import__", "importlib.import_module", "importlib.__import__",
                                "pkgutil.resolve_name"})
# The names that a dotted name which reaches a loader starts with, once import aliases are resolved.
_LOADER_HEADS = frozenset({*(name.split(".")[0] for name in _LOADERS), "builtins", "__builtins__", "getattr"})


class Found(msgspec.Struct, frozen=True):
    """One import or dynamic loader as written: `module` is what it imports (None for eval and the like),
    `loader` the dynamic loader used (None for a plain import statement)."""

    line: int
    end_line: int
    text: str
    module: str | None = None
    submodules: tuple[str, ...] = ()
    loader: str | None = None


# The points this check charges: keys of the policy's `points:` (gate/policy/keys.py's `Charge`).
IMPORTS = Charge(
    "imports", 3,
    "a forbidden import or a dynamic loader (once)",
    per="once",
    catches="an import outside the allow-list (the task's `allowed_imports` when it has one) or inside the deny-list "
            "(deny `os` catches `os.path` and `from os import path`); a dynamic loader: `__import__`, "
            "`importlib.import_module`, `pkgutil.resolve_name`, `eval`, `exec`, `compile`, also through `builtins`, "
            "`__builtins__`, "
            "`getattr(builtins, ...)` or another name (`f = eval`), and `sys.modules` or "
            "`__subclasses__`/`__globals__`, which reach modules without importing them. Relative imports (`from . "
            "import x`) are the repository's own modules and never count. With `imports.scope: added` (the default) "
            "only imports on added lines count. The message lists the first ten offending imports with `path:line` "
            '("and N more"); the locations have every one, and so do the annotations up to 50 (the check run\'s '
            "summary lists the rest)")


class Imports(Check):
    """Imports against the allow- and deny-lists; dynamic loaders."""

    name = "imports"
    # Per file: a file that does not parse leaves the others to check (parse.tree_coverage).
    needs: tuple[Product, ...] = ("trees",)
    produces: tuple[Product, ...] = ()
    static = True
    charges: tuple[Charge, ...] = (IMPORTS,)

    def enabled(self, policy: Policy) -> bool:
        return True

    def run(self, ctx: CheckContext) -> CheckResult:
        skipped, not_read = tree_coverage(ctx)
        if skipped:
            return CheckResult(skipped=skipped)
        trees = ctx.analysis.trees or {}
        task = ctx.subject.task
        from_task = task is not None and task.allowed_imports is not None
        allow = ctx.policy.imports.allow
        if task is not None and task.allowed_imports is not None:
            allow = task.allowed_imports
        # An empty policy allow-list means "anything not denied"; a task's empty list means "nothing".
        allow_anything = not allow and not from_task
        offences: list[tuple[str, Location]] = []
        for source in ctx.files:
            tree = trees.get(source.path)
            if tree is None:
                continue
            for found in find_imports(tree, ctx.trees.walk(source.path, tree)):
                if not _counts(found, source, ctx.policy.imports.scope):
                    continue
                location = Location(source.path, found.line)
                reasons = _offences(found, allow, allow_anything, ctx.policy.imports.deny,
                                    ctx.policy.imports.dynamic)
                if reasons:
                    offences.append((f"{found.text} ({location}): {', '.join(reasons)}", location))
        if not offences:
            return CheckResult(reason=not_read)
        message = "imports outside the policy: " + listing([text for text, _ in offences])
        locations = tuple(dict.fromkeys(loc for _, loc in offences))
        return CheckResult(penalties=(Penalty(self.name, ctx.policy.points[IMPORTS], message, locations),),
                           reason=not_read)


def _counts(found: Found, source: SourceFile, scope: str) -> bool:
    """With scope `added`, only an import on a line the change adds counts (None: every line is new)."""
    if scope == "all" or source.added_lines is None:
        return True
    return any(n in source.added_lines for n in range(found.line, found.end_line + 1))


def _offences(found: Found, allow: tuple[str, ...], allow_anything: bool, deny: tuple[str, ...],
              dynamic: bool) -> list[str]:
    reasons: list[str] = []
    if found.loader and dynamic:
        reasons.append("dynamic loader")
    if found.module is not None:
        denied = [name for name in (found.module, *found.submodules) if under_any(name, deny)]
        if denied:
            reasons.append(f"{denied[0]} is in the deny-list")
        elif not allow_anything and not under_any(found.module, allow):
            reasons.append(f"{found.module} is not in the allow-list ({', '.join(allow) or 'empty'})")
    return reasons


def under_any(module: str, packages: tuple[str, ...]) -> bool:
    """Whether `module` is one of `packages` or a submodule of one."""
    return any(module == p or module.startswith(p + ".") for p in packages)


# What each tree imports, found once however many checks ask (imports, smoke's preloads, framework).
_FOUND: weakref.WeakKeyDictionary[ast.Module, tuple[Found, ...]] = weakref.WeakKeyDictionary()


def find_imports(tree: ast.Module, nodes: list[ast.AST]) -> tuple[Found, ...]:
    """Every import and dynamic loader in `tree`, in source order; `nodes` are all of the tree's nodes, in
    `ast.walk`'s order."""
    found = _FOUND.get(tree)
    if found is None:
        found = _FOUND[tree] = tuple(_find(tree, nodes))
    return found


def _find(tree: ast.Module, nodes: list[ast.AST]) -> list[Found]:
    scan = _Scan(nodes)
    found = list(scan.imports)
    if scan.may_load():  # most code names no loader at all: then the visit that resolves names is not needed
        finder = _Finder(scan.aliases, frozenset(scan.defined))
        finder.visit(tree)
        found += finder.found
    return sorted(found, key=lambda f: (f.line, f.text))


class _Scan:
    """One pass over a tree's nodes: the import statements, the local names that imports bind (`il` ->
    `importlib`), the names a `def` or `class` defines (those shadow a builtin loader of the same name), and
    the clues without which the tree holds no dynamic loader."""

    def __init__(self, nodes: list[ast.AST]) -> None:
        self.imports: list[Found] = []
        self.aliases: dict[str, str] = {}
        self.defined: set[str] = set()
        self.names: set[str] = set()
        self.internals = False  # an attribute in _INTERNALS, or the string "__builtins__"
        for node in nodes:
            if isinstance(node, ast.Name):
                self.names.add(node.id)
            elif isinstance(node, ast.Attribute):
                self.internals = self.internals or node.attr in _INTERNALS
            elif isinstance(node, ast.Constant):
                self.internals = self.internals or node.value == "__builtins__"
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.defined.add(node.name)
            elif isinstance(node, ast.Import):
                self._add_import(node)
            elif isinstance(node, ast.ImportFrom):
                self._add_import_from(node)

    def _add_import(self, node: ast.Import) -> None:
        self.imports.extend(_import(node))
        for alias in node.names:
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                head = alias.name.split(".")[0]
                self.aliases[head] = head

    def _add_import_from(self, node: ast.ImportFrom) -> None:
        self.imports.extend(_import_from(node))
        if node.level == 0 and node.module:
            for alias in node.names:
                self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def may_load(self) -> bool:
        """Whether the tree may hold a dynamic loader or reach the internals: a loader is named by a name
        (or an alias of one) in `_LOADER_HEADS`, and the rest by an attribute or a string."""
        if self.internals:
            return True
        heads = _LOADER_HEADS | {name for name, target in self.aliases.items()
                                 if target.split(".")[0] in _LOADER_HEADS}
        return not heads.isdisjoint(self.names)


def _found(node: ast.expr | ast.stmt, text: str, *, module: str | None = None,
           submodules: tuple[str, ...] = (), loader: str | None = None) -> Found:
    return Found(node.lineno, node.end_lineno or node.lineno, text, module, submodules, loader)


def _import(node: ast.Import) -> list[Found]:
    return [_found(node, f"import {alias.name}", module=alias.name) for alias in node.names]


def _import_from(node: ast.ImportFrom) -> list[Found]:
    if node.level or not node.module or node.module == "__future__":
        return []
    names = ", ".join(a.name for a in node.names)
    submodules = tuple(f"{node.module}.{a.name}" for a in node.names if a.name != "*")
    return [_found(node, f"from {node.module} import {names}", module=node.module, submodules=submodules)]


class _Finder(ast.NodeVisitor):
    """The dynamic loaders and the reaches into the interpreter's internals, by a visit that stops below a
    finding (`__builtins__.__import__` is one finding, not also `__builtins__`)."""

    def __init__(self, aliases: dict[str, str], defined: frozenset[str]) -> None:
        self.aliases = aliases
        self.defined = defined
        self.found: list[Found] = []

    def _add(self, node: ast.expr, text: str, *, module: str | None = None, loader: str | None = None) -> None:
        self.found.append(_found(node, text, module=module, loader=loader))

    def visit_Call(self, node: ast.Call) -> None:
        target = self._loader(node.func)
        if target in _IMPORTING_LOADERS and node.args and _constant_str(node.args[0]):
            name = _constant_str(node.args[0])
            module = name.partition(":")[0] if target == "pkgutil.resolve_name" else name
            self._add(node, f'{target}("{name}")', module=module, loader=target)
            self._visit_all(node.args[1:], node.keywords)
            return
        getattr_target = self._getattr_on_builtins(node)
        if getattr_target:
            self._add(node, f"getattr(builtins, {getattr_target})", loader=getattr_target)
            return
        self.generic_visit(node)

    def _visit_all(self, args: list[ast.expr], keywords: list[ast.keyword]) -> None:
        for child in [*args, *(k.value for k in keywords)]:
            self.visit(child)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        target = self._loader(node)
        if target:
            self._add(node, target, loader=target)
            return
        if node.attr in _INTERNALS:
            self._add(node, f".{node.attr}", loader=node.attr)
            return
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "__builtins__":
            self._add(node, "__builtins__", loader="__builtins__")
            return
        target = self._loader(node)
        if target and isinstance(node.ctx, ast.Load):
            self._add(node, target, loader=target)

    def visit_Constant(self, node: ast.Constant) -> None:
        # globals()["__builtins__"], vars()["__builtins__"]: the builtins module by another road.
        if node.value == "__builtins__":
            self._add(node, '"__builtins__"', loader="__builtins__")

    def _loader(self, node: ast.expr) -> str | None:
        """The dynamic loader `node` names, if any, after resolving import aliases and builtins prefixes."""
        dotted = _dotted(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        if head in self.aliases:
            dotted = self.aliases[head] + ("." + rest if rest else "")
        elif head in self.defined:
            return None
        for prefix in _BUILTIN_PREFIXES:
            if dotted.startswith(prefix):
                dotted = dotted[len(prefix):]
        return dotted if dotted in _LOADERS else None

    def _getattr_on_builtins(self, node: ast.Call) -> str | None:
        """`getattr(builtins, "eval")` -> "eval"; a name built at run time -> "<dynamic name>"."""
        if not (isinstance(node.func, ast.Name) and node.func.id == "getattr" and len(node.args) >= 2):
            return None
        owner = _dotted(node.args[0])
        if owner is None:
            return None
        owner = self.aliases.get(owner, owner)
        if owner not in ("builtins", "__builtins__"):
            return None
        name = _constant_str(node.args[1])
        if not name:
            return "<a name built at run time>"
        return f'"{name}"' if name in _LOADERS else None


def _dotted(node: ast.expr) -> str | None:
    """`a.b.c` for a chain of attribute accesses on a name, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _constant_str(node: ast.expr) -> str:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


CHECK = Imports()
