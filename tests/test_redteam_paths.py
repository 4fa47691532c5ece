"""Red team: the suite's test paths as a policy may spell them, from pytest's `testpaths` (`gate init` copies
them): the whole tree (`.`), or a package that holds its own tests. Every file under a test path runs as the
base has it, so a change to the library's code there was never what ran: a regression in it went green.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.projects import gate_cache, gate_cache_root, offline_pip, wheelhouse  # noqa: F401
from tests.suite_support import BROKEN_MUL, POLICY, TESTS, calc_project, framework_flags, score_repo, suite_statuses

LIBRARY = ("library code under tests.paths, whose files the suite runs as the base has them: a human must review "
           "it")


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_with_the_whole_tree_as_the_test_path_a_heads_edit_runs_neither_as_a_test_nor_unseen(tmp_path: Path) -> None:
    repo = calc_project(tmp_path / "repo", POLICY.replace("paths: [tests]", "paths: [.]"))
    repo.commit("bot: mul", {"calc.py": BROKEN_MUL,
                             "tests/test_calc.py": TESTS.replace("assert mul(two, 3) == 6", "assert mul(two, 3) == 5")})

    verdict = score_repo(repo)

    # Every file is under `.`: the base's test ran, on the base's calc.py.
    assert suite_statuses(verdict)["tests/test_calc.py::test_mul"] == "passed"
    assert not verdict.accepted
    assert [reason for reason in verdict.blocked_reasons if LIBRARY in reason] == [
        f"the change touches calc.py, {LIBRARY} (tests.paths should name the test folders and files)"]


# A test of the head's that uses pytest, as tests do: the framework check reads library code, not tests.
PYTEST_TEST = "import pytest\n\n\ndef test_div():\n    with pytest.raises(ZeroDivisionError):\n        1 / 0\n"


@pytest.mark.parametrize("paths", ["[tests]", "[.]"])
def test_a_heads_test_that_imports_pytest_is_not_library_code_whatever_the_test_path(paths: str) -> None:
    """Under `.` as under tests/, the file is the suite's (the base's version runs): its `import pytest` is no
    reach into the framework, and the change does not go to a human for it."""
    policy = POLICY.replace("paths: [tests]", f"paths: {paths}")

    assert framework_flags(PYTEST_TEST, "tests/test_calc.py", policy) == []
    assert framework_flags(PYTEST_TEST.replace("def test_div", "def div"), "calc.py", POLICY) != []


@pytest.mark.parametrize(("named", "path", "suites"), [
    ("tests/test_calc.py", "tests/support.py", True),
    ("tests/unit/test_calc.py", "tests/support.py", True),
    ("src/tests/test.py", "src/tests/helpers.py", True),
    ("testing/test_calc.py", "testing/support.py", True),
    ("tests/unit", "tests/support.py", True),
    ("pkg/testing/tests/test_utils.py", "pkg/testing/helpers.py", False),
    ("pkg/tests.py", "pkg/helpers.py", False),
    ("test_calc.py", "support.py", False)])
def test_beside_a_test_module_named_alone_its_folder_of_tests_is_the_suites_and_no_more(
        named: str, path: str, suites: bool) -> None:
    """`gate init` names test modules one by one where pytest collects none as configured, and a policy may name
    a part of a folder of tests: the helpers in that folder of tests run as the base has them (a head's edit
    there never runs, so its `import pytest` reaches nothing), but a package's own `testing` helpers, a
    package's modules beside its `tests.py` and the modules at the top are the library's, which run as the head
    has them and are read for what they do to pytest."""
    policy = POLICY.replace("paths: [tests]", f"paths: [{named}]")

    assert (framework_flags(PYTEST_TEST.replace("def test_div", "def div"), path, policy) == []) == suites


CORE = "def mul(a, b):\n    return a * b\n"
COLOCATED = "from calcpkg.core import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
@pytest.mark.parametrize(("path", "blocked"), [("calcpkg/core.py", True), ("calcpkg/test_core.py", False)])
def test_with_tests_beside_the_code_in_the_test_path_a_change_to_the_code_goes_to_a_human(
        tmp_path: Path, path: str, blocked: bool) -> None:
    """`tests.paths: [calcpkg]`: a change to the package's code is blocked for a human, one to its test file is
    a note (the base's version ran), as under tests/."""
    repo = calc_project(tmp_path / "repo", POLICY.replace("paths: [tests]", "paths: [calcpkg]"), extra_files={
        "calcpkg/__init__.py": "", "calcpkg/core.py": CORE, "calcpkg/test_core.py": COLOCATED})
    repo.commit("bot: mul", {path: (CORE if path.endswith("core.py") else COLOCATED).replace("a * b", "a + b")
                             .replace("== 6", "== 5")})

    verdict = score_repo(repo)

    assert suite_statuses(verdict)["calcpkg/test_core.py::test_mul"] == "passed"
    assert any(LIBRARY in reason for reason in verdict.blocked_reasons) is blocked
    assert verdict.accepted is not blocked
