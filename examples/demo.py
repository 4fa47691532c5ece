"""The gate end to end on a small example repository: offline, no token, a few seconds.

It builds a repository in a temporary directory: a base commit by the maintainer, with a policy
(`.github/gate.yml`), a visible case and a hidden one (`.github/gate-hidden.yml`); then a commit by a bot
on a branch, which adds a forbidden import and gets the hidden case wrong. `gate check` scores the bot's
range the way the PR gate would, and this script prints the terminal report, then the PR comment.

    .venv/bin/python examples/demo.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from gate.cli import main

POLICY = """\
# The maintainer's policy: the default penalty schedule, a budget of 3, and one visible case.
budget: 3
cases:
  - name: adds small numbers
    function: "calc:add"
    args: [2, 3]
    expect: 5
"""
HIDDEN = """\
# Cases the bot never sees: read from the base commit, never copied where candidate code runs.
cases:
  - name: adds large numbers
    function: "calc:add"
    args: [1000, 2345]
    expect: 3345
"""
BASE_CALC = '''\
def add(a, b):
    """The sum of a and b."""
    return a + b
'''
BOT_CALC = '''\
import os


def add(a, b):
    """The sum of a and b, with a "fast path" the bot invented."""
    if a > 100:
        return int(os.environ.get("ADD_CACHE", "0")) + b
    return a + b
'''


def git(repo: Path, *args: str) -> None:
    """Run git in `repo` with a fixed identity, ignoring the user's global configuration."""
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    identity = ["-c", "user.name=demo", "-c", "user.email=demo@example.com", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", *identity, *args], cwd=repo, env=env, check=True, capture_output=True)


def build(repo: Path) -> None:
    """The base commit on `main`, and the bot's commit on `bot/faster-add`."""
    (repo / ".github").mkdir(parents=True)
    (repo / ".github" / "gate.yml").write_text(POLICY)
    (repo / ".github" / "gate-hidden.yml").write_text(HIDDEN)
    (repo / "calc.py").write_text(BASE_CALC)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "calc: add()")
    git(repo, "checkout", "-q", "-b", "bot/faster-add")
    (repo / "calc.py").write_text(BOT_CALC)
    git(repo, "commit", "-q", "-am", "calc: faster add() [bot]")


def run() -> int:
    """Build the example, score it with `gate check`, print both reports; returns gate's exit code."""
    with tempfile.TemporaryDirectory(prefix="gate-demo-") as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        build(repo)
        comment = Path(tmp) / "comment.md"
        print(f"$ gate check --repo {repo} --comment comment.md   # base: merge base with main; head: HEAD\n")
        code = main(["check", "--repo", str(repo), "--comment", str(comment)])
        print(f"\nexit code {code} (0 accepted, 1 blocked)\n")
        print("The PR comment (GitHub-flavoured Markdown):\n")
        print(comment.read_text())
    return code


if __name__ == "__main__":
    run()
    sys.exit(0)
