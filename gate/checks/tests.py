"""The tests check: the repository's own pytest suite, from the base commit, against the head's code.

Each test is a case of kind `pytest` named by its node id. With `tests.baseline: base` (the default) the suite
also runs on the base (cached by the base's SHA and environment), and each test that passed there and fails,
errors or is skipped on the head costs `points.tests` (`points.timeout` when it ran out of time); with `none`
every test that fails costs. A base whose suite does not run in the gate (a file that fails to collect, a
missing fixture, no test, fewer than its files define) stops the gate (exit 3) and is never cached. Tests the
head adds run apart from the base's (their module code never shares a process with a base test) and cost
points when they fail; they never make up for a base test.
"""

from __future__ import annotations

import ast
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from gate import __version__
from gate.cases.suite import SuiteRun, TestOutcome, run_suite
from gate.checks.base import CheckContext, CheckResult, Product, stopped
from gate.checks.smoke import TIMEOUT
from gate.environment import cache
from gate.errors import GateFailure
from gate.limits import sandbox_limits
from gate.policy.keys import Charge
from gate.policy.model import Policy
from gate.sandbox.base import Sandbox
from gate.subject import Subject, SuiteTrees
from gate.syntax import parse_python
from gate.verdict import CaseReport, CaseStatus, Location, Note, Penalty, listing

KIND = "pytest"
# What a test's outcome on the head must be to cost nothing when it passed on the base.
_OK = ("passed",)
ISOLATION = ("in-process, weaker isolation: each test runs in one sandboxed pytest process with the code under "
             "test, which could reach pytest; outcomes travel on the gate's own channel with a per-run key, a "
             "test whose outcome never arrived is a failure")


# The points this check charges: keys of the policy's `points:` (gate/policy/keys.py's `Charge`).
TESTS = Charge(
    "tests", 4,
    "per test of the repository's suite (tests:) that passes on the base and not on the head; above the default "
    "budget, so one broken test blocks",
    per="per test",
    catches="a test of the repository's own suite (`tests:`) that passes on the base and fails, errors or is skipped "
            "on the head; one is above the default budget")


class Tests:
    """The repository's own test suite (policy `tests:`)."""

    name = "tests"
    # Not run when extract or parse failed, and then the verdict is blocked (checks.base.stopped).
    requires: tuple[str, ...] = ()
    needs: tuple[Product, ...] = ()
    produces: tuple[Product, ...] = ()
    static = False
    charges: tuple[Charge, ...] = (TESTS,)

    def enabled(self, policy: Policy) -> bool:
        """On when the policy names a suite (`tests:`)."""
        return policy.tests is not None

    def run(self, ctx: CheckContext) -> CheckResult:
        spec = ctx.policy.tests
        assert spec is not None  # enabled
        if ctx.sandbox is None:
            return CheckResult(skipped="code execution is off (no sandbox), so no test ran")
        why = stopped(ctx)
        if why:  # a suite not run is never a suite passed, and its size is unknown until it runs
            return CheckResult(skipped=f"{why}: no test ran", blocked_reasons=(
                f"the repository's tests did not run ({why}): a human must review the change",))
        suite = ctx.subject.suite
        if suite is None:
            raise GateFailure("tests: needs the base and head commits of a git checkout (on GitHub, "
                              "actions/checkout with fetch-depth: 0)")
        where = cache.cache_dir(os.environ)
        runner = suite.runner
        head = _head_run(ctx.policy, ctx.subject, suite, runner)
        base, outcomes = _base_and_head(ctx.sandbox, ctx.policy, ctx.subject, suite, head, where)
        deadline = time.monotonic() + spec.timeout
        added = {}
        if suite.added and suite.added_tree is not None:
            added = run_suite(ctx.sandbox, replace(head, tree=suite.added_tree, args=suite.added), None, deadline)
        first = len(ctx.policy.cases) + len(ctx.subject.cases) + 1
        cases, penalties = _score(ctx.policy, base, outcomes, added, first)
        notes = tuple(Note("tests", edit) for edit in suite.edits)
        ran = len(outcomes) + len(added)
        # The head's own modules named like the framework (pluggy's src/pluggy) never run: no suite passed them.
        untested = tuple(f"the change touches {path}, named like the test framework, which the suite's process "
                         "cannot import from the head: a human must review it" for path in suite.untested)
        untested += tuple(f"the change touches {path}, library code under tests.paths, whose files the suite runs as "
                          "the base has them: a human must review it (tests.paths should name the test folders "
                          "and files)" for path in suite.library)
        return CheckResult(penalties=tuple(penalties), cases=tuple(cases), notes=notes, blocked_reasons=untested,
                           reason=f"{ran} tests ({'against the base' if base is not None else 'no baseline'})",
                           isolation=(("pytest", ISOLATION),))


def _sites(subject: Subject) -> tuple[str, ...]:
    return subject.environment.site_packages if subject.environment else ()


def _plugins(subject: Subject) -> tuple[str, ...]:
    return subject.environment.plugins if subject.environment else ()


def _head_run(policy: Policy, subject: Subject, suite: SuiteTrees, runner: tuple[str, ...]) -> SuiteRun:
    assert policy.tests is not None
    return SuiteRun(tree=suite.tree, args=suite.args,
                    python_path=(*subject.import_roots, *_sites(subject), *runner),
                    limits=sandbox_limits(policy.limits), test_timeout=policy.tests.test_timeout,
                    workers=policy.tests.workers, plugins=_plugins(subject))


def _base_and_head(sandbox: Sandbox, policy: Policy, subject: Subject, suite: SuiteTrees, head: SuiteRun,
                   where: Path) -> tuple[dict[str, str] | None, dict[str, TestOutcome]]:
    """(each base test's status on the base, or None without a baseline; each test's outcome on the head).
    A cached baseline gives the head run its tests, shared over the workers; without one (a new base, or a
    cache the gate does not trust) the base runs alongside the head, which runs what it collects, and each
    base test the head did not collect is an error there."""
    assert policy.tests is not None
    if policy.tests.baseline != "base":
        return None, run_suite(sandbox, head, None, time.monotonic() + policy.tests.timeout)
    stored = _stored(subject, suite, where)
    found = cache.read_json(stored)
    if isinstance(found, dict):
        base = {str(nodeid): str(status) for nodeid, status in found.items()}
        return base, run_suite(sandbox, head, sorted(base), time.monotonic() + policy.tests.timeout)
    with ThreadPoolExecutor(max_workers=2) as pool:
        on_base = pool.submit(_baseline, sandbox, policy, subject, suite, stored)
        on_head = pool.submit(run_suite, sandbox, head, None, time.monotonic() + policy.tests.timeout)
        base, whole = on_base.result(), on_head.result()
    return base, {nodeid: _collected(nodeid, whole) for nodeid in base}


def _collected(nodeid: str, whole: dict[str, TestOutcome]) -> TestOutcome:
    """The head's outcome of the base test `nodeid` from a run of everything the head collected."""
    if nodeid in whole:
        return whole[nodeid]
    failed = whole.get(nodeid.split("::")[0]) or whole.get(".")
    return TestOutcome(nodeid, "error", f"not collected: {failed.detail}" if failed else "not collected on the head")


def _stored(subject: Subject, suite: SuiteTrees, where: Path) -> Path:
    """Where the baseline of `suite` is cached: by the base's SHA, the environment and the suite's settings."""
    key = cache.digest({"base": suite.base_sha, "environment": subject.environment.key if subject.environment
                        else None, "paths": list(suite.args), "roots": list(suite.base_roots),
                        "gate": __version__, "runner": list(suite.runner), "plugins": list(_plugins(subject))}, {})
    return where / "baselines" / f"{key}.json"


def _baseline(sandbox: Sandbox, policy: Policy, subject: Subject, suite: SuiteTrees, stored: Path
              ) -> dict[str, str]:
    """Each base test's status on the base itself, by running it, cached at `stored`. Raises GateFailure
    (exit 3) when the base's suite does not run in the gate (`refusal`); such a baseline is never cached."""
    assert policy.tests is not None and suite.base_tree is not None
    run = SuiteRun(tree=suite.base_tree, args=suite.args, python_path=(*suite.base_roots, *_sites(subject),
                                                                        *suite.runner),
                   limits=sandbox_limits(policy.limits), test_timeout=policy.tests.test_timeout,
                   workers=policy.tests.workers, plugins=_plugins(subject))
    outcomes = run_suite(sandbox, run, None, time.monotonic() + policy.tests.timeout)
    problem = refusal(outcomes, plain_tests(suite.base_tree, suite.args))
    if problem:
        raise GateFailure(f"the base's suite does not run in the gate: {problem}; fix the base (or what the "
                          "environment installs: environment.extras, groups or requirements) and see "
                          "`gate doctor --repo .`")
    found = {nodeid: outcome.status for nodeid, outcome in outcomes.items()
             if "::" in nodeid and outcome.status != "deselected"}
    cache.write_json(stored, found)
    return found


def refusal(outcomes: dict[str, TestOutcome], plain: dict[str, int]) -> str:
    """Why the base's run `outcomes` cannot be a baseline, in pytest's own words, or "": it did not get to
    its tests, a file failed to collect, a test errored for want of a fixture (a plugin the environment
    lacks), it collected no test, every test it collected was skipped or xfailed (nothing would catch a
    regression), or fewer in all than the files plainly define (`plain`: file -> count)."""
    broken = [f"{nodeid}: {outcome.detail.strip()[-500:]}" for nodeid, outcome in sorted(outcomes.items())
              if "::" not in nodeid and outcome.status == "error"]
    broken += [f"{nodeid}: {_gist(outcome.detail).removeprefix(': ')}"
               for nodeid, outcome in sorted(outcomes.items())
               if outcome.status == "error" and _FIXTURE.search(outcome.detail)]
    if broken:
        return listing(broken, "; ", shown=3)
    tests = [nodeid for nodeid in outcomes if "::" in nodeid]
    if not tests:
        return "pytest collected no test"
    ran = [(nodeid, outcome) for nodeid, outcome in sorted(outcomes.items())
           if "::" in nodeid and outcome.status != "deselected"]
    if ran and all(outcome.status in ("skipped", "xfailed") for _, outcome in ran):
        # A skip where the base passed costs; where nothing passed, no regression would cost anything.
        nodeid, outcome = ran[0]
        return (f"every test pytest collected was skipped or xfailed ({len(ran)}; {nodeid}"
                f"{_gist(outcome.detail)})")
    if len(tests) >= sum(plain.values()):  # (parametrized tests count more; a file the base ignores, less)
        return ""
    counts: dict[str, int] = {}
    for nodeid in tests:
        counts[nodeid.split("::")[0]] = counts.get(nodeid.split("::")[0], 0) + 1
    short = [f"{path} defines {wanted} tests, pytest collected {counts.get(path, 0)}"
             for path, wanted in sorted(plain.items()) if counts.get(path, 0) < wanted]
    return f"pytest collected {len(tests)} tests where the files define {sum(plain.values())} (" + \
        listing(short, "; ", shown=3) + ")"


# pytest's words for a test that asks for a fixture nothing provides (a plugin that did not load).
_FIXTURE = re.compile(r"^E\s+fixture '[^']+' not found", re.MULTILINE)
# The file names pytest collects tests from when the configuration does not say otherwise.
_TEST_FILE = re.compile(r"^(test_.*|.*_test)\.py$")


def plain_tests(tree: Path, paths: tuple[str, ...]) -> dict[str, int]:
    """The tests each test file under `paths` plainly defines (`def test_*` at its top or in a top-level
    `class Test*`, each name once), by its path relative to `tree`: fewer collected means pytest did not run
    what the base holds."""
    found: dict[str, int] = {}
    for path in paths:
        top = tree / path
        files = [top] if top.is_file() else sorted(top.rglob("*.py"))
        for file in files:
            if not _TEST_FILE.match(file.name):
                continue
            try:
                module = parse_python(file.read_bytes())
            except (SyntaxError, ValueError):
                continue  # pytest says so: a collection error
            names = {node.name for node in module.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                     and node.name.startswith("test")}
            for node in module.body:
                if isinstance(node, ast.ClassDef) and node.name.startswith("Test") and not node.bases:
                    names |= {f"{node.name}.{item.name}" for item in node.body
                              if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                              and item.name.startswith("test")}
            if names:
                found[file.relative_to(tree).as_posix()] = len(names)
    return found


def _score(policy: Policy, base: dict[str, str] | None, outcomes: dict[str, TestOutcome],
           added: dict[str, TestOutcome], first: int) -> tuple[list[CaseReport], list[Penalty]]:
    cases: list[CaseReport] = []
    penalties: list[Penalty] = []
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
                                round(outcome.seconds, 4)))
        if charged:
            charge = TIMEOUT if outcome.status == "timeout" else TESTS
            check, points = charge.name, policy.points[charge]
            where = (Location(nodeid.split("::")[0], outcome.line),) if "::" in nodeid else ()
            verb = {"timeout": "ran out of time", "skipped": "was skipped", "xfailed": "was marked xfail",
                    "error": "errored"}.get(outcome.status, "failed")
            penalties.append(Penalty(check, points, f"test {nodeid} {verb}" + (
                " (it passes on the base)" if before in _OK else "") + _gist(outcome.detail), where, case=index))
    return cases, penalties


def _gist(detail: str) -> str:
    """The line of pytest's report that says what went wrong (its first `E` line), else its last line."""
    lines = [line.strip() for line in detail.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("E ")]
    found = (errors or lines[-1:] or [""])[0].removeprefix("E").strip()
    return f": {found[:200]}" if found else ""


def _status(status: str) -> CaseStatus:
    """A test's status as a case's: skipped and xfailed tests did not fail."""
    statuses: dict[str, CaseStatus] = {"error": "error", "timeout": "timeout", "failed": "failed"}
    return statuses.get(status, "passed")


def _detail(outcome: TestOutcome, before: str | None, charged: bool, new: bool) -> str:
    words = {"skipped": "skipped", "xfailed": "xfailed"}.get(outcome.status, "")
    parts = [words] if words else []
    if new:
        parts.append("added by the change")
    elif before is not None and before not in _OK and outcome.status not in _OK:
        parts.append(f"{before} on the base too: not charged")
    if charged and outcome.status in ("skipped", "xfailed"):
        parts.append("it passes on the base")
    if outcome.detail and outcome.status not in _OK:
        parts.append(outcome.detail.strip()[-300:])
    return "; ".join(parts)


CHECK = Tests()
