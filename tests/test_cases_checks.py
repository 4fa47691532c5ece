"""The smoke and nondeterminism checks through the engine: points, case reports, hidden cases kept secret."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from gate.checks.extract import Extract
from gate.checks.nondeterminism import Nondeterminism
from gate.checks.parse import Parse
from gate.checks.smoke import Smoke
from gate.engine import run_checks
from gate.policy.model import CaseSpec, Policy, RunLimits
from gate.sandbox.base import Sandbox
from gate.subject import SourceFile, Subject
from gate.verdict import Verdict
from tests.cases_support import IS_EVEN, NAIVE_IS_EVEN, case

CHECKS = (Extract(), Parse(), Smoke(), Nondeterminism())


def _hidden(spec: CaseSpec) -> CaseSpec:
    return replace(spec, hidden=True)


SEED_CASES = (
    case("call", "two", args=[2], expect=True),
    case("call", "three", args=[3], expect=False),
)
SEED_HIDDEN = (
    _hidden(case("call", "bool is not int", args=[True], error="TypeError")),
    _hidden(case("call", "None is not int", args=[None], error="TypeError")),
)


def _score(sandbox: Sandbox | None, code: str, cases: tuple[CaseSpec, ...] = SEED_CASES,
           hidden: tuple[CaseSpec, ...] = SEED_HIDDEN, policy: Policy | None = None) -> Verdict:
    subject = Subject(kind="reply", label="reply.md", reply=f"```python\n{code}```\n",
                      files=(SourceFile("solution.py", code, None, "extracted"),), cases=cases,
                      hidden_cases=hidden)
    return run_checks(subject, policy or Policy(), sandbox, checks=CHECKS)


def test_honest_is_even_scores_zero(sandbox: Sandbox) -> None:
    verdict = _score(sandbox, IS_EVEN)
    assert (verdict.total, verdict.accepted) == (0, True)
    assert [(c.index, c.name, c.hidden, c.status) for c in verdict.cases] == [
        (1, "two", False, "passed"), (2, "three", False, "passed"),
        (1, "hidden case 1", True, "passed"), (2, "hidden case 2", True, "passed")]
    assert dict(verdict.isolation)["zygote"] == "on"


def test_naive_is_even_fails_a_hidden_case_without_seeing_its_expectation(sandbox: Sandbox) -> None:
    verdict = _score(sandbox, NAIVE_IS_EVEN)
    assert verdict.total == 2
    [penalty] = verdict.penalties
    assert (penalty.check, penalty.points, penalty.case) == ("smoke", 2, 1)
    assert penalty.message == ("hidden case 1 failed: a wrong value (returned bool; a hidden case shows only the "
                               "type of what came back, so that its expected value stays secret)")
    failed = [c for c in verdict.cases if c.status == "failed"]
    assert [(c.name, c.detail) for c in failed] == [("hidden case 1", "returned bool")]
    text = verdict.to_json()
    assert "TypeError" not in text and "bool is not int" not in text


def test_a_public_failure_shows_expected_and_got(sandbox: Sandbox) -> None:
    verdict = _score(sandbox, "def is_even(n):\n    return 1\n", hidden=())
    assert [p.message for p in verdict.penalties] == [
        "case 1 (two) failed: expected bool True, got int 1",
        "case 2 (three) failed: expected bool False, got int 1"]
    assert verdict.total == 4


def test_an_infinite_loop_costs_timeout_points_not_smoke_points(sandbox: Sandbox) -> None:
    policy = Policy(limits=RunLimits(timeout=1.0, cpu=1.0))
    verdict = _score(sandbox, "def is_even(n):\n    while True:\n        pass\n", cases=SEED_CASES[:1],
                     hidden=(), policy=policy)
    [penalty] = verdict.penalties
    assert (penalty.check, penalty.points) == ("timeout", 4)
    assert penalty.message.startswith("case 1 (two) ran out of time (")  # how, once: (wall timeout), (cpu limit)
    assert penalty.message.count("ran out of time") == 1
    assert verdict.cases[0].status == "timeout"


@pytest.mark.parametrize("kind", ["call", "humaneval"])
def test_an_endless_loop_stopped_by_the_cpu_limit_is_a_timeout_too(sandbox: Sandbox, kind: str) -> None:
    # Which clock runs out first on an endless loop is a race; with a CPU limit far below the wall limit the
    # CPU limit always wins, and the case still reads as a timeout, not as a wrong answer.
    policy = Policy(limits=RunLimits(timeout=30.0, cpu=1.0))
    looping = "def is_even(n):\n    while True:\n        pass\n"
    spec = SEED_CASES[0] if kind == "call" else case(
        "humaneval", "check", prompt="", entry_point="is_even",
        test="def check(candidate):\n    assert candidate(2) is True\n")
    verdict = _score(sandbox, looping, cases=(spec,), hidden=(), policy=policy)
    [penalty] = verdict.penalties
    assert penalty.check == "timeout"
    assert verdict.cases[0].status == "timeout"
    assert "cpu limit" in verdict.cases[0].detail


def test_set_order_shows_up_as_nondeterminism_once(sandbox: Sandbox) -> None:
    words = [f"w{n}" for n in range(30)]
    cases = (case("call", "unique", args=[words], expect=sorted(set(words))),
             case("call", "again", args=[words[:20]], expect=sorted(set(words[:20]))))
    verdict = _score(sandbox, "def unique(xs):\n    return list(set(xs))\n", cases=cases, hidden=())
    checks = {p.check: p for p in verdict.penalties if p.check == "nondeterminism"}
    assert checks["nondeterminism"].points == 2
    assert "case 1 (unique), case 2 (again) gave different results on reruns with PYTHONHASHSEED 1, 2" \
        in checks["nondeterminism"].message
    assert [p.check for p in verdict.penalties].count("nondeterminism") == 1
    sorted_verdict = _score(sandbox, "def unique(xs):\n    return sorted(set(xs))\n", cases=cases, hidden=())
    assert sorted_verdict.total == 0


def test_nondeterministic_output_over_stdio(sandbox: Sandbox) -> None:
    code = "print(' '.join({'apple', 'pear', 'plum', 'fig', 'kiwi', 'lime', 'date'}))\n"
    cases = (case("stdio", "fruit", stdout_regex="apple"),)
    verdict = _score(sandbox, code, cases=cases, hidden=(), policy=Policy(runs=3))
    assert [p.check for p in verdict.penalties] == ["nondeterminism"]
    assert "PYTHONHASHSEED 1, 2, 3" in verdict.penalties[0].message


def test_without_a_sandbox_both_checks_are_skipped_with_a_reason() -> None:
    verdict = _score(None, IS_EVEN)
    reports = {r.name: (r.status, r.reason) for r in verdict.checks}
    assert reports["smoke"] == ("skipped", "code execution is off (no sandbox), so no case ran")
    assert reports["nondeterminism"][0] == "skipped"
    assert "no sandbox" in reports["nondeterminism"][1]


def test_no_cases_leaves_the_case_checks_out_never_passed(sandbox: Sandbox) -> None:
    # With nothing to run, smoke and nondeterminism are not in the verdict at all (a report that said them
    # passed would claim what no run showed).
    verdict = _score(sandbox, IS_EVEN, cases=(), hidden=())
    assert {r.name: r.status for r in verdict.checks} == {"extract": "passed", "parse": "passed"}
