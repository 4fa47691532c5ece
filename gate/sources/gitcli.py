"""The `git` program, as the gate runs it on a local repository: commands, their output, objects by SHA.

GitPython would do this, at a price every verdict pays: importing it takes about 50 ms (a sixth of a PR
verdict's fixed part, docs/benchmarks.md), and a range needs a dozen git commands, which GitPython only runs
as this module does. So the range and the PR gate reach git here; `gate replay` still walks history with
GitPython. As GitPython does, every command runs in the repository's top folder with git's messages in
English (LC_ALL=C), its output decoded as UTF-8 with undecodable bytes kept as lone surrogates (a file name
may be any bytes), less one trailing newline.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import IO


class GitError(Exception):
    """A git command that failed: its exit status and what git printed on its standard error."""

    def __init__(self, args: Sequence[str], status: int, stderr: str) -> None:
        super().__init__(f"git {' '.join(args)} exited with {status}: {stderr.strip()}")
        self.status = status
        self.stderr = stderr


class NotARepository(Exception):
    """A path that is no git repository (nor inside one, when the folders above it were searched)."""


def available() -> bool:
    """Whether a `git` program is on PATH."""
    return shutil.which("git") is not None


@dataclass(frozen=True)
class Commit:
    """A commit of `repo`, by its full SHA (equal to another of the same SHA)."""

    repo: Repo = field(compare=False, repr=False)
    hexsha: str

    @property
    def tree_sha(self) -> str:
        """The SHA of the commit's tree."""
        return self.repo.run("rev-parse", f"{self.hexsha}^{{tree}}")


class Repo:
    """A local repository: a worktree (its top folder holds `.git`) or a bare one. Opening it runs nothing;
    the first command says whether git will read it (`layout`)."""

    def __init__(self, path: str | os.PathLike[str], search_parent_directories: bool = False) -> None:
        start = Path(path)
        if not start.exists():
            raise NotARepository(f"{path}: no such file or folder")
        folders = [start, *start.absolute().parents] if search_parent_directories else [start]
        found = next((folder for folder in folders if _holds_git(folder)), None)
        if found is None:
            raise NotARepository(f"{path}: not a git repository")
        self.working_dir = str(found.absolute())
        self._lock = threading.Lock()
        self._objects: subprocess.Popen[bytes] | None = None

    @cached_property
    def layout(self) -> tuple[bool, str, str]:
        """(bare, git directory, common directory), from git: GitError when git refuses the repository (one
        owned by another uid: "detected dubious ownership")."""
        bare, git_dir, common = self.run("rev-parse", "--is-bare-repository", "--absolute-git-dir",
                                         "--git-common-dir").split("\n")
        return bare == "true", git_dir, str((Path(self.working_dir) / common).resolve())

    @property
    def bare(self) -> bool:
        return self.layout[0]

    @property
    def git_dir(self) -> str:
        return self.layout[1]

    @property
    def common_dir(self) -> str:
        return self.layout[2]

    @property
    def working_tree_dir(self) -> str | None:
        return None if self.bare else self.working_dir

    def run(self, *args: str, config: Sequence[str] = ()) -> str:
        """What `git ARGS` printed (`config`: `-c NAME=VALUE` settings for that command). GitError when it
        fails."""
        return self.run_bytes(*args, config=config).decode("utf-8", "surrogateescape")

    def run_bytes(self, *args: str, config: Sequence[str] = ()) -> bytes:
        """`run`, undecoded."""
        command = _command(args, config)
        done = subprocess.run(command, cwd=self.working_dir, env=_environment(), stdin=subprocess.DEVNULL,
                              capture_output=True, check=False)
        if done.returncode != 0:
            raise GitError(command[1:], done.returncode, done.stderr.decode("utf-8", "replace"))
        return done.stdout.removesuffix(b"\n")

    def start(self, *args: str, stdin: IO[bytes] | None = None) -> Started:
        """`git ARGS` started, reading `stdin` (nothing when None), its output to read as it comes."""
        command = _command(args, ())
        process = subprocess.Popen(command, cwd=self.working_dir, env=_environment(),
                                   stdin=stdin if stdin is not None else subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        return Started(command[1:], process)

    def commit(self, ref: str) -> Commit:
        """The commit `ref` names, in all of git's revision syntax. GitError when it names none."""
        return Commit(self, self.run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"))

    def merge_base(self, one: Commit, other: Commit) -> list[Commit]:
        """Their best common ancestor, or none (unrelated histories)."""
        try:
            found = self.run("merge-base", one.hexsha, other.hexsha)
        except GitError as exc:
            if exc.status == 1 and not exc.stderr.strip():
                return []
            raise
        return [Commit(self, found)]

    def config(self, name: str) -> str | None:
        """The value of the setting `name` (`remote.origin.url`), None when it is not set."""
        try:
            return self.run("config", "--get", name)
        except GitError as exc:
            if exc.status == 1:
                return None
            raise

    def blob(self, sha: str) -> bytes:
        """The bytes of the object `sha`, from one `git cat-file --batch` this repository keeps for every read
        (one process, however many files the gate reads)."""
        with self._lock:
            if self._objects is None:
                self._objects = subprocess.Popen(_command(("cat-file", "--batch"), ()), cwd=self.working_dir,
                                                  env=_environment(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                  stderr=subprocess.DEVNULL)
                weakref.finalize(self, _stop, self._objects)
            assert self._objects.stdin is not None and self._objects.stdout is not None
            self._objects.stdin.write(f"{sha}\n".encode())
            self._objects.stdin.flush()
            return read_object(self._objects.stdout, sha)

    def close(self) -> None:
        """End the process `blob` keeps, if any."""
        with self._lock:
            if self._objects is not None:
                _stop(self._objects)
                self._objects = None


@dataclass(frozen=True)
class Started:
    """A git command going on: its output (`stdout`) to read, then `wait`."""

    args: Sequence[str]
    process: subprocess.Popen[bytes]

    @property
    def stdout(self) -> IO[bytes]:
        assert self.process.stdout is not None
        return self.process.stdout

    def wait(self) -> None:
        """Wait for its end; GitError when it failed."""
        assert self.process.stderr is not None
        said = self.process.stderr.read()
        self.process.stderr.close()
        if self.process.wait() != 0:
            raise GitError(self.args, self.process.returncode, said.decode("utf-8", "replace"))


def read_object(out: IO[bytes], sha: str) -> bytes:
    """One object from `git cat-file --batch`'s output: its header, its bytes and the newline after them."""
    header = out.readline().split()
    if len(header) != 3 or header[0].decode() != sha:
        said = b" ".join(header).decode(errors="replace") or "nothing"
        raise GitError(("cat-file", "--batch"), 0, f"git cat-file gave {said} for the object {sha}")
    data = out.read(int(header[2]))
    out.read(1)
    return data


def _command(args: Sequence[str], config: Sequence[str]) -> list[str]:
    return ["git", *(part for setting in config for part in ("-c", setting)), *args]


def _environment() -> dict[str, str]:
    """The gate's environment (read at each command), with git's messages in English."""
    return {**os.environ, "LC_ALL": "C", "LANGUAGE": "C"}


def _holds_git(folder: Path) -> bool:
    """A worktree's top folder (`.git`, a folder or a file naming one) or a repository's own folder (bare)."""
    return (folder / ".git").exists() or ((folder / "HEAD").is_file() and (folder / "objects").is_dir()
                                          and (folder / "refs").is_dir())


def _stop(process: subprocess.Popen[bytes]) -> None:
    """End a `git cat-file --batch`: it exits when its input closes."""
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            stream.close()
    process.wait()
