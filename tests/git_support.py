"""A throwaway git repository for the tests that need one."""

from __future__ import annotations

import subprocess
from pathlib import Path


class Repo:
    """A throwaway repository driven through the git CLI, as a user would."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True)
        self.git("init", "-q", "-b", "main")
        # (as `git config user.name` and `user.email` would write them: two processes fewer for every repository)
        with (root / ".git" / "config").open("a", encoding="utf-8") as config:
            config.write("[user]\n\tname = Maintainer\n\temail = maintainer@example.com\n")

    def git(self, *args: str) -> str:
        done = subprocess.run(["git", *args], cwd=self.root, check=True, capture_output=True, text=True)
        return done.stdout.strip()

    def write(self, path: str, text: str) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    def commit(self, message: str, files: dict[str, str | None] | None = None) -> str:
        removed = [path for path, text in (files or {}).items() if text is None]
        written = {path: text for path, text in (files or {}).items() if text is not None}
        if removed:  # (one process for all the paths, not one each; first: a file may become a folder)
            self.git("rm", "-q", "--", *removed)
        for path, text in written.items():
            self.write(path, text)
        if written:
            self.git("add", "--", *written)
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")
