"""Red-team attack on the suite through a pytest hook defined in library code (README "Gating with your own
tests and dependencies"). A base conftest that star-imports a module of the package (shared fixtures, a common
pattern) registers whatever that module defines as the conftest's own: a head that adds a
`pytest_runtest_logreport` there rewrites every report to "passed" without importing pytest or naming anything
of the interpreter.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.engine import run_checks
from gate.policy_file import load_policy
from gate.subject import SourceFile, Subject
from tests.projects import gate_cache, gate_cache_root, offline_pip, wheelhouse  # noqa: F401
from tests.suite_support import BASE_TESTS, BROKEN_MUL, CONFTEST, POLICY, calc_project, score_repo, suite_statuses

FIXTURES = "import pytest\n\n\n@pytest.fixture\ndef three():\n    return 3\n"
SHARED = {"calc_testing.py": FIXTURES, "tests/conftest.py": CONFTEST + "\nfrom calc_testing import *  # noqa\n"}
HOOK = "\n\ndef pytest_runtest_logreport(report):\n    report.outcome = \"passed\"\n    report.longrepr = None\n"


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_a_hook_added_to_a_module_the_base_conftest_imports_is_blocked(tmp_path: Path) -> None:
    repo = calc_project(tmp_path / "repo", extra_files=SHARED)
    repo.commit("bot: mul", {"calc.py": BROKEN_MUL, "calc_testing.py": FIXTURES + HOOK})

    verdict = score_repo(repo)

    # The hook runs as the base conftest's own and rewrites every report to passed, the tripwires' too: the
    # suite's results are no result, and the framework check names the hook.
    assert not verdict.accepted and verdict.tampered and not suite_statuses(verdict)
    assert any("pytest_runtest_logreport" in reason for reason in verdict.blocked_reasons), verdict.blocked_reasons


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_an_honest_fixture_added_to_that_module_is_accepted(tmp_path: Path) -> None:
    repo = calc_project(tmp_path / "repo", extra_files=SHARED)
    repo.commit("bot: four", {"calc_testing.py": FIXTURES + "\n\n@pytest.fixture\ndef four():\n    return 4\n"})

    verdict = score_repo(repo)

    assert suite_statuses(verdict) == dict.fromkeys(BASE_TESTS, "passed")
    assert verdict.accepted, verdict.blocked_reasons


@pytest.mark.parametrize(("code", "flagged"), [
    ("def pytest_runtest_logreport(report):\n    pass\n", True),
    ("def pytest_collection_modifyitems(items):\n    items.clear()\n", True),
    ("class P:\n    def pytest_runtest_makereport(self, item, call):\n        pass\n", True),
    ("pytest_configure = print\n", True),
    ("def pytester_helper():\n    pass\n", False),
    ("def run_pytest_like():\n    pass\n", False),
], ids=["logreport", "modifyitems", "method", "assigned", "similar-name", "contains-pytest"])
def test_a_pytest_hook_in_library_code_blocks(code: str, flagged: bool) -> None:
    policy = load_policy(None, text=POLICY, source="gate.yml")
    subject = Subject(kind="range", label="a..b", files=(SourceFile("calc_testing.py", code),))

    reasons = [r for r in run_checks(subject, policy).blocked_reasons if "test framework" in r]

    assert bool(reasons) == flagged, reasons
