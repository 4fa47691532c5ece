"""A verdict with something in every section, for the report and publishing tests."""

from __future__ import annotations

from msgspec.structs import replace

from gate.verdict import CaseReport, CheckReport, Location, Penalty, Verdict

HEAD = "b" * 40
REPO = "https://github.com/octo/widgets"


def blocked_verdict(**changes: object) -> Verdict:
    """A blocked verdict with penalties, failed and hidden cases, a skipped check and facts; `changes`
    replace its fields."""
    verdict = Verdict(
        subject_kind="range", subject_label="aaaaaaaaaaaa..bbbbbbbbbbbb",
        policy_source=".github/gate.yml@aaaaaaa",
        mode="enforce", budget=3, total=7, accepted=False,
        penalties=(
            Penalty("imports", 3, "imports os, which the policy denies", (Location("src/util.py", 12, 0),)),
            Penalty("smoke", 2, "case 0 add_two failed", (), case=0),
            Penalty("smoke", 2, "hidden case 1 failed", (), case=1),
        ),
        checks=(CheckReport("extract", "passed"), CheckReport("parse", "passed"),
                CheckReport("imports", "failed", 3),
                CheckReport("claims", "skipped", reason="no claims to judge"),
                CheckReport("smoke", "failed", 4)),
        cases=(CaseReport(0, "add_two", "call", False, "failed", "- expected: 4\n+ got:      5"),
               CaseReport(1, "hidden case 1", "call", True, "failed", "returned int"),
               CaseReport(2, "prints", "stdio", False, "passed")),
        isolation=(("network", "off: needs root"), ("zygote", "on")),
        facts=(("repo", REPO), ("base", "a" * 40), ("head", HEAD)),
        gate_version="0.1.0",
        reproduce=f"gate check --base {'a' * 40} --head {HEAD}",
    )
    return replace(verdict, **changes)
