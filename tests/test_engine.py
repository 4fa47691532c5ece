"""The engine adds penalties up against the budget, skips checks whose prerequisites failed, and honours
advisory mode. The checks here are tiny real implementations of the Check protocol."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import get_args

import pytest

import gate
from gate.checks import all_checks, static_names
from gate.checks.base import Analysis, Check, CheckContext, CheckResult, Product
from gate.engine import run_checks, run_sandboxed
from gate.policy.keys import Charge
from gate.policy.model import CaseSpec, Points, Policy
from gate.subject import SourceFile, Subject
from gate.verdict import Penalty, Verdict


@dataclass
class Charging(Check):
    """A check that charges fixed points (or nothing); one that passes makes what it declares it produces."""

    name: str
    points: int
    needs: tuple[Product, ...] = ()
    produces: tuple[Product, ...] = ()
    static: bool = True
    charges: tuple[Charge, ...] = ()

    def enabled(self, policy: Policy) -> bool:
        return True

    def run(self, ctx: CheckContext) -> CheckResult:
        if not self.points:
            return CheckResult(made=Analysis(**dict.fromkeys(self.produces, ())))  # type: ignore[arg-type]
        return CheckResult(penalties=(Penalty(self.name, self.points, f"{self.name} failed"),))


def subject(**kw: object) -> Subject:
    return Subject(kind="reply", label="reply.md", **kw)  # type: ignore[arg-type]


def test_total_within_budget_is_accepted() -> None:
    verdict = run_checks(subject(), Policy(budget=3), checks=[Charging("extract", 0), Charging("smoke", 2)])
    assert (verdict.total, verdict.accepted) == (2, True)


def test_total_over_budget_is_blocked() -> None:
    verdict = run_checks(subject(), Policy(budget=3), checks=[Charging("parse", 5)])
    assert (verdict.total, verdict.accepted) == (5, False)


def test_a_check_whose_producer_failed_is_skipped_with_reason() -> None:
    checks = [Charging("parse", 5, produces=("code",)), Charging("judge", 3, needs=("code",))]
    verdict = run_checks(subject(), Policy(), checks=checks)
    reports = {c.name: c for c in verdict.checks}
    assert reports["judge"].status == "skipped"
    assert reports["judge"].reason == "parse failed"
    assert verdict.total == 5


def test_the_skip_names_the_first_check_that_failed_on_the_way() -> None:
    checks = [Charging("extract", 5, produces=("files",)), Charging("parse", 0, ("files",), ("trees", "code")),
              Charging("imports", 0, ("trees",)), Charging("smoke", 0, ("code",))]
    reports = {c.name: c for c in run_checks(subject(), Policy(), checks=checks).checks}
    assert [reports[name].reason for name in ("parse", "imports", "smoke")] == ["extract failed"] * 3
    passing = [Charging("extract", 0, produces=("files",)), Charging("parse", 0, ("files",), ("trees",)),
               Charging("smoke", 0, ("code",))]
    reports = {c.name: c for c in run_checks(subject(), Policy(), checks=passing).checks}
    assert reports["smoke"].reason == "no code to use (no check that ran produced code)"


def test_advisory_mode_reports_but_never_blocks() -> None:
    verdict = run_checks(subject(), Policy(mode="advisory"), checks=[Charging("parse", 5)])
    assert verdict.accepted and verdict.total == 5


def test_blocked_reason_blocks_whatever_the_score() -> None:
    verdict = run_checks(subject(blocked_reasons=("edits the policy",)), Policy(), checks=[])
    assert not verdict.accepted and verdict.total == 0


def test_verdict_json_round_trips_and_validates() -> None:
    checks = [Charging("parse", 5, produces=("trees",)), Charging("imports", 0, ("trees",))]
    verdict = run_checks(subject(), Policy(), checks=checks)
    assert Verdict.from_dict(verdict.to_dict()) == verdict


def test_verdict_without_sandbox_says_code_was_not_run() -> None:
    verdict = run_checks(subject(), Policy(), checks=[])
    assert dict(verdict.isolation) == {"code execution": "off: not run"}


def test_cases_run_in_a_sandbox_that_is_started_only_when_there_are_cases() -> None:
    files = (SourceFile("solution.py", "print(input())\n", status="extracted"),)
    echo = CaseSpec("stdio", "echo", (("stdin", "hi\n"), ("stdout", "hi")))
    without = run_sandboxed(subject(files=files), Policy())
    assert dict(without.isolation) == {"code execution": "off: not run"}
    ran = run_sandboxed(subject(files=files, cases=(echo,)), Policy())
    assert "code execution" not in dict(ran.isolation)
    assert [(c.name, c.status) for c in ran.cases] == [("echo", "passed")]


@dataclass
class Producing(Check):
    """A check that hands `made` to the later checks, having declared `produces`."""

    name: str
    made: Analysis
    produces: tuple[Product, ...]
    needs: tuple[Product, ...] = ()
    static: bool = True
    charges: tuple[Charge, ...] = ()
    seen: list[Analysis] = field(default_factory=list)

    def enabled(self, policy: Policy) -> bool:
        return True

    def run(self, ctx: CheckContext) -> CheckResult:
        self.seen.append(ctx.analysis)
        return CheckResult(made=self.made)


def test_what_a_check_produces_reaches_the_later_checks_and_never_the_subject() -> None:
    solution = SourceFile("solution.py", "x = 1\n", status="extracted")
    first = Producing("extract", Analysis(files=(solution,)), produces=("files",))
    second = Producing("parse", Analysis(), produces=(), needs=("files",))
    reply = subject(reply="```python\nx = 1\n```\n")
    run_checks(reply, Policy(), checks=[first, second])
    assert second.seen[0].files == (solution,)
    assert reply.files == ()


def test_a_check_that_produces_what_it_did_not_declare_is_a_bug() -> None:
    sneaky = Producing("extract", Analysis(runs=()), produces=("files",))
    with pytest.raises(RuntimeError, match="produced runs without declaring it"):
        run_checks(subject(), Policy(), checks=[sneaky])


def test_a_check_whose_needs_were_not_produced_is_skipped_with_the_producers_reason() -> None:
    files = (SourceFile("solution.py", "print(1)\n", status="extracted"),)
    echo = CaseSpec("stdio", "echo", (("stdin", "hi\n"), ("stdout", "hi")))
    verdict = run_checks(subject(files=files), Policy(cases=(echo,)))  # (no sandbox: no case runs)
    reports = {c.name: c for c in verdict.checks}
    assert reports["smoke"].status == "skipped"
    assert reports["nondeterminism"].status == "skipped"
    assert reports["nondeterminism"].reason == f"no runs to use ({reports['smoke'].reason})"


def test_checks_with_nothing_to_do_are_left_out_as_checks_the_policy_does_not_turn_on() -> None:
    # No case anywhere (a tests-only policy): smoke and nondeterminism have nothing to do, and no report speaks
    # of them; nor of the judge, which the policy does not turn on.
    files = (SourceFile("solution.py", "print(1)\n", status="extracted"),)
    verdict = run_checks(subject(files=files), Policy())
    assert [c.name for c in verdict.checks] == ["extract", "parse", "imports", "claims"]


def test_the_schedule_is_the_same_in_schema_and_model_and_the_registry_derives_the_static_checks() -> None:
    schema = json.loads((Path(gate.__file__).parent / "policy" / "schema.json").read_text(encoding="utf-8"))
    # `points:` has a key for each charge a registered check declares, in the registry's order, with its default.
    declared = [charge for check in all_checks() for charge in check.charges]
    assert list(schema["properties"]["points"]["properties"]) == [charge.name for charge in declared]
    assert Points().items() == [(charge.name, charge.default) for charge in declared]
    # The registry's checks each produce only what a later one may need, in order (checked when it loads).
    assert [check.name for check in all_checks()][-1] == "judge"
    assert set(get_args(Product)) == set(Analysis.__struct_fields__)
    # The static checks run no code and ask no service: `gate publish` recomputes exactly these.
    assert static_names() == ("extract", "parse", "imports", "claims", "framework")
