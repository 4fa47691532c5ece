"""The repository as the gate finds it with the `git` program (gate/sources/gitcli.py): where git finds it, what
the sandbox is told to hide, what a range with no merge base says, and no git process left behind."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gate.errors import BadInput
from gate.sources import gitcli
from gate.sources.gitrange import subject_from_range
from tests.git_support import Repo

POLICY = "budget: 1\ncases:\n  - name: adds\n    function: \"calc:add\"\n    args: [2, 3]\n    expect: 5\n"
CALC = "def add(a, b):\n    return a + b\n"


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    r = Repo(tmp_path / "repo")
    r.commit("base", {".github/gate.yml": POLICY, "calc.py": CALC})
    r.git("checkout", "-q", "-b", "bot")
    r.commit("bot", {"calc.py": CALC + "# tidy\n"})
    return r


def test_a_folder_inside_a_checkout_is_the_checkout_only_when_searched(repo: Repo) -> None:
    # A folder of the checkout with a `.git` of its own that is no repository (an empty folder, a broken file).
    (repo.root / "empty" / ".git").mkdir(parents=True)
    (repo.root / "broken").mkdir()
    (repo.root / "broken" / ".git").write_text("not a gitdir line\n")
    for folder in ("empty", "broken"):
        with pytest.raises(gitcli.NotARepository):
            gitcli.Repo(repo.root / folder)
    # Searched (`gate check --repo`), the folder with an empty `.git` is in the checkout above: the folder the
    # sandbox hides is the checkout's top, not the folder the gate was pointed at. git stops at a broken one.
    with subject_from_range(repo.root / "empty", "main", "bot") as found:
        assert str(repo.root) in found.private and str(repo.root / "empty") not in found.private
    with pytest.raises(BadInput, match="not a git repository"):
        subject_from_range(repo.root / "broken", "main", "bot").__enter__()


def test_a_checkouts_git_folder_stands_for_the_checkout(repo: Repo) -> None:
    found = gitcli.Repo(repo.root / ".git")
    assert (found.working_dir, found.working_tree_dir, found.bare) == (str(repo.root), str(repo.root), False)
    assert found.commit("bot").hexsha == repo.git("rev-parse", "bot")


def test_a_bare_repository_has_no_worktree(repo: Repo, tmp_path: Path) -> None:
    subprocess.run(["git", "clone", "-q", "--bare", str(repo.root), str(tmp_path / "bare.git")], check=True)
    found = gitcli.Repo(tmp_path / "bare.git")
    assert found.bare and found.working_tree_dir is None and found.git_dir == str(tmp_path / "bare.git")
    with subject_from_range(tmp_path / "bare.git", "main", "bot") as scored:
        assert [f.path for f in scored.subject.files] == ["calc.py"]


def test_unrelated_histories_are_a_clear_error_whatever_git_prints(repo: Repo,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    repo.git("checkout", "-q", "--orphan", "other")
    repo.commit("unrelated", {"calc.py": CALC})
    monkeypatch.setenv("GIT_TRACE", "1")  # git then writes its trace on stderr, also of a merge-base that finds none
    with pytest.raises(BadInput, match="unrelated histories"):
        subject_from_range(repo.root, "main", "other").__enter__()


def _children() -> list[str]:
    """This process's child processes (every thread's)."""
    found = []
    for task in Path("/proc/self/task").iterdir():
        found += (task / "children").read_text().split()
    return found


def test_a_range_that_stops_on_an_error_leaves_no_git_process(repo: Repo) -> None:
    # `git status` starts as the range is opened; an unknown revision then stops the range.
    before = _children()
    with pytest.raises(BadInput, match="unknown revision"):
        subject_from_range(repo.root, "main", "no-such-branch").__enter__()
    assert _children() == before


def test_gate_init_needs_no_git(tmp_path: Path) -> None:
    # A checkout on a machine with only Python: `gate init` lists the files itself.
    checkout = Repo(tmp_path / "checkout")
    test = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    checkout.commit("base", {"pyproject.toml": '[project]\nname = "calc"\n', "calc.py": CALC,
                             "tests/test_calc.py": test})
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    done = subprocess.run([sys.executable, "-m", "gate", "init", "--print"], cwd=checkout.root, capture_output=True,
                          text=True, check=False, env={"PATH": str(bin_dir), "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert "tests" in done.stdout


def test_without_git_a_repository_is_found_and_says_git_cannot_run(repo: Repo, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # (no git there)
    found = gitcli.Repo(repo.root)
    with pytest.raises(gitcli.GitError) as raised:
        found.commit("main")
    assert raised.value.status == 127 and "git cannot run" in raised.value.stderr
    with pytest.raises(gitcli.GitError, match="git cannot run"):
        found.layout  # noqa: B018


def test_a_repository_missing_an_object_is_a_gate_failure_with_gits_words(repo: Repo, tmp_path: Path) -> None:
    # A checkout that lost the base's policy blob (a broken clone, a cache restored half-way): the gate cannot read
    # the range, says what git said, and exits 3 as any failure to do its job, never as a bug of its own.
    blob = repo.git("rev-parse", "main:.github/gate.yml")
    (repo.root / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    done = subprocess.run([sys.executable, "-m", "gate", "check", "--repo", str(repo.root), "--base", "main",
                           "--head", "bot"], capture_output=True, text=True, check=False, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert f"gate: error: git cat-file --batch exited with 0: git cat-file gave {blob} missing" in done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr


def test_a_full_sha_is_looked_up_once_a_repository_and_names_its_commit(repo: Repo, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # A PR's verdict names its base and head by SHA from several places: git is asked once for each. An annotated
    # tag's SHA names the commit it tags; a SHA the repository lacks is looked up (and refused) every time.
    repo.git("tag", "-a", "-m", "release", "v1", "main")
    tag, commit = repo.git("rev-parse", "v1"), repo.git("rev-parse", "main")
    found = gitcli.Repo(repo.root)
    assert found.commit(tag).hexsha == commit and found.commit(commit).hexsha == commit
    missing = "0" * 40
    with pytest.raises(gitcli.GitError):
        found.commit(missing)
    again = gitcli.Repo(repo.root / ".git")  # (another handle on the same repository)
    monkeypatch.setenv("PATH", str(tmp_path))  # no git from here on
    assert again.commit(tag).hexsha == commit and again.commit(commit).hexsha == commit
    with pytest.raises(gitcli.GitError, match="git cannot run"):
        again.commit(missing)
    with pytest.raises(gitcli.GitError, match="git cannot run"):
        again.commit("main")
