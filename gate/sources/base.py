"""The small protocol every change source speaks: a reader of the base commit plus the list of changes.

A git repository (`gitrange.py`) and the GitHub API at two SHAs (`api.py`) each give a `BaseReader` and a
tuple of `Change`; `trust.read_trusted` turns them into everything the gate takes from the base, the same way
for both. What the engine and the reporters get from a source is a `ScoreInput`.
"""

from __future__ import annotations

import re
import time
from typing import Literal, Protocol

import msgspec

from gate.checks.trees import TreeCache
from gate.policy.model import Policy
from gate.report.templating import Overrides
from gate.subject import Subject

ChangeStatus = Literal["added", "modified", "renamed", "deleted"]

_HUNK = re.compile(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


class BaseReader(Protocol):
    """Reads the base commit, the one place the gate trusts."""

    sha: str  # the base commit's full SHA

    def read(self, path: str) -> str | None:
        """The text of the regular file at `path`, or None when the base has none there."""

    def read_folder(self, folder: str) -> dict[str, str]:
        """The texts of the regular files directly inside `folder`, by name; {} when there is no such folder."""

    def paths(self) -> tuple[str, ...]:
        """The paths of every file the base holds (where its test files are: gate/suite/discovery.py)."""


class Change(msgspec.Struct, frozen=True):
    """One file the change adds, modifies, renames or deletes."""

    status: ChangeStatus
    path: str  # at the head; the base's path for a deleted file
    old_path: str | None = None  # at the base, for a renamed or modified file
    # Line numbers (1-based) the change adds at `path`; None when the whole file counts (a new file, a diff
    # the source could not give).
    added_lines: frozenset[int] | None = None
    data: bytes | None = None  # the head's bytes; None when deleted or not a regular file at the head

    @property
    def paths(self) -> tuple[str, ...]:
        """Every path the change touches: the base's and the head's."""
        return tuple(dict.fromkeys(p for p in (self.old_path, self.path) if p))

    @property
    def crafted(self) -> bool:
        """Whether its path at the head is one no checkout makes (`tests/../x`, `/x`, `a//b`): a crafted tree's."""
        return any(part in ("", ".", "..") for part in self.path.split("/"))


class ScoreInput(msgspec.Struct, frozen=True):
    """What a source gives the engine and the reporters."""

    subject: Subject
    policy: Policy
    overrides: Overrides  # report templates from the base commit
    reproduce: str  # the command that reproduces the verdict locally
    # Places no run of the code under score may see: the repository's working tree and git directories (they
    # hold the hidden cases, and maybe a token in .git/config), a local hidden-cases file.
    private: tuple[str, ...] = ()
    # When the source started (time.perf_counter()): the verdict's total time counts from there.
    started: float = msgspec.field(default_factory=time.perf_counter)
    trees: TreeCache = msgspec.field(default_factory=TreeCache)  # the syntax trees the source built, for the checks


def added_lines(patch: str) -> frozenset[int]:
    """The new-file line numbers of the `+` lines of one file's unified diff, with or without context (the
    API's `patch`, or `git diff --unified=0`); file headers before the first hunk are not lines."""
    added: set[int] = set()
    line = 0
    in_hunk = False
    # Rows end at LF only, as git writes them: `str.splitlines` would also end one at U+001C, U+2028 or a form
    # feed inside a line, and every added line after it would be counted one off, onto lines the change kept.
    for row in patch.split("\n"):
        hunk = _HUNK.match(row)
        if hunk:
            line, in_hunk = int(hunk.group(1)), True
        elif not in_hunk:
            continue
        elif row.startswith("+"):
            added.add(line)
            line += 1
        elif not row.startswith(("-", "\\")):
            line += 1
    return frozenset(added)
