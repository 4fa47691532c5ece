"""The framework check: library code that reaches into the test framework is blocked for a human.

With `tests:`, the repository's tests run in one process with the code under test, so that code could make
failing tests pass: import pytest or its internals and patch them, skip or exit from inside a call, walk the
interpreter's modules or the callers' frames to find and rewrite what the tests hold, or return objects whose
`__eq__` (or `__ne__`) answers without looking at what they are compared with, so that every `assert f(x) == y`
passes. Such code is rarely what a library change needs, and no run can tell a patched outcome from a real one,
so a change that adds it (outside the test paths) is blocked for a human, naming each place. It costs no
points.
"""

from __future__ import annotations

import ast
from pathlib import PurePosixPath

from gate.checks.base import CheckContext, CheckResult, Product
from gate.policy.model import Policy
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
_FRAME_FIELDS = {"f_back", "f_globals", "f_locals", "f_builtins", "tb_frame", "gi_frame", "cr_frame"}


class Framework:
    """Library code reaching into the test framework, when the policy runs the repository's tests."""

    name = "framework"
    requires: tuple[str, ...] = ()  # per file, as imports
    needs: tuple[Product, ...] = ("trees",)
    produces: tuple[Product, ...] = ()
    static = True

    def enabled(self, policy: Policy) -> bool:
        """On when the policy runs the repository's tests (`tests:`)."""
        return policy.tests is not None

    def run(self, ctx: CheckContext) -> CheckResult:
        spec = ctx.policy.tests
        assert spec is not None  # enabled
        trees = ctx.analysis.trees or {}
        found: list[tuple[str, Location]] = []
        for source in ctx.files:
            tree = trees.get(source.path)
            if tree is None or _is_test_code(source.path, spec.paths):
                continue
            for node in ctx.trees.walk(source.path, tree):
                what = _reach(node) or _blind_comparison(node)
                line = getattr(node, "lineno", None)
                if what and _added(node, source.added_lines):
                    found.append((f"{what} at {source.path}:{line}", Location(source.path, line)))
        if not found:
            return CheckResult()
        reason = ("the change's library code reaches into the test framework or the interpreter's state ("
                  + listing([text for text, _ in found]) + "); the repository's tests run in one process with "
                  "it, so a human must review it")
        return CheckResult(blocked_reasons=(reason,), reason=f"{len(found)} places")


def _is_test_code(path: str, tests: tuple[str, ...]) -> bool:
    return (PurePosixPath(path).name == "conftest.py"
            or any(path == p or path.startswith(p.rstrip("/") + "/") for p in tests))


def _added(node: ast.AST, added: frozenset[int] | None) -> bool:
    """Whether the change adds `node`'s line or, for a comparison method, any line of its body."""
    if added is None:
        return True
    first = getattr(node, "lineno", None)
    last = getattr(node, "end_lineno", first) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef
                                                            | ast.Assign) else first
    return first is not None and any(line in added for line in range(first, (last or first) + 1))


_COMPARISONS = ("__eq__", "__ne__")


def _blind_comparison(node: ast.AST) -> str:
    """For an `__eq__`/`__ne__` (a method or a lambda bound to the name) whose result does not depend on the
    other operand, what it is in words, else "". It does not when the body never reads the other operand, or
    returns only constants."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in _COMPARISONS:
        name, args, body = node.name, node.args, list[ast.AST](node.body)
        results = [item.value for statement in body for item in ast.walk(statement)
                   if isinstance(item, ast.Return)]
    elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda) and any(
            isinstance(target, ast.Name) and target.id in _COMPARISONS for target in node.targets):
        name = next(t.id for t in node.targets if isinstance(t, ast.Name) and t.id in _COMPARISONS)
        args, body, results = node.value.args, [node.value.body], [node.value.body]
    else:
        return ""
    params = [arg.arg for arg in (*args.posonlyargs, *args.args)]
    if len(params) < 2:
        return ""
    other = params[1]
    reads = any(isinstance(item, ast.Name) and item.id == other for statement in body for item in ast.walk(statement))
    constant = bool(results) and all(value is None or isinstance(value, ast.Constant) for value in results)
    if reads and not constant:
        return ""
    return f"{name} whose result does not depend on the other operand"


def _reach(node: ast.AST) -> str:
    """What `node` reaches, in words, or ""."""
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
        if isinstance(node.value, ast.Name) and node.attr in _ATTRIBUTES.get(node.value.id, set()):
            return f"{node.value.id}.{node.attr}"
        if node.attr in _FRAME_FIELDS:
            return f"a frame's .{node.attr}"
    return ""


CHECK = Framework()
