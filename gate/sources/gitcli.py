"""The `git` program, as the gate runs it on a local repository: commands, their output, objects by SHA.

GitPython would do this, at a price every verdict pays: importing it takes about 50 ms (a sixth of a PR
verdict's fixed part, docs/benchmarks.md), and a range needs a dozen git commands, which GitPython only runs
as this module does. So the gate reaches git here alone (the range, the PR gate, `gate replay`'s walk of a
branch's history). As GitPython does, every command runs in the repository's top folder with git's messages in
English (LC_ALL=C), its output decoded as UTF-8 with undecodable bytes kept as lone surrogates (a file name
may be any bytes), less one trailing newline. A git that cannot run (none on PATH) fails as a command does
(GitError, status 127).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import threading
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

import msgspec

from gate.errors import GateFailure

_NOT_FOUND = 127  # a command's status when it cannot run (the shell's)
# The commit each full SHA names, by repository (its common folder): an object a repository has stays there for
# the gate's run, and a PR's verdict names its two SHAs from several places (the policy, the checkout, the range).
_NAMED: dict[tuple[str, str], str] = {}
_FULL_SHA = re.compile(r"[0-9a-f]{40}")


class GitError(GateFailure):
    """A git command that failed: its exit status and what git printed on its standard error. The gate cannot
    read the range then (a repository missing objects, refused, half-cloned): exit 3 with git's words, unless
    the caller knows better (an unknown revision is the user's, exit 2)."""

    def __init__(self, args: Sequence[str], status: int, stderr: str) -> None:
        super().__init__(f"git {' '.join(args)} exited with {status}: {' '.join(stderr.split())}")
        self.status = status
        self.stderr = stderr


class NotARepository(Exception):
    """A path where git finds no repository (nor above it, when the folders above it were searched)."""


def available() -> bool:
    """Whether a `git` program is on PATH."""
    import shutil

    return shutil.which("git") is not None


class Commit(msgspec.Struct, frozen=True):
    """A commit of `repo`, by its full SHA (equal to another of the same SHA)."""

    repo: Repo
    hexsha: str

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Commit) and other.hexsha == self.hexsha

    def __hash__(self) -> int:
        return hash(self.hexsha)

    def __repr__(self) -> str:
        return f"Commit(hexsha={self.hexsha!r})"

    @property
    def tree_sha(self) -> str:
        """The SHA of the commit's tree."""
        return self.repo.run("rev-parse", f"{self.hexsha}^{{tree}}")


class _Layout(msgspec.Struct, frozen=True):
    """Where git found the repository: bare or not, its git directory, its common directory (a linked
    worktree's is the main repository's), and the folder its commands run in (the worktree's top)."""

    bare: bool
    git_dir: str
    common_dir: str
    top: str


class Repo:
    """A local repository as git finds it from `path`: a worktree (`working_dir` its top folder) or a bare one
    (`working_dir` its own folder). Only `path` itself is looked at, unless `search_parent_directories` (then
    the folders above it too, as git does); a worktree's `.git` folder stands for the worktree.
    NotARepository when git finds none there; when git refuses the one it finds (one owned by another uid:
    "detected dubious ownership") or cannot run, `layout` raises the GitError."""

    def __init__(self, path: str | os.PathLike[str], search_parent_directories: bool = False) -> None:
        start = Path(path).absolute()
        if start.name == ".git" and start.is_dir():
            start = start.parent
        if not start.is_dir():
            raise NotARepository(f"{path}: no such folder")
        self._found = _find(start, search_parent_directories)
        self.working_dir = self._found.top if isinstance(self._found, _Layout) else str(start)
        self._lock = threading.Lock()
        self._objects: subprocess.Popen[bytes] | None = None

    @property
    def layout(self) -> _Layout:
        """Where git found the repository; GitError when git refused it or could not run."""
        if isinstance(self._found, GitError):
            raise self._found
        return self._found

    @property
    def bare(self) -> bool:
        return self.layout.bare

    @property
    def git_dir(self) -> str:
        return self.layout.git_dir

    @property
    def common_dir(self) -> str:
        return self.layout.common_dir

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
        done = _ran(command, self.working_dir)
        if done.returncode != 0:
            raise GitError(command[1:], done.returncode, done.stderr.decode("utf-8", "replace"))
        return done.stdout.removesuffix(b"\n")

    def start(self, *args: str, stdin: IO[bytes] | None = None, config: Sequence[str] = ()) -> Started:
        """`git ARGS` started, reading `stdin` (nothing when None), its output to read as it comes (`config` as
        for `run`)."""
        command = _command(args, config)
        # Its messages go to a file, not a pipe: git can write more of them than a pipe holds (a warning for each
        # line of the checkout's .gitattributes it cannot use, which is the head's), and would then wait for
        # them to be read while the gate waits for its output.
        said = tempfile.TemporaryFile()  # noqa: SIM115 (the Started owns it: its wait or stop closes it)
        try:
            return Started(command[1:], _started(command, self.working_dir, stdin, said), said)
        except BaseException:
            said.close()
            raise

    def commit(self, ref: str) -> Commit:
        """The commit `ref` names, in all of git's revision syntax. GitError when it names none. A full SHA is
        looked up once a repository (`_NAMED`)."""
        key = (self.common_dir, ref)
        found = _NAMED.get(key)
        if found is None:
            found = self.run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
            if _FULL_SHA.fullmatch(ref):
                _NAMED[key] = found
        return Commit(self, found)

    def merge_base(self, one: Commit, other: Commit) -> list[Commit]:
        """Their best common ancestor, or none (unrelated histories: git's status 1)."""
        try:
            found = self.run("merge-base", one.hexsha, other.hexsha)
        except GitError as exc:
            if exc.status == 1:
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
        (one process, however many files the gate reads); a read that fails or is cut short ends it (the next
        read starts another)."""
        with self._lock:
            if self._objects is None:
                self._objects = _started(_command(("cat-file", "--batch"), ()), self.working_dir, subprocess.PIPE,
                                         subprocess.DEVNULL)
                weakref.finalize(self, _stop, self._objects)
            objects = self._objects
            assert objects.stdin is not None and objects.stdout is not None
            try:
                objects.stdin.write(f"{sha}\n".encode())
                objects.stdin.flush()
                return read_object(objects.stdout, sha)
            except BaseException:
                _stop(objects)
                self._objects = None
                raise

    def close(self) -> None:
        """End the process `blob` keeps, if any."""
        with self._lock:
            if self._objects is not None:
                _stop(self._objects)
                self._objects = None


class Started(msgspec.Struct, frozen=True):
    """A git command going on: its output (`stdout`) to read, then `wait`; or `stop` it."""

    args: Sequence[str]
    process: subprocess.Popen[bytes]
    said: IO[bytes]  # what it writes on its standard error

    @property
    def stdout(self) -> IO[bytes]:
        assert self.process.stdout is not None
        return self.process.stdout

    def wait(self) -> None:
        """Wait for its end; GitError when it failed."""
        code = self.process.wait()
        self.said.seek(0)
        said = self.said.read()
        self.said.close()
        if code != 0:
            raise GitError(self.args, code, said.decode("utf-8", "replace"))

    def stop(self) -> None:
        """End it, whatever it was doing, and collect it (its output unread)."""
        if self.process.poll() is None:
            self.process.kill()
        for stream in (self.process.stdout, self.said):
            if stream is not None:
                stream.close()
        self.process.wait()


def read_object(out: IO[bytes], sha: str) -> bytes:
    """One object from `git cat-file --batch`'s output: its header, its bytes and the newline after them."""
    header = out.readline().split()
    if len(header) != 3 or header[0].decode() != sha:
        said = b" ".join(header).decode(errors="replace") or "nothing"
        raise GitError(("cat-file", "--batch"), 0, f"git cat-file gave {said} for the object {sha}")
    data = out.read(int(header[2]))
    out.read(1)
    return data


def _find(start: Path, search: bool) -> _Layout | GitError:
    """Where git finds the repository from `start` (NotARepository when it finds none), or why it cannot say."""
    command = ["git", "rev-parse", "--is-bare-repository", "--absolute-git-dir", "--git-common-dir", "--show-cdup"]
    # Without the search, git looks no further up than `start` (a folder in a repository is no repository).
    ceiling = {} if search else {"GIT_CEILING_DIRECTORIES": str(start.parent)}
    try:
        done = _ran(command, str(start), ceiling)
    except GitError as exc:
        return exc
    said = done.stderr.decode("utf-8", "replace")
    if done.returncode != 0:
        if "not a git repository" in said or "invalid gitfile" in said:
            raise NotARepository(f"{start}: {' '.join(said.split())}")
        return GitError(command[1:], done.returncode, said)
    # (a bare repository has no top folder: git prints no line for --show-cdup)
    bare, git_dir, common, cdup = [*done.stdout.decode("utf-8", "surrogateescape").split("\n"), "", "", ""][:4]
    common_dir = str((start / common).resolve())
    return _Layout(bare == "true", git_dir, common_dir, git_dir if bare == "true" else str((start / cdup).resolve()))


def _ran(command: list[str], where: str, more: Mapping[str, str] | None = None
         ) -> subprocess.CompletedProcess[bytes]:
    """`command` run to its end in the folder `where`, its output captured; GitError when git cannot run."""
    try:
        return subprocess.run(command, cwd=where, env={**_environment(), **(more or {})},
                              stdin=subprocess.DEVNULL, capture_output=True, check=False)
    except OSError as exc:
        raise GitError(command[1:], _NOT_FOUND, f"git cannot run: {exc.strerror}") from None


def _started(command: list[str], where: str, stdin: IO[bytes] | int | None, stderr: IO[bytes] | int
             ) -> subprocess.Popen[bytes]:
    """`command` started in the folder `where`, reading `stdin` (nothing when None), its output to a pipe;
    GitError when git cannot run."""
    try:
        return subprocess.Popen(command, cwd=where, env=_environment(),
                                stdin=stdin if stdin is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=stderr)
    except OSError as exc:
        raise GitError(command[1:], _NOT_FOUND, f"git cannot run: {exc.strerror}") from None


def _command(args: Sequence[str], config: Sequence[str]) -> list[str]:
    return ["git", *(part for setting in config for part in ("-c", setting)), *args]


def _environment() -> dict[str, str]:
    """The gate's environment (read at each command), with git's messages in English, and each commit read as
    it is: `git replace` refs and the grafts file make git show other objects in a commit's place (another
    head's tree, another base's policy, a base grafted onto the bot's own commit). The grafts file named is one
    that cannot exist (/dev/null itself would be read as an empty one, and git would print its hint that grafts
    are deprecated)."""
    return {**os.environ, "LC_ALL": "C", "LANGUAGE": "C", "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_GRAFT_FILE": os.path.join(os.devnull, "grafts")}


def _stop(process: subprocess.Popen[bytes]) -> None:
    """End a `git cat-file --batch`: it exits when its input closes."""
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            stream.close()
    process.wait()
