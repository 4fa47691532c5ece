"""Places the code under score must not read: the repository being scored (its hidden cases file, its
.git/config) even when `gate check --repo` names it from elsewhere and it sits outside /tmp, a world-readable
hidden cases file that `gate score` reads, and what a symlink in the bot's commit points to."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.redteam_support import (
    HIDDEN,
    HIDDEN_PATH,
    HIDDEN_SUM,
    assert_hidden_values_absent,
    assert_not_passed,
    bot_repo,
    gate,
    healthy_after,
    needs_root,
    python_reply,
    score,
)

TOKEN = "ghp_" + "5" * 36

# add(a, b) reads the named files and returns the first `expect: N` or token it finds, else a wrong answer.
READ = '''
import re

def add(a, b):
    for path in {paths!r}:
        try:
            text = open(path).read()
        except OSError:
            continue
        found = re.findall(r"expect: (\\d+)", text)
        if found:
            return int(found[-1])
        if "ghp_" in text:
            raise ValueError(text[text.index("ghp_"):][:60])
    return a - b
'''


@pytest.fixture
def outside() -> Iterator[Path]:
    """A world-readable directory outside /tmp (which every run's own tmpfs covers anyway)."""
    parent = next((p for p in ("/srv", "/opt", "/var/lib") if os.access(p, os.W_OK)), None)
    if parent is None:
        pytest.skip("no writable directory outside /tmp")
    place = Path(tempfile.mkdtemp(prefix="gate-redteam-", dir=parent))
    place.chmod(0o755)
    yield place
    shutil.rmtree(place)


def world_readable(root: Path) -> None:
    for path in (root, *root.rglob("*")):
        path.chmod(path.stat().st_mode | 0o005)


@needs_root
@pytest.mark.slow
def test_check_hides_the_repository_it_scores_even_from_elsewhere(outside: Path, tmp_path: Path) -> None:
    root = outside / "repo"
    code = READ.format(paths=[str(root / HIDDEN_PATH), str(root / ".git" / "config")])
    repo = bot_repo(root, code)
    repo.git("config", "http.extraheader", f"AUTHORIZATION: basic {TOKEN}")
    repo.git("checkout", "-q", "main", "--", HIDDEN_PATH)  # the base's copy in the worktree, too
    world_readable(outside)
    run = gate(["check", "--repo", str(root), "--base", "main", "--head", "bot"], tmp_path, cwd=tmp_path)
    assert_not_passed(run, "adds", "hidden case 1")
    assert run.case("adds")["detail"] == "expected int 5, got int -1", run.case("adds")
    assert TOKEN not in run.reports
    healthy_after(run, repo, tmp_path)


@needs_root
def test_score_hides_a_world_readable_hidden_cases_file(outside: Path, tmp_path: Path) -> None:
    hidden = outside / "hidden.yml"
    hidden.write_text(re.sub(r'function: "calc:add"\n\s*', "", HIDDEN))
    (outside / "hidden.yml~").write_text(hidden.read_text())  # an editor's backup beside it
    world_readable(outside)
    task = "name: add\nfunction: add\ncases:\n  - args: [2, 3]\n    expect: 5\n"
    reply = python_reply(READ.format(paths=[str(hidden), str(hidden) + "~"]))
    run = score(reply, tmp_path, task, env={"GATE_HIDDEN_CASES": str(hidden)})
    assert run.code == 1 and run.case("hidden case 1")["status"] == "failed", run.reports
    assert run.case("hidden case 1")["detail"] == "returned int"
    assert_hidden_values_absent(run)


@needs_root
def test_check_keeps_the_bases_hidden_cases_and_hides_the_file_the_variable_names(
        outside: Path, tmp_path: Path) -> None:
    """GATE_HIDDEN_CASES set by a workflow (maybe to "none") neither replaces the base's hidden cases in a range
    nor becomes readable by the code under score."""
    planted = outside / "hidden.yml"
    planted.write_text("cases: []\n# expect: 777780\n")
    world_readable(outside)
    repo = bot_repo(tmp_path / "repo", READ.format(paths=[str(planted)]))
    run = gate(["check", "--repo", str(repo.root), "--base", "main", "--head", "bot"], tmp_path,
               env={"GATE_HIDDEN_CASES": str(planted)}, cwd=repo.root)
    assert_not_passed(run, "hidden case 1")  # the base's hidden case ran, and the planted file was unseen
    assert run.case("hidden case 1")["detail"] == "returned int"


@needs_root
@pytest.mark.parametrize("variable", ["RUNNER_TEMP", "GITHUB_WORKSPACE"])
def test_a_runner_directory_holding_tmpdir_stays_out_of_reach(variable: str, tmp_path: Path) -> None:
    """TMPDIR inside RUNNER_TEMP (or the workspace): the runner's step scripts beside it are still not in a
    run's root, which holds only what the sandbox allows."""
    place = tmp_path / "runner"
    (place / "tmp").mkdir(parents=True)
    (place / "step.sh").write_text(f"export PASSWORD={TOKEN}\n")
    world_readable(tmp_path)
    repo = bot_repo(tmp_path / "repo", READ.format(paths=[str(place / "step.sh")]))
    run = gate(["check", "--repo", str(repo.root), "--base", "main", "--head", "bot"], tmp_path,
               env={variable: str(place), "TMPDIR": str(place / "tmp")}, cwd=repo.root)
    assert_not_passed(run, "adds")
    assert run.case("adds")["detail"] == "expected int 5, got int -1", run.case("adds")
    assert TOKEN not in run.reports


@pytest.mark.slow
def test_symlinks_in_the_bots_commit_lead_nowhere(tmp_path: Path) -> None:
    targets = {"leak.yml": f"../{HIDDEN_PATH}", "shadow": "/etc/shadow", "up": "..", "abs": str(tmp_path)}
    code = READ.format(paths=["leak.yml", "shadow", f"up/repo/{HIDDEN_PATH}", f"abs/repo/{HIDDEN_PATH}",
                              "pkg/leak.yml"])
    repo = bot_repo(tmp_path / "repo", code)
    for name, target in {**targets, "pkg/leak.yml": f"../../{HIDDEN_PATH}"}.items():
        (repo.root / name).parent.mkdir(exist_ok=True)
        os.symlink(target, repo.root / name)
        repo.git("add", name)
    repo.git("commit", "-q", "-m", "bot: links")
    run = gate(["check", "--repo", str(repo.root), "--base", "main", "--head", "bot"], tmp_path,
               cwd=repo.root)
    assert_not_passed(run, "adds", "hidden case 1")
    assert run.case("adds")["detail"] == "expected int 5, got int -1", run.case("adds")
    assert "not exported" in run.verdict["facts"] and "leak.yml" in run.verdict["facts"]["not exported"]
    assert str(HIDDEN_SUM) not in run.reports
    healthy_after(run, repo, tmp_path)
