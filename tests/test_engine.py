"""The engine adds penalties up against the budget, skips checks whose prerequisites failed, and honours
advisory mode. The checks here are tiny real implementations of the Check protocol."""

from __future__ import annotations

from dataclasses import dataclass

from gate.checks.base import CheckContext, CheckResult
from gate.engine import score, score_running_cases
from gate.policy.model import CaseSpec, Policy
from gate.subject import SourceFile, Subject
from gate.verdict import Penalty, Verdict


@dataclass
class Charging:
    """A check that charges fixed points (or nothing)."""

    name: str
    points: int
    requires: tuple[str, ...] = ()

    def enabled(self, policy: Policy) -> bool:
        return True

    def run(self, ctx: CheckContext) -> CheckResult:
        if not self.points:
            return CheckResult()
        return CheckResult(penalties=(Penalty(self.name, self.points, f"{self.name} failed"),))


def subject(**kw: object) -> Subject:
    return Subject(kind="reply", label="reply.md", **kw)  # type: ignore[arg-type]


def test_total_within_budget_is_accepted() -> None:
    verdict = score(subject(), Policy(budget=3), checks=[Charging("extract", 0), Charging("smoke", 2)])
    assert (verdict.total, verdict.accepted) == (2, True)


def test_total_over_budget_is_blocked() -> None:
    verdict = score(subject(), Policy(budget=3), checks=[Charging("parse", 5)])
    assert (verdict.total, verdict.accepted) == (5, False)


def test_check_after_failed_prerequisite_is_skipped_with_reason() -> None:
    verdict = score(subject(), Policy(), checks=[Charging("parse", 5), Charging("imports", 3, requires=("parse",))])
    reports = {c.name: c for c in verdict.checks}
    assert reports["imports"].status == "skipped"
    assert reports["imports"].reason == "parse failed"
    assert verdict.total == 5


def test_skip_propagates_along_the_chain() -> None:
    checks = [Charging("extract", 5), Charging("parse", 0, ("extract",)), Charging("imports", 0, ("parse",))]
    reports = {c.name: c for c in score(subject(), Policy(), checks=checks).checks}
    assert reports["parse"].reason == "extract failed"
    assert reports["imports"].reason == "parse was skipped"


def test_advisory_mode_reports_but_never_blocks() -> None:
    verdict = score(subject(), Policy(mode="advisory"), checks=[Charging("parse", 5)])
    assert verdict.accepted and verdict.total == 5


def test_blocked_reason_blocks_whatever_the_score() -> None:
    verdict = score(subject(blocked_reasons=("edits the policy",)), Policy(), checks=[])
    assert not verdict.accepted and verdict.total == 0


def test_verdict_json_round_trips_and_validates() -> None:
    verdict = score(subject(), Policy(), checks=[Charging("parse", 5), Charging("imports", 0, ("parse",))])
    assert Verdict.from_dict(verdict.to_dict()) == verdict


def test_verdict_without_sandbox_says_code_was_not_run() -> None:
    verdict = score(subject(), Policy(), checks=[])
    assert dict(verdict.isolation) == {"code execution": "off: not run"}


def test_cases_run_in_a_sandbox_that_is_started_only_when_there_are_cases() -> None:
    files = (SourceFile("solution.py", "print(input())\n", status="extracted"),)
    echo = CaseSpec("stdio", "echo", (("stdin", "hi\n"), ("stdout", "hi")))
    without = score_running_cases(subject(files=files), Policy())
    assert dict(without.isolation) == {"code execution": "off: not run"}
    ran = score_running_cases(subject(files=files, cases=(echo,)), Policy())
    assert "code execution" not in dict(ran.isolation)
    assert [(c.name, c.status) for c in ran.cases] == [("echo", "passed")]
