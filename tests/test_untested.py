"""A repository with test files gated by a policy without `tests:`: the verdict says "no test of the repository
ran" beside its status, in the terminal, the JSON, the job summary, the status line and the PR comment, so that
a change its tests would have caught never reads as plainly accepted (docs/repository.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gate.cli import main
from gate.policy_file import load_policy
from gate.sources import gitcli
from gate.sources.gitrange import GitBase
from gate.sources.trust import untested
from gate.verdict import Verdict
from tests.fakegithub import FakeGitHub
from tests.fakegithub.scenario import REPO, Scenario
from tests.git_support import Repo

# simplejson's shape: the tests live inside the package, and `return None` breaks what they check.
CODE = "def dumps(value):\n    return str(value)\n"
REGRESSION = "def dumps(value):\n    return None\n"
TEST = "from simplejson import dumps\n\n\ndef test_dumps():\n    assert dumps(1) == '1'\n"
BASE = {"simplejson/__init__.py": CODE, "simplejson/tests/__init__.py": "",
        "simplejson/tests/test_dumps.py": TEST}
REASON = ("the base has 1 test file (simplejson/tests/test_dumps.py) and the policy has no tests: "
          "(`tests: {paths: [simplejson/tests]}` would run them)")


def _repo(root: Path, policy: str) -> Repo:
    repo = Repo(root)
    repo.commit("base", {**BASE, ".github/gate.yml": policy})
    repo.git("checkout", "-q", "-b", "bot")
    repo.commit("bot: return None", {"simplejson/__init__.py": REGRESSION})
    return repo


def _check(repo: Repo, tmp_path: Path) -> tuple[int, str, Verdict, str, str]:
    done = subprocess.run([sys.executable, "-P", "-m", "gate", "check", "--repo", str(repo.root), "--base", "main",
                           "--head", "bot", "--json", str(tmp_path / "v.json"), "--comment", str(tmp_path / "c.md"),
                           "--summary", str(tmp_path / "s.md")], capture_output=True, text=True, timeout=300)
    verdict = Verdict.from_dict(json.loads((tmp_path / "v.json").read_text()))
    return (done.returncode, done.stdout, verdict, (tmp_path / "c.md").read_text(),
            (tmp_path / "s.md").read_text())


def test_a_policy_without_tests_on_a_repository_with_tests_says_no_test_ran(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo", "budget: 3\n")

    code, terminal, verdict, comment, summary = _check(repo, tmp_path)

    # Said, not blocked: the maintainer's policy decides what runs; the verdict never hides that nothing did.
    assert code == 0 and verdict.accepted
    assert verdict.untested == REASON
    assert terminal.startswith("ACCEPTED, NO TEST OF THE REPOSITORY RAN  total 0 / budget 3\n")
    assert f"no test of the repository ran: {REASON}" in " ".join(terminal.split())  # (wrapped at 80 columns)
    for markdown in (comment, summary):
        first = markdown.splitlines()[0]
        assert first.startswith("⚠️ **gate: accepted, no test of the repository ran** at "), first
        assert "**No test of the repository ran:** the base has 1 test file" in markdown


def test_tests_pytest_does_not_collect_as_configured_are_said_too(tmp_path: Path) -> None:
    """decorator's shape: its tests are `src/tests/test.py`, a unittest module its CI runs as a script, which
    pytest's names (test_*.py, *_test.py) do not collect. A policy without tests then runs none of them, and the
    verdict says so, naming the paths that would run them (pytest collects a file named there; the helper
    defines no test)."""
    repo = Repo(tmp_path / "repo")
    repo.commit("base", {"simplejson/__init__.py": CODE, "src/tests/test.py": TEST, "src/tests/support.py": "",
                         ".github/gate.yml": "budget: 3\n"})
    repo.git("checkout", "-q", "-b", "bot")
    repo.commit("bot: return None", {"simplejson/__init__.py": REGRESSION})

    code, terminal, verdict, comment, _ = _check(repo, tmp_path)

    assert code == 0 and verdict.accepted
    assert verdict.untested == (
        "the base has 2 modules named like tests (src/tests/support.py, src/tests/test.py) that pytest does not "
        "collect as configured, and the policy has no tests (`tests: {paths: [src/tests/test.py]}` would run "
        "them: pytest collects a file named there whatever its name)")
    assert terminal.startswith("ACCEPTED, NO TEST OF THE REPOSITORY RAN")
    assert comment.startswith("⚠️ **gate: accepted, no test of the repository ran** at ")


def test_many_test_modules_pytest_does_not_collect_are_counted_not_all_named(tmp_path: Path) -> None:
    """Five unittest modules pytest's names miss (`tests/check_*.py`): the verdict counts them, lists three, and
    says how to run them rather than a `tests:` line as long as the folder."""
    repo = Repo(tmp_path / "repo")
    repo.commit("base", {"lib.py": "", **{f"tests/check_{n}.py": TEST for n in range(5)}})

    said = untested(GitBase(gitcli.Repo(repo.root).commit("main")), load_policy(None))

    assert said == ("the base has 5 modules named like tests (tests/check_0.py, tests/check_1.py, "
                    "tests/check_2.py and 2 more) that pytest does not collect as configured, and the policy has no "
                    "tests (naming each in `tests.paths` would run them: pytest collects a file named there whatever "
                    "its name)")


@pytest.mark.slow
def test_a_policy_with_tests_or_a_repository_without_tests_says_nothing_of_it(tmp_path: Path) -> None:
    with_tests = _repo(tmp_path / "suite", "budget: 3\ntests:\n  paths: [simplejson/tests]\n")
    without = Repo(tmp_path / "plain")
    without.commit("base", {"simplejson/__init__.py": CODE, ".github/gate.yml": "budget: 3\n"})
    without.git("checkout", "-q", "-b", "bot")
    without.commit("bot: a comment", {"simplejson/__init__.py": "# dumps\n" + CODE})

    suite = _check(with_tests, tmp_path)
    plain = _check(without, tmp_path)

    assert suite[0] == 1 and not suite[2].untested and "no test of the repository ran" not in suite[3]
    assert plain[0] == 0 and not plain[2].untested and plain[3].startswith("✅ **gate: accepted** at ")


def test_the_pr_comment_and_status_say_no_test_ran(fake: FakeGitHub, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    pr = Scenario(fake, tmp_path, {**BASE, ".github/gate.yml": "budget: 3\n"}, {"simplejson/__init__.py": REGRESSION})
    for key, value in pr.environment(workspace=True).items():
        monkeypatch.setenv(key, value)

    assert main(["ci"]) == 0

    repo = fake.repos[REPO]
    body = repo.comments[pr.number][0]["body"]
    assert body.startswith("⚠️ **gate: accepted, no test of the repository ran** at ")
    assert "**No test of the repository ran:**" in body
    assert [s["description"].split(":")[0] for s in repo.statuses] == ["accepted, no test of the repository ran"]
    assert [r["output"]["title"].split(":")[0] for r in repo.check_runs.values()] == [
        "accepted, no test of the repository ran"]
