"""`humaneval` cases: HumanEval's format — `prompt`, `test` (defining `check(candidate)`) and `entry_point`.

The candidate's module is the prompt followed by the code under score (a completion), or the code alone when
it already starts with the prompt. The test code runs in another process than the candidate (`pairs.py`), with
the prompt's own helpers (run from the trusted prompt, not from the completion) and a proxy for `entry_point`.
"""

from __future__ import annotations

from gate.cases.base import CaseOutcome, Program
from gate.cases.pairs import run_tests
from gate.cases.running import check_fields, fingerprint, require_type
from gate.errors import BadInput
from gate.policy.model import CaseSpec
from gate.sandbox.base import Limits, Sandbox

FIELDS = {"prompt", "test", "entry_point"}


class HumanEval:
    """A HumanEval problem's `check` over the candidate's `entry_point`."""

    name = "humaneval"

    def validate(self, case: CaseSpec, where: str) -> None:
        check_fields(case, where, FIELDS)
        for key, what in (("prompt", "the problem's prompt"), ("test", "test code defining check(candidate)"),
                          ("entry_point", "the function's name")):
            require_type(case, where, key, (str,), what, required=True)
        for key in ("prompt", "test"):
            try:
                compile(case.get(key), key, "exec")
            except (SyntaxError, ValueError) as exc:
                raise BadInput(f"does not parse: {exc}", file=where, key=key) from None

    def run(self, case: CaseSpec, program: Program, sandbox: Sandbox, limits: Limits,
            hash_seed: int) -> CaseOutcome:
        if program.code is None:
            reason = "a humaneval case scores one reply or sample, not a tree"
            return CaseOutcome("error", reason, fingerprint("error", reason))
        prompt, test = str(case.get("prompt")), str(case.get("test"))
        module = program.code if program.code.startswith(prompt) else prompt + program.code
        request = {"kind": "humaneval", "prompt": prompt, "test": test,
                   "entry_point": case.get("entry_point")}
        return run_tests(case, request, module, sandbox, limits, hash_seed, test.splitlines())
