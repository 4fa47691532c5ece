"""The head's run of the repository's suite, against the base's (docs/repository.md).

With `tests.baseline: base` (the default) the suite also runs on the base, cached by the base's SHA and
environment, and each test's status there is what the head's outcome is compared with (gate/checks/tests.py
charges the difference); with `none` there is no base run. A base whose suite does not run in the gate (a file
that fails to collect, a missing fixture, no test, fewer than its files define) stops the gate (exit 3) and is
never cached. Tests the head adds run apart from the base's (their module code never shares a process with a
base test).
"""

from __future__ import annotations

import ast
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from gate import __version__
from gate.environment import cache
from gate.errors import GateFailure
from gate.limits import sandbox_limits
from gate.policy.model import Policy
from gate.progress import QUIET, Progress
from gate.sandbox.base import Sandbox
from gate.subject import Subject
from gate.suite.run import SuiteResult, SuiteRun, TestOutcome, confirm, control, gist, run_suite
from gate.suite.selection import SuiteTrees
from gate.suite.tripwire import Suspect
from gate.syntax import parse_python
from gate.verdict import listing


@dataclass(frozen=True)
class Outcomes:
    """What a suite's runs found: each base test's status on the base (None without a baseline), each
    base test's outcome on the head, and each outcome of the tests the head adds; and the evidence that the
    head's runs were tampered with, each in one line naming its run (then none of it is a result)."""

    base: dict[str, str] | None
    head: dict[str, TestOutcome]
    added: dict[str, TestOutcome]
    tampered: tuple[str, ...] = ()


def against_base(sandbox: Sandbox, policy: Policy, subject: Subject, suite: SuiteTrees,
                 progress: Progress = QUIET) -> Outcomes:
    """Run `suite` (the trees of `policy.tests`) on the head, against the base's outcomes when the policy asks
    for a baseline, then the tests the head adds; raises GateFailure when the base's suite does not run in the
    gate. `progress` counts each run's tests."""
    assert policy.tests is not None
    head = _run(policy, subject, suite, suite.tree, subject.import_roots, "the head's tests")
    base, outcomes = _base_and_head(sandbox, policy, subject, suite, head, cache.cache_dir(os.environ), progress)
    outcomes = _again(sandbox, head, base, outcomes, time.monotonic() + policy.tests.timeout)
    deadline = time.monotonic() + policy.tests.timeout
    added = SuiteResult({})
    if suite.added and suite.added_tree is not None and not outcomes.tampered:
        added = run_suite(sandbox, replace(head, tree=suite.added_tree, args=suite.added,
                                           what="the tests the change adds"), None, deadline, progress)
    return Outcomes(base, outcomes.tests, added.tests,
                    (*outcomes.tampered, *added.tampered, *_confirmed(sandbox, policy, subject, suite,
                                                                       (*outcomes.suspects, *added.suspects))))


def _again(sandbox: Sandbox, head: SuiteRun, base: dict[str, str] | None, found: SuiteResult, deadline: float
           ) -> SuiteResult:
    """`found` with each test that passes on the base and was skipped or xfailed after a tripwire had failed
    in its run (a conftest that skips or xfails what follows a failure) run once more, away from any
    tripwire's failure (run.confirm): its outcome then is the head's."""
    if base is None or found.tampered:
        return found
    tests = [nodeid for nodeid, outcome in found.tests.items() if base.get(nodeid) == "passed"
             and outcome.status in ("skipped", "xfailed") and nodeid in found.after_failing]
    if not tests:
        return found
    again = confirm(sandbox, head, tests, list(found.tests), deadline)
    return SuiteResult({**found.tests, **again.tests}, again.tampered, (*found.suspects, *again.suspects))


def _confirmed(sandbox: Sandbox, policy: Policy, subject: Subject, suite: SuiteTrees,
               suspects: tuple[Suspect, ...]) -> list[str]:
    """The evidence among the head's tripwires that read the wrong outcome: each that the base's own suite runs
    right. Without the base's tree (`baseline: none`) nothing can tell the suite's way from tampering: each is
    evidence."""
    if not suspects:
        return []
    if suite.base_tree is None:
        return [f"{suspect.run}: {suspect.seen}" for suspect in suspects]
    return control(sandbox, _run(policy, subject, suite, suite.base_tree, suite.base_roots, "the base's tests"),
                   suspects)


def _run(policy: Policy, subject: Subject, suite: SuiteTrees, tree: Path, roots: tuple[str, ...], what: str
         ) -> SuiteRun:
    """How the suite runs in `tree` (the head's or the base's, whose own import roots `roots` come first): the
    environment's site-packages next, then the gate's pytest when the environment has none; the plugins the
    base declares loaded. `what` names its runs in a report; the base's own runs carry no tripwires."""
    assert policy.tests is not None
    return SuiteRun(tree=tree, args=suite.args, python_path=(*roots, *_sites(subject), *suite.runner),
                    limits=sandbox_limits(policy.limits), test_timeout=policy.tests.test_timeout,
                    workers=policy.tests.workers, plugins=_plugins(subject), what=what,
                    tripwires=tree != suite.base_tree)


def _sites(subject: Subject) -> tuple[str, ...]:
    return subject.environment.site_packages if subject.environment else ()


def _plugins(subject: Subject) -> tuple[str, ...]:
    return subject.environment.plugins if subject.environment else ()


def _base_and_head(sandbox: Sandbox, policy: Policy, subject: Subject, suite: SuiteTrees, head: SuiteRun,
                   where: Path, progress: Progress) -> tuple[dict[str, str] | None, SuiteResult]:
    """(each base test's status on the base, or None without a baseline; each test's outcome on the head).
    A cached baseline gives the head run its tests, shared over the workers; without one (a new base, or a
    cache the gate does not trust) the base runs alongside the head, which runs what it collects, and each
    base test the head did not collect is an error there."""
    assert policy.tests is not None
    if policy.tests.baseline != "base":
        return None, run_suite(sandbox, head, None, time.monotonic() + policy.tests.timeout, progress)
    stored = _stored(subject, suite, where)
    found = cache.read_json(stored)
    if isinstance(found, dict):
        base = {str(nodeid): str(status) for nodeid, status in found.items()}
        return base, run_suite(sandbox, head, sorted(base), time.monotonic() + policy.tests.timeout, progress)
    with ThreadPoolExecutor(max_workers=2) as pool:
        on_base = pool.submit(_baseline, sandbox, policy, subject, suite, stored, progress)
        on_head = pool.submit(run_suite, sandbox, head, None, time.monotonic() + policy.tests.timeout, progress)
        base, whole = on_base.result(), on_head.result()
    return base, replace(whole, tests={nodeid: _collected(nodeid, whole.tests) for nodeid in base})


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
                        "gate": __version__, "runner": list(suite.runner), "plugins": list(_plugins(subject))})
    return where / "baselines" / f"{key}.json"


def _baseline(sandbox: Sandbox, policy: Policy, subject: Subject, suite: SuiteTrees, stored: Path,
              progress: Progress) -> dict[str, str]:
    """Each base test's status on the base itself, by running it, cached at `stored`. Raises GateFailure
    (exit 3) when the base's suite does not run in the gate (`refusal`); such a baseline is never cached."""
    assert policy.tests is not None and suite.base_tree is not None
    run = _run(policy, subject, suite, suite.base_tree, suite.base_roots, "the base's tests")
    result = run_suite(sandbox, run, None, time.monotonic() + policy.tests.timeout, progress)
    outcomes = result.tests
    problem = refusal(outcomes, plain_tests(suite.base_tree, suite.args))
    if result.tampered:  # (never from an honest run: the harness writes every record in turn)
        problem = "its records do not add up: " + listing(list(result.tampered), "; ", shown=2)
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
    broken += [f"{nodeid}: {gist(outcome.detail).removeprefix(': ')}"
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
                f"{gist(outcome.detail)})")
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
