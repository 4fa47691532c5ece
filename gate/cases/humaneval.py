"""`humaneval` cases: HumanEval's format — `prompt`, `test` (defining `check(candidate)`) and `entry_point`.

The candidate's module is the prompt followed by the code under score (a completion), or the code alone when
it already starts with the prompt. The test code runs in another process than the candidate (`pairs.py`), with
the prompt's own helpers (run from the trusted prompt, not from the completion) and a proxy for `entry_point`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gate.cases.base import CaseFields, CaseOutcome, Program, fingerprint
from gate.cases.pairs import TestFormat, run_tests
from gate.policy.keys import key
from gate.policy.model import CaseSpec
from gate.sandbox.base import Limits, Sandbox


@dataclass(frozen=True, kw_only=True)
class HumanEvalFields(CaseFields):
    """The fields of a humaneval case."""

    WHAT = "a humaneval case"
    SUMMARY = "humaneval"

    prompt: str = key(description="the problem's prompt: the start of the candidate's module", infers=True)
    test: str = key(description="defines check(candidate)", infers=True)
    entry_point: str = key(description="the function under test", pattern="^[A-Za-z_][A-Za-z0-9_]*$",
                           expected="a function name", infers=True)


class HumanEval:
    """A HumanEval problem's `check` over the candidate's `entry_point`."""

    name = "humaneval"
    fields = HumanEvalFields
    format: TestFormat = "check"  # how the pair's lead runs its tests (pairs.TestFormat)

    def check(self, case: Mapping[str, Any]) -> tuple[str, str] | None:
        for key_name in ("prompt", "test"):
            try:
                compile(case[key_name], key_name, "exec")
            except (SyntaxError, ValueError) as exc:
                return key_name, f"does not parse: {exc}"
        return None

    def run(self, case: CaseSpec, program: Program, sandbox: Sandbox, limits: Limits,
            hash_seed: int) -> CaseOutcome:
        if program.code is None:
            reason = "a humaneval case scores one reply or sample, not a tree"
            return CaseOutcome("error", reason, fingerprint("error", reason))
        prompt, test = str(case.get("prompt")), str(case.get("test"))
        module = program.code if program.code.startswith(prompt) else prompt + program.code
        request = {"format": self.format, "prompt": prompt, "test": test, "function": case.get("entry_point")}
        return run_tests(case, request, module, sandbox, limits, hash_seed, test.splitlines())
