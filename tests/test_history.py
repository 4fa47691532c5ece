"""What the gate needs of a checkout before it scores a range: the history that holds the merge base, a
repository git agrees to read, and the policy under either of YAML's extensions. Each refusal names the fix."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from gate.sources import gitcli
from tests.fakegithub import FakeGitHub
from tests.fakegithub.scenario import Scenario
from tests.git_support import Repo

CALC = "def add(a, b):\n    return a + b\n"
# A file only main changes after the bot's branch forked: scoring from main's tip would charge its import.
MAIN_ONLY = "import subprocess\n\n\ndef run():\n    return subprocess.run\n"


def check(repo: Path, *extra: str) -> tuple[int, dict[str, Any] | None]:
    out = repo.parent / "verdict.json"
    out.unlink(missing_ok=True)
    code = main(["check", "--repo", str(repo), "--json", str(out), *extra])
    return code, json.loads(out.read_text()) if out.exists() else None


def forked(tmp_path: Path, policy: str = "budget: 0\n", name: str = ".github/gate.yml") -> Repo:
    """main: base, then a commit only main has; bot: one commit from base."""
    repo = Repo(tmp_path / "origin")
    repo.commit("base", {name: policy, "calc.py": CALC})
    repo.git("checkout", "-q", "-b", "bot")
    repo.commit("bot", {"calc.py": CALC + "\n\ndef sub(a, b):\n    return a - b\n"})
    repo.git("checkout", "-q", "main")
    repo.commit("main moves on", {"tools.py": MAIN_ONLY})
    repo.git("checkout", "-q", "bot")
    return repo


def shallow_clone(origin: Path, target: Path) -> Path:
    """Both tips, one commit deep each: what `actions/checkout` with its default `fetch-depth: 1` of two refs
    leaves; main is the clone's default branch."""
    subprocess.run(["git", "-C", str(origin), "checkout", "-q", "main"], check=True, capture_output=True)
    subprocess.run(["git", "clone", "-q", "--depth", "1", "--no-single-branch", f"file://{origin}", str(target)],
                   check=True, capture_output=True)
    subprocess.run(["git", "-C", str(target), "checkout", "-q", "bot"], check=True, capture_output=True)
    return target


def test_the_full_history_scores_what_the_bot_changed_only(tmp_path: Path) -> None:
    repo = forked(tmp_path)
    code, verdict = check(repo.root, "--base", "main", "--head", "bot")
    assert code == 0 and verdict is not None and verdict["total"] == 0


def test_a_shallow_clone_without_the_merge_base_is_refused_with_the_fix(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = forked(tmp_path)
    clone = shallow_clone(repo.root, tmp_path / "clone")
    code, verdict = check(clone, "--base", "origin/main", "--head", "bot")
    err = capsys.readouterr().err
    assert code == 3 and verdict is None
    assert "shallow" in err and "fetch-depth: 0" in err and "Traceback" not in err
    # Nor with the base found by default (origin/HEAD is main's tip there).
    code, _ = check(clone)
    assert code == 3 and "fetch-depth: 0" in capsys.readouterr().err


def test_unrelated_histories_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = forked(tmp_path)
    repo.git("checkout", "-q", "--orphan", "stranger")
    repo.commit("another project", {"calc.py": CALC})
    code, verdict = check(repo.root, "--base", "main", "--head", "stranger")
    err = capsys.readouterr().err
    assert code == 2 and verdict is None and "unrelated histories" in err


def test_gate_ci_refuses_a_shallow_checkout_holding_both_tips(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    pr = Scenario(fake, tmp_path, {".github/gate.yml": "budget: 0\n", "calc.py": CALC},
                  {"util.py": CALC})
    clone = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", "--no-single-branch", f"file://{pr.workspace}",
                    str(clone)], check=True, capture_output=True)
    pr.workspace = clone
    for key, value in pr.environment().items():
        monkeypatch.setenv(key, value)
    assert main(["ci"]) == 3
    assert "fetch-depth: 0" in capsys.readouterr().err
    [status] = fake.repos["octo/app"].statuses
    assert status["state"] == "failure" and status["sha"] == pr.head_sha


def test_the_policy_saved_as_gate_yaml_is_the_policy(tmp_path: Path) -> None:
    """budget 0 in .github/gate.yaml: a denied import (3 points, within the default preset's budget of 3)
    blocks."""
    repo = forked(tmp_path, name=".github/gate.yaml")
    repo.commit("import", {"calc.py": "import subprocess\n" + CALC})
    code, verdict = check(repo.root, "--base", "main", "--head", "bot")
    assert verdict is not None and code == 1 and verdict["budget"] == 0
    assert verdict["policy_source"].startswith(".github/gate.yaml@")


def test_editing_gate_yaml_or_adding_gate_yml_beside_it_is_blocked(tmp_path: Path) -> None:
    for name, edited in ((".github/gate.yaml", ".github/gate.yaml"), (".github/gate.yaml", ".github/gate.yml"),
                         (".github/gate.yml", ".github/gate.yaml")):
        repo = forked(tmp_path / name.replace("/", "_") / edited.replace("/", "_"), name=name)
        repo.commit("budget", {edited: "budget: 100\n"})
        code, verdict = check(repo.root, "--base", "main", "--head", "bot")
        assert code == 1 and verdict is not None
        assert any(edited in reason for reason in verdict["blocked_reasons"]), verdict["blocked_reasons"]


def test_both_names_on_the_base_are_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = Repo(tmp_path / "repo")
    repo.commit("base", {".github/gate.yml": "budget: 0\n", ".github/gate.yaml": "budget: 9\n", "calc.py": CALC})
    repo.git("checkout", "-q", "-b", "bot")
    repo.commit("bot", {"util.py": CALC})
    code, _ = check(repo.root)
    err = capsys.readouterr().err
    assert code == 2 and ".github/gate.yml" in err and ".github/gate.yaml" in err and "keep one" in err


def test_gate_policy_check_reads_gate_yaml_and_refuses_both(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "gate.yaml").write_text("budget: lots\n")
    monkeypatch.chdir(tmp_path)
    assert main(["policy", "check"]) == 2
    assert ".github/gate.yaml" in capsys.readouterr().err
    (tmp_path / ".github" / "gate.yaml").write_text("budget: 0\n")
    assert main(["policy", "check"]) == 0
    assert "ok: .github/gate.yaml" in capsys.readouterr().out
    (tmp_path / ".github" / "gate.yml").write_text("budget: 0\n")
    assert main(["policy", "check"]) == 2
    assert "keep one" in capsys.readouterr().err


@pytest.fixture
def foreign(tmp_path: Path) -> Path:
    """A checkout owned by another uid, as in a CI container that runs as root over the runner's files."""
    if os.geteuid() != 0:
        pytest.skip("chown to another uid needs root")
    repo = forked(tmp_path)
    for parent, dirs, files in os.walk(repo.root):
        for name in (*dirs, *files):
            os.lchown(os.path.join(parent, name), 4242, 4242)
    os.lchown(repo.root, 4242, 4242)
    return repo.root


def test_a_checkout_owned_by_another_uid_passes_gits_own_reason_through(
        foreign: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    home = foreign.parent / "home"  # no global safe.directory of this machine's user may lift the refusal
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    code, verdict = check(foreign)
    err = capsys.readouterr().err
    assert code == 3 and verdict is None
    assert "dubious ownership" in err and "safe.directory" in err and "unknown revision" not in err
    # git's own fix works, and then so does the gate.
    subprocess.run(["git", "config", "--global", "--add", "safe.directory", str(foreign)], check=True)
    code, verdict = check(foreign, "--base", "main")
    assert code == 0 and verdict is not None


def test_gate_ci_on_a_checkout_owned_by_another_uid_says_why(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    if os.geteuid() != 0:
        pytest.skip("chown to another uid needs root")
    pr = Scenario(fake, tmp_path, {".github/gate.yml": "budget: 0\n", "calc.py": CALC}, {"util.py": CALC})
    shutil.chown(pr.workspace, 4242, 4242)
    for parent, dirs, files in os.walk(pr.workspace):
        for name in (*dirs, *files):
            os.lchown(os.path.join(parent, name), 4242, 4242)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for key, value in pr.environment().items():
        monkeypatch.setenv(key, value)
    assert main(["ci"]) == 3
    err = capsys.readouterr().err
    assert "dubious ownership" in err and "safe.directory" in err and "Traceback" not in err


def test_a_version_from_git_is_the_one_setuptools_scm_gives(tmp_path: Path) -> None:
    """The base's build gets it as SETUPTOOLS_SCM_PRETEND_VERSION (an export has no .git to read it from)."""

    from gate.sources.gitrange import scm_version

    repo = Repo(tmp_path / "repo")
    first = repo.commit("one", {"a.py": "x = 1\n"})
    second = repo.commit("two", {"a.py": "x = 2\n"})
    handle = gitcli.Repo(repo.root)
    assert scm_version(handle, handle.commit(second)) == f"0.1.dev2+g{second[:9]}"
    repo.git("tag", "v1.4.0", first)
    assert scm_version(handle, handle.commit(first)) == "1.4.0"
    assert scm_version(handle, handle.commit(second)) == f"1.4.1.dev1+g{second[:9]}"
    # python-dateutil's tags: a post release, a release candidate, a dev release (the last number bumped, the
    # dev one's release): read as 0.1.dev, its own build's version conflicted with what its tests require.
    repo.git("tag", "-d", "v1.4.0")
    for tag, exact, after in (("2.9.0.post0", "2.9.0.post0", "2.9.0.post1"), ("v1.5rc1", "1.5rc1", "1.5rc2"),
                              ("1.6.dev0", "1.6.dev0", "1.6")):
        repo.git("tag", "-f", tag, first)
        assert scm_version(handle, handle.commit(first)) == exact
        assert scm_version(handle, handle.commit(second)) == f"{after}.dev1+g{second[:9]}"
        repo.git("tag", "-d", tag)
