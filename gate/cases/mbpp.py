"""`mbpp` cases: MBPP's format — `setup` code and `tests`, a list of assert statements on the candidate.

The function under test is the one name the asserts use that neither the setup, the asserts themselves nor the
builtins define (or, when there is none, the builtin name the first assert calls: the solution shadows it).
The asserts run in another process than the candidate (`pairs.py`) against a proxy of it. When the asserts or
the setup use more than one such name (MBPP 601 builds `Pair(...)` objects, 367 and 927 `Node` trees, of a
class the solution defines), no proxy can stand in for them, so that case runs in one process with weaker
isolation and says so.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gate.cases.base import CaseFields, CaseOutcome, Program, fingerprint
from gate.cases.pairs import TestFormat, run_tests
from gate.policy.keys import key
from gate.policy.model import CaseSpec
from gate.sandbox.base import Limits, Sandbox
from gate.syntax import parse_python


@dataclass(frozen=True, kw_only=True)
class MbppFields(CaseFields):
    """The fields of an mbpp case."""

    WHAT = "an mbpp case"
    SUMMARY = "mbpp"

    setup: str = key("", "code run before the tests", infers=True)
    tests: tuple[str, ...] = key(description="assert statements", min_items=1, infers=True)


class Mbpp:
    """An MBPP problem's asserts over the candidate's function."""

    name = "mbpp"
    fields = MbppFields
    format: TestFormat = "asserts"  # how the pair's lead runs its tests (pairs.TestFormat)

    def check(self, case: Mapping[str, Any]) -> tuple[str, str] | None:
        setup, tests = case.get("setup", ""), case["tests"]
        for key_name, code in (("setup", setup), *(("tests", test) for test in tests)):
            try:
                parse_python(code)
            except (SyntaxError, ValueError) as exc:
                return key_name, f"does not parse: {exc}"
        if not candidate_names(setup, tests):
            return "tests", "the asserts call no function the candidate could define"
        return None

    def run(self, case: CaseSpec, program: Program, sandbox: Sandbox, limits: Limits,
            hash_seed: int) -> CaseOutcome:
        if program.code is None:
            reason = "an mbpp case scores one reply or sample, not a tree"
            return CaseOutcome("error", reason, fingerprint("error", reason))
        setup, tests = str(case.get("setup", "")), [str(test) for test in case.get("tests")]
        names = candidate_names(setup, tests)
        request = {"format": self.format, "setup": setup, "tests": tests, "function": names[0],
                   "in_process": len(names) > 1}
        return run_tests(case, request, program.code, sandbox, limits, hash_seed, tests)


def candidate_names(setup: str, tests: list[str]) -> list[str]:
    """Names the asserts (then the setup) read that setup, the asserts and the builtins leave undefined, in
    order of first use: what the candidate must define. When that leaves nothing, the function under test
    shadows a builtin (MBPP 126 defines `sum`): the first name the first assert calls.
    """
    defined = set(dir(builtins)) | _bound(setup)
    for test in tests:
        defined |= _bound(test)
    names: list[str] = []
    for code in (*tests, setup):
        for node in ast.walk(parse_python(code)):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in defined \
                    and node.id not in names:
                names.append(node.id)
    if not names and tests:
        calls = [node.func.id for node in ast.walk(parse_python(tests[0]))
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)]
        names = calls[:1]
    return names


def _bound(code: str) -> set[str]:
    """Names that `code` binds: assignments, imports, definitions, loop and comprehension targets."""
    bound: set[str] = set()
    for node in ast.walk(parse_python(code)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return bound
