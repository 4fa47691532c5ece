"""A bot commit that touches what the gate reads from the base (the policy, the hidden cases) is blocked for a
human whatever its score, however it touches it; and the base's policy is the one that scores it."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.git_support import Repo
from tests.redteam_support import HIDDEN_PATH, HONEST, bot_repo, check, healthy_after

LAX = "budget: 100\ncases: []\n"
EASY_HIDDEN = "cases: []\n"


def _symlink(repo: Repo, path: str, target: str) -> None:
    (repo.root / path).unlink()
    os.symlink(target, repo.root / path)
    repo.git("add", path)


EDITS: dict[str, Callable[[Repo], object]] = {
    "policy loosened": lambda r: r.write(".github/gate.yml", LAX),
    "hidden cases emptied": lambda r: r.write(HIDDEN_PATH, EASY_HIDDEN),
    "policy deleted": lambda r: r.git("rm", "-q", ".github/gate.yml"),
    "hidden cases renamed away": lambda r: r.git("mv", HIDDEN_PATH, ".github/old-cases.yml"),
    "hidden cases replaced by a symlink": lambda r: _symlink(r, HIDDEN_PATH, "/dev/null"),
    "policy replaced by a symlink": lambda r: _symlink(r, ".github/gate.yml", "../README.md"),
    "hidden cases made executable": lambda r: (r.root / HIDDEN_PATH).chmod(0o755),
}


@pytest.mark.slow
@pytest.mark.parametrize("edit", sorted(EDITS))
def test_touching_what_the_base_governs_is_blocked(tmp_path: Path, edit: str) -> None:
    # The code itself is honest: only the edit can block it.
    repo = bot_repo(tmp_path / "repo", HONEST + "\n\ndef sub(a, b):\n    return a - b\n")
    EDITS[edit](repo)
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", f"bot: {edit}")
    run = check(repo, tmp_path)
    assert run.code == 1 and not run.verdict["accepted"], run.reports
    assert run.verdict["blocked_reasons"], run.verdict
    assert run.verdict["budget"] == 1  # the base's policy, not the bot's
    assert [c["name"] for c in run.verdict["cases"]] == ["adds", "hidden case 1"]
    healthy_after(run, repo, tmp_path)


def test_an_edit_undone_in_a_later_commit_changes_nothing(tmp_path: Path) -> None:
    """What counts is what the range changes: a policy edited and restored is not a change to review."""
    repo = bot_repo(tmp_path / "repo", HONEST + "\n\ndef sub(a, b):\n    return a - b\n")
    original = (repo.root / ".github/gate.yml").read_text()
    repo.commit("bot: loosen", {".github/gate.yml": LAX})
    repo.commit("bot: restore", {".github/gate.yml": original})
    run = check(repo, tmp_path)
    assert run.code == 0 and not run.verdict["blocked_reasons"], run.reports
