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
        self.git("config", "user.name", "Maintainer")
        self.git("config", "user.email", "maintainer@example.com")

    def git(self, *args: str) -> str:
        done = subprocess.run(["git", *args], cwd=self.root, check=True, capture_output=True, text=True)
        return done.stdout.strip()

    def write(self, path: str, text: str) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    def commit(self, message: str, files: dict[str, str | None] | None = None) -> str:
        for path, text in (files or {}).items():
            if text is None:
                self.git("rm", "-q", path)
            else:
                self.write(path, text)
                self.git("add", path)
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")
