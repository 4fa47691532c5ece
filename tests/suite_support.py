"""The small project the suite's tests gate (tests/test_suite*.py): a calculator, its tests and conftest, a
policy that runs them, and how a range of it is scored."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from gate.engine import score
from gate.sandbox.base import Sandbox
from gate.sources import gitcli
from gate.sources.gitrange import subject_from_commits
from gate.suite.run import SuiteRun
from gate.verdict import Verdict
from tests.git_support import Repo
from tests.projects import project_repo, pyproject

CALC = '''\
def add(a, b):
    return a + b


def mul(a, b):
    return a * b


def div(a, b):
    return a / b
'''
TESTS = '''\
import pytest
from checkhelp import same

from calc import add, div, mul


def test_add(two):
    assert same(add(two, 3), 5)


def test_mul(two):
    assert mul(two, 3) == 6


def test_div():
    assert div(6, 3) == 2


def test_div_by_zero():
    with pytest.raises(ZeroDivisionError):
        div(1, 0)
'''
CONFTEST = '''\
import pytest


@pytest.fixture
def two():
    return 2
'''
POLICY = """\
budget: 1
environment:
  extras: [test]
tests:
  paths: [tests]
  test_timeout: 3
"""
BASE_TESTS = ["tests/test_calc.py::test_add", "tests/test_calc.py::test_div",
              "tests/test_calc.py::test_div_by_zero", "tests/test_calc.py::test_mul"]


def calc_project(root: Path, policy: str = POLICY, layout: str = "flat", extra_files: dict[str, str] | None = None
             ) -> Repo:
    module = "src/calc.py" if layout == "src" else "calc.py"
    return project_repo(root, {
        "pyproject.toml": pyproject("calc", [], extras={"test": ["checkhelp"]}),
        module: CALC, "tests/test_calc.py": TESTS, "tests/conftest.py": CONFTEST, ".github/gate.yml": policy,
        **(extra_files or {})})


def score_repo(repo: Repo) -> Verdict:
    handle = gitcli.Repo(repo.root)
    with subject_from_commits(handle, handle.commit("main").hexsha, handle.commit("bot").hexsha) as found:
        return score(found)


def suite_statuses(verdict: Verdict) -> dict[str, str]:
    return {case.name: case.status for case in verdict.cases if case.kind == "pytest"}


def charged_messages(verdict: Verdict) -> list[str]:
    return [p.message for p in verdict.penalties]


BROKEN_MUL = CALC.replace("return a * b", "return a + b")
# An honest change: a docstring, no behaviour.
DOCUMENTED_MUL = CALC.replace("def mul(a, b):\n", 'def mul(a, b):\n    """a times b."""\n')


def framework_flags(code: str, path: str, policy_text: str = POLICY) -> list[str]:
    """The `framework` check's blocked reasons for a change whose one file at `path` holds `code`, under the
    suite's policy (or `policy_text`; nothing runs: the check reads the files)."""
    from gate.engine import run_checks
    from gate.policy_file import load_policy
    from gate.subject import SourceFile, Subject

    policy = load_policy(None, text=policy_text, source="gate.yml")
    subject = Subject(kind="range", label="a..b", files=(SourceFile(path, code),))
    return [reason for reason in run_checks(subject, policy).blocked_reasons if "test framework" in reason]

# A plugin that makes every test's report a pass: what a head would load to forge outcomes.
REWRITING_PLUGIN = '''\
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
'''


@contextlib.contextmanager
def suite_runs(repo: Repo) -> Iterator[tuple[Sandbox, SuiteRun, SuiteRun, float]]:
    """The sandbox the gate opens for `repo`'s range main..bot, how its base's suite and its head's run there,
    and the suite's deadline: for calling the suite's runs one by one."""
    import time

    from gate.engine import sandboxed
    from gate.suite.baseline import suite_run

    handle = gitcli.Repo(repo.root)
    with subject_from_commits(handle, handle.commit("main").hexsha, handle.commit("bot").hexsha) as found:
        policy = found.policy
        assert found.subject.suite is not None and policy.tests is not None
        with sandboxed(found.subject, policy, found.subject.suite.runner, found.private) as (ready, sandbox):
            suite = ready.suite
            assert suite is not None and suite.base_tree is not None
            yield (sandbox, suite_run(policy, ready, suite, suite.base_tree, suite.base_roots, "base"),
                   suite_run(policy, ready, suite, suite.tree, ready.import_roots, "head"),
                   time.monotonic() + policy.tests.timeout)


def todays_charges(repo: Repo) -> dict[str, str]:
    """The base tests the strategy before the base ran only where it decides something charges, with each one's
    status on the head: the base's whole suite run in one process and the head's whole suite in another (both in
    pytest's order, as the gate ran them without a cached baseline), each base test that passed on the base and
    does not pass on the head, or was not collected there (an error)."""
    from gate.suite.run import run_suite

    with suite_runs(repo) as (sandbox, base_run, head_run, deadline):
        base = run_suite(sandbox, base_run, None, deadline)
        head = run_suite(sandbox, head_run, None, deadline)
    assert not base.tampered and not head.tampered
    on_head = {nodeid: outcome.status for nodeid, outcome in head.tests.items()}
    return {nodeid: on_head.get(nodeid, "error") for nodeid, outcome in base.tests.items()
            if "::" in nodeid and outcome.status == "passed" and on_head.get(nodeid) != "passed"}


# The verbs of a penalty's message (gate/checks/tests.py) for a test's status on the head.
_VERBS = {"failed": "failed", "errored": "error", "was skipped": "skipped", "was marked xfail": "xfailed",
          "ran out of time": "timeout"}


def charged_statuses(verdict: Verdict) -> dict[str, str]:
    """The tests a verdict charges, with each one's status on the head (as its penalty says it)."""
    import re

    found = {}
    for penalty in verdict.penalties:
        said = re.match(r"(\S+) (failed|errored|was skipped|was marked xfail|ran out of time)", penalty.message)
        if said:
            found[said.group(1)] = _VERBS[said.group(2)]
    return found
