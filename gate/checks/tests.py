"""The tests check: the repository's own pytest suite, from the base commit, against the head's code.

Each test is a case of kind `pytest` named by its node id; the suite runs in gate/suite/ (`baseline.py`). With
`tests.baseline: base` (the default), each test that passed on the base and fails, errors or is skipped on the
head costs `points.tests` (`points.timeout` when it ran out of time; `points.nondeterminism`, once, when it passed
each time it ran again: gate/suite/order.py); with `none` every test that fails costs.
Tests the head adds cost points when they fail; they never make up for a base test.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from gate.checks.base import Check, CheckContext, CheckResult, Product
from gate.checks.nondeterminism import NONDETERMINISM
from gate.checks.smoke import TIMEOUT
from gate.errors import GateFailure
from gate.policy.keys import Charge
from gate.policy.model import Policy
from gate.subject import Subject
from gate.verdict import CaseReport, CaseStatus, Location, Note, Penalty, listing

if TYPE_CHECKING:  # the suite's machinery is imported when a suite runs: every gate check loads this check
    from gate.suite.run import TestOutcome
    from gate.suite.selection import SuiteTrees

KIND = "pytest"
# What a test's outcome on the head must be to cost nothing when it passed on the base.
_OK = ("passed",)
# What pytest says of a test that did not run to a pass or a failure (CaseReport.said, where not charged).
_UNRUN = ("skipped", "xfailed")
ISOLATION = ("in-process, weaker isolation: each test runs in one sandboxed pytest process with the code under "
             "test, which could reach pytest; its outcomes are checked by the gate's tripwires and counts (a run "
             "that fails them is no result), and a test whose outcome never arrived is a failure")


# The points this check charges: keys of the policy's `points:` (gate/policy/keys.py's `Charge`).
TESTS = Charge(
    "tests", 4,
    "per test of the repository's suite (tests:) that passes on the base and not on the head; above the default "
    "budget, so one broken test blocks",
    per="per test",
    catches="a test of the repository's own suite (`tests:`) that passes on the base and fails, errors or is skipped "
            "on the head; one is above the default budget. A test the base's suite marks `flaky` for its rerun "
            "plugin costs nothing when it passes on a rerun of its run, up to as many as the plugin gives it (at "
            "most two; [the suite](repository.md))")


# Changed lines a failure's message names (its locations keep every one, each an annotation on the diff).
_REACHED = 3
# What part of tests.test_timeout a test that timed out on the head took on the base for its charge to say that
# the limit may be what is wrong.
_NEAR = 0.5

_NO_SANDBOX = CheckResult(skipped="code execution is off (no sandbox), so no test ran")


class Tests(Check):
    """The repository's own test suite (policy `tests:`)."""

    name = "tests"
    # Runs the suite once the code is whole; when it is not (extract or parse failed), the verdict is blocked
    # for a human (`unmet`).
    needs: tuple[Product, ...] = ("code",)
    produces: tuple[Product, ...] = ()
    static = False
    charges: tuple[Charge, ...] = (TESTS,)

    def enabled(self, policy: Policy) -> bool:
        """On when the policy names a suite (`tests:`)."""
        return policy.tests is not None

    def sandbox_paths(self, subject: Subject, policy: Policy) -> tuple[str, ...] | None:
        """The suite runs in the sandbox, with the gate's own pytest when the environment has none."""
        if policy.tests is None:
            return None
        return subject.suite.runner if subject.suite is not None else ()

    def hash_seeds(self, policy: Policy) -> tuple[int, ...]:
        return (0,)  # (the suite runs under 0, as plain pytest's does)

    def unmet(self, ctx: CheckContext, why: str) -> CheckResult:
        """A suite not run is never a suite passed, and its size is unknown until it runs: a human decides."""
        if ctx.sandbox is None:
            return _NO_SANDBOX
        return CheckResult(skipped=f"{why}: no test ran", notes=_edits(ctx.subject.suite), blocked_reasons=(
            f"the repository's tests did not run ({why}): a human must review the change",))

    def run(self, ctx: CheckContext) -> CheckResult:
        assert ctx.policy.tests is not None  # enabled
        if ctx.sandbox is None:
            return _NO_SANDBOX
        suite = ctx.subject.suite
        if suite is None:
            raise GateFailure("tests: needs the base and head commits of a git checkout (on GitHub, "
                              "actions/checkout with fetch-depth: 0)")
        from gate.suite.baseline import against_base
        from gate.suite.blind import blind, compiled_in

        found = against_base(ctx.sandbox, ctx.policy, ctx.subject, suite, ctx.progress)
        if found.tampered:  # no result: nothing to charge, a human to read what was seen
            return CheckResult(reason="no result: the suite's results were tampered with", notes=_edits(suite),
                               blocked_reasons=(tampered(found.tampered),), tampered=found.tampered,
                               isolation=(("pytest", ISOLATION),))
        base = found.base
        first = len(ctx.policy.cases) + len(ctx.subject.cases) + 1
        changed = Changed({file.path: file.added_lines for file in ctx.subject.files},
                          "this PR" if ctx.subject.kind == "pull_request" else "these commits")
        cases, penalties = _score(ctx.policy, base, found.head, found.added, first, changed, found.base_seconds)
        notes = (*_edits(suite), *(Note("tests", line) for line in found.said))
        ran = len(found.head) + len(found.added)
        # The head's own modules named like the framework (pluggy's src/pluggy) never run: no suite passed them.
        untested = tuple(f"the change touches {path}, named like the test framework, which the suite's process "
                         "cannot import from the head: a human must review it" for path in suite.untested)
        untested += tuple(f"the change touches {path}, library code under tests.paths, whose files the suite runs as "
                          "the base has them: a human must review it (tests.paths should name the test folders "
                          "and files)" for path in suite.library)
        return CheckResult(penalties=tuple(penalties), cases=tuple(cases), notes=notes, blocked_reasons=untested,
                           reason=f"{ran} tests ({'against the base' if base is not None else 'no baseline'})",
                           isolation=(("pytest", ISOLATION),),
                           blind=None if base is None else blind(base, found.base_details, found.head,
                                                                 compiled_in(suite.tree)))


def _edits(suite: SuiteTrees | None) -> tuple[Note, ...]:
    """What the change does to the suite's files, which the base's versions replace: said whether the suite ran,
    did not, or was tampered with (a human reading the latter two needs it most)."""
    return tuple(Note("tests", line) for line in suite.edits) if suite is not None else ()


def tampered(evidence: tuple[str, ...]) -> str:
    """The blocked reason for a suite whose results were tampered with: what was seen in which run, one line."""
    more = f" (and {len(evidence) - 1} more)" if len(evidence) > 1 else ""
    return (f"the suite's results were tampered with, so they are no result and cost no points: {evidence[0]}"
            f"{more}; a human must review the change")


class Changed(msgspec.Struct, frozen=True):
    """The lines the change adds, by the repository's path (None: the whole file is new), and how a report
    names the change ("this PR")."""

    lines: dict[str, frozenset[int] | None]
    name: str

    def reached(self, outcome: TestOutcome) -> list[Location]:
        """The added lines a test's failure passed through (its traceback's entries in the tree, whose paths
        are the repository's), each once, in the traceback's order."""
        found = [Location(path, line) for path, line in outcome.trace if path in self.lines
                 and (self.lines[path] is None or line in self.lines[path])]  # type: ignore[operator]
        return list(dict.fromkeys(found))


def _score(policy: Policy, base: dict[str, str] | None, outcomes: dict[str, TestOutcome],
           added: dict[str, TestOutcome], first: int, changed: Changed, base_seconds: dict[str, float]
           ) -> tuple[list[CaseReport], list[Penalty]]:
    from gate.suite.run import gist

    cases: list[CaseReport] = []
    penalties: list[Penalty] = []
    flaky: list[tuple[int, str, TestOutcome]] = []
    rows = [(nodeid, outcome, base.get(nodeid) if base is not None else None, False)
            for nodeid, outcome in sorted(outcomes.items())]
    rows += [(nodeid, outcome, None, True) for nodeid, outcome in sorted(added.items())]
    for index, (nodeid, outcome, before, new) in enumerate(rows, start=first):
        if base is not None and not new:
            charged = before in _OK and outcome.status not in _OK
        else:
            charged = outcome.status in ("failed", "error", "timeout")
        status = _status(outcome.status)
        if charged and status == "passed":  # a skip where the base passed
            status = "failed"
        cases.append(CaseReport(index, nodeid, KIND, False, status, _detail(outcome, before, charged, new),
                                round(outcome.seconds, 4), outcome.status if status == "passed" and
                                outcome.status in _UNRUN else ""))
        if charged and outcome.flaky:
            flaky.append((index, nodeid, outcome))
        elif charged:
            charge = TIMEOUT if outcome.status == "timeout" else TESTS
            check, points = charge.name, policy.points[charge]
            where = [Location(nodeid.split("::")[0], outcome.line)] if "::" in nodeid else []
            reached = changed.reached(outcome)
            verb = {"timeout": "ran out of time", "skipped": "was skipped", "xfailed": "was marked xfail",
                    "error": "errored"}.get(outcome.status, "failed")
            message = f"{nodeid} {verb}" + (f" at {where[0]}" if where and where[0].line else "") + \
                (" (it passes on the base)" if before in _OK else "") + gist(outcome.detail)
            if outcome.status == "timeout" and nodeid in base_seconds:
                message += _near_limit(base_seconds[nodeid], policy)
            if reached:
                message += f"; reached {listing([str(loc) for loc in reached], ', ', _REACHED)}, changed by " \
                           f"{changed.name}"
            penalties.append(Penalty(check, points, message, tuple(where + reached), case=index))
    if flaky:  # (once, as for the cases: gate/checks/nondeterminism.py)
        index, nodeid, outcome = flaky[0]
        where = [Location(nodeid.split("::")[0], outcome.line)] if "::" in nodeid else []
        penalties.append(Penalty(NONDETERMINISM.name, policy.points[NONDETERMINISM], (
            f"{listing([test for _, test, _ in flaky], ', ', 3)} did not pass on the head, then passed each time "
            "it ran again (in the base's order, and after the same tests as in its run); the base passes it: "
            "nondeterministic") + gist(outcome.detail), tuple(where), case=index))
    return cases, penalties


def _near_limit(took: float, policy: Policy) -> str:
    """What a test's time on the base says of its timeout on the head: a test that took most of its limit there
    may only be slow (mccabe's Hypothesis test: 54-144 s under plain pytest against the default 60 s)."""
    assert policy.tests is not None
    limit = policy.tests.test_timeout
    said = f"; the base's run of it took {took:.1f} s of tests.test_timeout's {limit:g} s"
    if took >= limit * _NEAR:
        said += ": if it is that slow, raise tests.test_timeout"
    return said


def _status(status: str) -> CaseStatus:
    """A test's status as a case's: skipped and xfailed tests did not fail."""
    statuses: dict[str, CaseStatus] = {"error": "error", "timeout": "timeout", "failed": "failed"}
    return statuses.get(status, "passed")


def _detail(outcome: TestOutcome, before: str | None, charged: bool, new: bool) -> str:
    parts = [outcome.status] if outcome.status in _UNRUN else []
    if new:
        parts.append("added by the change")
    elif before is not None and before not in _OK and outcome.status not in _OK:
        parts.append(f"{before} on the base too: not charged")
    if charged and outcome.status in ("skipped", "xfailed"):
        parts.append("it passes on the base")
    if outcome.detail:  # (a passing test's is the gate's note: a flaky-marked test that passed when run again)
        parts.append(outcome.detail.strip())
    return "; ".join(parts)


CHECK = Tests()
