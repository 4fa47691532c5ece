"""The framework check: library code that reaches into the test framework is blocked for a human.

With `tests:`, the repository's tests run in one process with the code under test, so that code could make
failing tests pass: import pytest or its internals and patch them, skip or exit from inside a call, walk the
interpreter's modules, the callers' frames or every class of the process to find and rewrite what the tests
hold, run code no check reads through a dynamic loader (`exec` of a data file), or return objects whose
`__eq__` (or `__ne__`) answers without looking at what they are compared with, so that every `assert f(x) == y`
passes. Such code is rarely what a library change needs, and no run can tell a patched outcome from a real one,
so a change that adds it (outside the test paths) is blocked for a human, naming each place. So is a change that
adds a module named like one of the standard library's at the top of the tree or of an import root: the tests'
process has the tree first on its path, as `python -m pytest` does, so pytest itself (and the standard library)
would import it, whatever calls it. It costs no points.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from gate.checks.base import Check, CheckContext, CheckResult, Product
from gate.checks.imports import find_imports
from gate.policy.keys import Charge
from gate.policy.model import Policy
from gate.subject import SourceFile, Subject
from gate.suite.trust import is_test_code, standard_library_named
from gate.verdict import Location, listing

# Modules of the test framework (and `unittest`'s, which pytest runs too).
_MODULES = ("pytest", "_pytest", "pluggy", "unittest", "faulthandler")
# Attributes that reach the interpreter's state: its modules, the callers' frames, tracing, a hard exit, the
# descriptors of the process (the gate's result channel among them).
_ATTRIBUTES = {
    "sys": {"modules", "_getframe", "settrace", "setprofile", "_current_frames", "meta_path", "path_hooks"},
    "inspect": {"currentframe", "stack", "getouterframes", "trace"},
    "os": {"_exit", "write", "fdopen", "dup2", "dup", "closerange"},
    "gc": {"get_objects", "get_referrers", "get_referents"},
}
_FRAME_FIELDS = {"f_back", "f_globals", "f_locals", "f_builtins", "tb_frame", "gi_frame", "cr_frame", "ag_frame"}
# Attributes of any object that reach the rest of the process: every class it has (pytest's among them, to
# patch), a function's module namespace, builtins, code and closure cells.
_INTERNALS = {"__subclasses__", "__globals__", "__builtins__", "__code__", "__closure__"}


class Framework(Check):
    """Library code reaching into the test framework, when the policy runs the repository's tests."""

    name = "framework"
    needs: tuple[Product, ...] = ("trees",)  # per file, as imports
    produces: tuple[Product, ...] = ()
    static = True
    charges: tuple[Charge, ...] = ()  # it blocks for a human instead

    def enabled(self, policy: Policy) -> bool:
        """On when the policy, or one of its scopes, runs the repository's tests (`tests:`)."""
        return policy.has_tests

    def run(self, ctx: CheckContext) -> CheckResult:
        suites = [ctx.policy.tests, *(scope.tests for scope in ctx.policy.scopes)]
        tests = tuple(path for suite in suites if suite is not None for path in suite.paths)
        trees = ctx.analysis.trees or {}
        found: list[tuple[str, Location]] = []
        gated = {source.path for source in ctx.files}
        for source in ctx.files:
            tree = trees.get(source.path)
            if tree is not None and not is_test_code(source.path, tests):
                found += _findings(ctx, source, tree)
        # The tests' process imports every module of the tree, gated or not (`paths.exclude: [vendor/**]`).
        for source in ctx.subject.files:
            if source.path in gated or not source.path.endswith(".py") or is_test_code(source.path, tests):
                continue
            try:
                tree = ctx.trees.parse(source, _version(ctx.policy.python), ctx.policy)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue  # Python cannot import it either
            found += _findings(ctx, source, tree)
        # What the head's build wrote (gate/environment/project.py) runs in the tests' process as the tree does.
        for source in ctx.subject.generated:
            try:
                tree = ctx.trees.parse(source, _version(ctx.policy.python), ctx.policy)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue
            found += [(f"{text} (a file the head's build wrote)", where)
                      for text, where in _findings(ctx, source, tree)]
        shadows = _named_like_the_standard_library(ctx.subject, tests)
        if not found and not shadows:
            return CheckResult()
        reasons = [f"the change adds {path}, a module named like the standard library's `{name}`: the tests' "
                   "process has the tree first on its import path (as `python -m pytest` does), so pytest and the "
                   "standard library import it in place of their own; a human must review it"
                   for path, name in shadows]
        if found:
            reasons.insert(0, "the change's library code reaches into the test framework or the interpreter's "
                           "state (" + listing([text for text, _ in found]) + "); the repository's tests run in one "
                           "process with it, so a human must review it")
        return CheckResult(blocked_reasons=tuple(reasons), reason=f"{len(found) + len(shadows)} places")


def _findings(ctx: CheckContext, source: SourceFile, tree: ast.Module) -> list[tuple[str, Location]]:
    """The places the change's lines of `source` reach into the framework or the interpreter."""
    found: list[tuple[str, Location]] = []
    nodes = ctx.trees.walk(source.path, tree)
    modules = _module_names(nodes)
    for node in nodes:
        what = _reach(node, modules) or _blind_comparison(node)
        line = getattr(node, "lineno", None)
        if what and _added(node, source.added_lines):
            found.append((f"{what} at {source.path}:{line}", Location(source.path, line)))
    # What a dynamic loader runs (a data file's text, a module named at run time) is code no check reads, in
    # the tests' process: the imports check's points for it fit the default budget.
    for loader in find_imports(tree, nodes):
        lines = range(loader.line, loader.end_line + 1)
        seen = any(where.line == loader.line for _, where in found)
        if loader.loader and not seen and (source.added_lines is None
                                           or any(n in source.added_lines for n in lines)):
            found.append((f"the dynamic loader {loader.text} at {source.path}:{loader.line}",
                          Location(source.path, loader.line)))
    return found


def _named_like_the_standard_library(subject: Subject, tests: tuple[str, ...]) -> list[tuple[str, str]]:
    """(path, name) of each module the change adds at the top of the tree or of one of its import roots (`src`)
    that is named like a module of the standard library; test paths aside (the base's files run there)."""
    roots = tuple(dict.fromkeys(("", "src", *(root for root in subject.import_roots if not root.startswith("/")))))
    found = []
    for source in subject.files:
        name = standard_library_named(source.path, roots)
        if name and source.status in ("added", "renamed") and not is_test_code(source.path, tests):
            found.append((source.path, name))
    return found


def _version(python: str) -> tuple[int, int]:
    major, minor = python.split(".")[:2]
    return int(major), int(minor)


def _added(node: ast.AST, added: frozenset[int] | None) -> bool:
    """Whether the change adds any line of `node` (for a comparison method, of its body)."""
    if added is None:
        return True
    first = getattr(node, "lineno", None)
    last = getattr(node, "end_lineno", first)
    return first is not None and any(line in added for line in range(first, (last or first) + 1))


_COMPARISONS = ("__eq__", "__ne__")
_BLIND = "whose result does not depend on the other operand"


def _blind_comparison(node: ast.AST) -> str:
    """For an `__eq__`/`__ne__` whose result does not depend on the other operand, what it is in words, else "".

    A method or a lambda bound to the name is read: it depends on the other operand when a result it returns
    reads that operand (or a name computed from it) and is not true or false whatever the operand (`[other]`,
    `other is other`, `x or True`), or when it returns different results on paths that a test of the operand
    chooses. Any other binding of the name (`Cls.__eq__ = f`, an alias, `partialmethod`, the name as a string
    for `setattr` or `type()`) cannot be read here, so it is flagged as such."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in _COMPARISONS:
        return f"{node.name} {_BLIND}" if _blind(node.args, node.body) else ""
    if isinstance(node, ast.Constant) and node.value in _COMPARISONS:
        return (f"the name {node.value!r} as a string (setattr, type(), a namespace), a comparison this check "
                "cannot read")
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        name = next((n for target in targets for n in _bound(target) if n in _COMPARISONS), None)
        if name is None:
            return ""
        value = node.value
        if isinstance(value, ast.Lambda) and not isinstance(node, ast.AugAssign):
            body: list[ast.stmt] = [ast.Return(value.body, lineno=value.lineno, col_offset=value.col_offset)]
            return f"{name} {_BLIND}" if _blind(value.args, body) else ""
        return f"{name} bound to something other than a method, a comparison this check cannot read"
    return ""


def _bound(target: ast.AST) -> list[str]:
    """The names an assignment to `target` binds (a name, an attribute's name, the items of a tuple)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Attribute):
        return [target.attr]
    if isinstance(target, ast.Tuple | ast.List):
        return [name for item in target.elts for name in _bound(item)]
    if isinstance(target, ast.Starred):
        return _bound(target.value)
    return []


def _blind(args: ast.arguments, body: list[ast.stmt]) -> bool:
    """Whether a comparison with these parameters and this body returns what the other operand cannot change."""
    params = [arg.arg for arg in (*args.posonlyargs, *args.args)]
    others = {*params[1:2], *(arg.arg for arg in (args.vararg, args.kwarg) if arg is not None)}
    if not others:
        return False  # it cannot be called with the other operand: the comparison raises
    tainted = _tainted(body, others)
    # `NotImplemented` hands the comparison to the other operand, then to identity: never equal to anything.
    found = [(value, under) for value, under in _returns(body, tainted, False)
             if not (isinstance(value, ast.Name) and value.id == "NotImplemented")]
    if not found:
        return False
    if any(_truth(value) is None and _reads(value, tainted) for value, _ in found if value is not None):
        return False
    outcomes = {_outcome(value) for value, _ in found}
    return len(outcomes) < 2 or not any(under for _, under in found)


def _tainted(body: list[ast.stmt], others: set[str]) -> set[str]:
    """The other operand's names and every local name computed from them."""
    tainted = set(others)
    while True:
        grown = set(tainted)
        for statement in body:
            for node in ast.walk(statement):
                if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
                    sources: list[ast.AST | None] = [node.value]
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
                    sources, targets = [node.iter], [node.target]
                elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                    sources, targets = [node.context_expr], [node.optional_vars]
                else:
                    continue
                if any(source is not None and _reads(source, grown) for source in sources):
                    grown.update(name.id for target in targets for name in ast.walk(target)
                                 if isinstance(name, ast.Name))
        if grown == tainted:
            return tainted
        tainted = grown


def _reads(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(item, ast.Name) and item.id in names and isinstance(item.ctx, ast.Load)
               for item in ast.walk(node))


def _returns(statements: list[ast.stmt], tainted: set[str], under: bool
             ) -> Iterator[tuple[ast.expr | None, bool]]:
    """Each value the statements return (None for a bare `return`), and whether a test of the other operand
    (an `if`, a loop, a `match`, a `with`, an exception it raised) decides that path."""
    for statement in statements:
        if isinstance(statement, ast.Return):
            yield statement.value, under
            continue
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue  # its returns are its own
        header: list[ast.AST] = [getattr(statement, field) for field in ("test", "iter", "subject")
                                 if isinstance(getattr(statement, field, None), ast.AST)]
        header += [item.context_expr for item in getattr(statement, "items", ())]
        inner = under or any(_reads(part, tainted) for part in header)
        if isinstance(statement, ast.Try | ast.TryStar):
            risky = inner or any(_reads(part, tainted) for part in statement.body)
            yield from _returns(statement.body, tainted, inner)
            for handler in statement.handlers:
                yield from _returns(handler.body, tainted, risky)
            yield from _returns([*statement.orelse, *statement.finalbody], tainted, risky)
        elif isinstance(statement, ast.Match):
            for case in statement.cases:
                yield from _returns(case.body, tainted, inner)
        else:
            for field in ("body", "orelse"):
                block = getattr(statement, field, None)
                if isinstance(block, list):
                    yield from _returns(block, tainted, inner)


def _outcome(value: ast.expr | None) -> object:
    """What a returned value amounts to for `assert`: its truth when the code fixes it, else its text."""
    truth = _truth(value)
    return ast.dump(value) if truth is None and value is not None else truth


def _truth(value: ast.expr | None) -> bool | None:
    """The truth of `value` whatever the names in it hold, or None when they decide it."""
    if value is None:
        return False
    if isinstance(value, ast.Constant):
        return bool(value.value)
    if isinstance(value, ast.List | ast.Tuple | ast.Set):
        return bool(value.elts) if not any(isinstance(e, ast.Starred) for e in value.elts) else None
    if isinstance(value, ast.Dict):
        return True if value.keys else None
    if isinstance(value, ast.Lambda):
        return True
    if isinstance(value, ast.NamedExpr):
        return _truth(value.value)
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
        inner = _truth(value.operand)
        return None if inner is None else not inner
    if isinstance(value, ast.BoolOp):
        truths = [_truth(item) for item in value.values]
        decisive = isinstance(value.op, ast.Or)  # `x or True` is true, `x and False` false
        if decisive in truths:
            return decisive
        return None if None in truths else not decisive
    if isinstance(value, ast.IfExp):
        body, orelse = _truth(value.body), _truth(value.orelse)
        return body if body == orelse else None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "bool" \
            and len(value.args) == 1:
        return _truth(value.args[0])
    if isinstance(value, ast.Compare) and len({ast.dump(item) for item in (value.left, *value.comparators)}) == 1:
        # `other is other`, `x == x`: the same on both sides
        same = {type(op) for op in value.ops}
        if same <= {ast.Is, ast.Eq, ast.LtE, ast.GtE}:
            return True
        if same <= {ast.IsNot, ast.NotEq, ast.Lt, ast.Gt}:
            return False
    return None


def _module_names(nodes: list[ast.AST]) -> dict[str, str]:
    """The names the file binds to the modules whose state `_ATTRIBUTES` lists (`import sys as s`: s -> sys)."""
    names = {module: module for module in _ATTRIBUTES}
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in _ATTRIBUTES:
                    names[alias.asname or alias.name] = alias.name
    return names


def _reach(node: ast.AST, modules: dict[str, str]) -> str:
    """What `node` reaches, in words, or "". `modules` maps the file's names for sys, os, gc and inspect."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names if alias.name.split(".")[0] in _MODULES]
        return f"import {names[0]}" if names else ""
    if isinstance(node, ast.ImportFrom) and not node.level and node.module:
        if node.module.split(".")[0] in _MODULES:
            return f"from {node.module} import"
        wanted = _ATTRIBUTES.get(node.module, set())
        names = [alias.name for alias in node.names if alias.name in wanted]
        return f"from {node.module} import {names[0]}" if names else ""
    if isinstance(node, ast.Attribute):
        module = modules.get(node.value.id) if isinstance(node.value, ast.Name) else None
        if module and (node.attr in _ATTRIBUTES[module] or node.attr == "__dict__"):
            return f"{module}.{node.attr}"
        if node.attr in _FRAME_FIELDS:
            return f"a frame's .{node.attr}"
        if node.attr in _INTERNALS:
            return f".{node.attr}"
    if isinstance(node, ast.Name) and node.id == "__builtins__":
        return "__builtins__"
    # A conftest that imports the module (`from pkg.testing import *`, shared fixtures) makes its `pytest_*`
    # names the conftest's own: hooks that see and rewrite every report, `pytest_plugins` that loads a module.
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("pytest_"):
        return f"the pytest hook {node.name}"
    if isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        hooks = [name for target in targets for name in _bound(target) if name.startswith("pytest_")]
        if hooks:
            return f"the pytest name {hooks[0]}"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("vars", "getattr") \
            and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in modules:
        # `vars(sys)["modules"]`, `getattr(sys, name)`: the module's state by a name the check cannot read
        # (a constant name it can: `getattr(sys, "version_info")` is fine).
        module = modules[node.args[0].id]
        name = node.args[1] if node.func.id == "getattr" and len(node.args) > 1 else None
        if not (isinstance(name, ast.Constant) and name.value not in _ATTRIBUTES[module]):
            return f"{node.func.id}({module}, ...)"
    return ""


CHECK = Framework()
