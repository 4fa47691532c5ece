"""Parent side of a run's private directory and environment.

Each run gets its own directory under one base directory (mode 0711: nobody but root can list it), owned by
the run's uid, removed after the run. A tree is copied without `.git` (checkout may have stored a token
there) and without bytecode or native code (NOT_RUN: Python would load a committed `__pycache__/x.pyc` or
`x.so` instead of the scored `x.py`), so what runs is only the source that was scored, compiled by the run's
own interpreter; the one native code that does run is what the sandbox compiled from that source, placed in the
tree by the gate and admitted by it here (`admit_native`). With a mount namespace the tree is copied once per
sandbox and every run mounts that copy read-only under its own writable layer; without one, each run's
directory holds a copy of its own.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath

from gate.sandbox.base import RESULT_FD_ENV, RunRequest

MINIMAL_PATH = "/usr/local/bin:/usr/bin:/bin"


# Where run directories and the exports of the trees under test go: memory (tmpfs) when the machine has it,
# since a run creates and removes a directory and its files every time, and a gate check writes, copies and
# removes a tree or several (on a disk that costs more than the run, and more than a small suite's tests:
# docs/benchmarks.md); $TMPDIR otherwise.
_MEMORY = "/dev/shm"
BASE_PREFIX = "gate-sandbox-"
# Exports of a head tree (gate/sources/gitrange.py) are named after the gate's pid too, for the same clean-up.
EXPORT_PREFIX = "gate-head-"
# What a tree under test never brings into a run: the checkout's git directory, bytecode and native code
# beside the source (what Python or ctypes would load instead of, or next to, the scored .py), and .pth files.
NOT_RUN_DIRS = (".git", "__pycache__")
NOT_RUN_SUFFIXES = (".pyc", ".pyo", ".pyd", ".so", ".dylib", ".dll", ".pth")
# The native files the gate placed in a tree itself (what the sandbox's build compiled from it:
# gate/environment/project.py), which are staged with it: the tree's real path -> each file's path in it -> the
# sha256 of the bytes it was admitted with.
_ADMITTED: dict[str, dict[str, str]] = {}
_ADMITTED_LOCK = threading.Lock()


def make_base(copied_as_root: bool) -> Path:
    """The directory that holds every run's private directory for one sandbox (named after the gate's pid, so
    that the next gate can remove what a killed one left). With `copied_as_root` (a mount namespace: the run
    copies its directory out while still root) it may be a place only root can pass through."""
    usable = _usable_by_root if copied_as_root else _usable_by_anyone
    where = _MEMORY if usable(_MEMORY) else None
    base = Path(tempfile.mkdtemp(prefix=f"{BASE_PREFIX}{os.getpid()}-", dir=where))
    base.chmod(0o711)
    for parent in {Path(_MEMORY), Path(tempfile.gettempdir())}:
        for stale in stale_entries(parent):
            with contextlib.suppress(OSError):
                remove(stale)
    _remove_stale_exports()
    return base


def new_export() -> Path:
    """A new private directory (0700) for an export of a tree under test, in memory when the machine has it,
    named after this gate's pid so that the next gate removes it if this one is killed before it does;
    removes what dead gates left."""
    _remove_stale_exports()
    where = _MEMORY if _usable_by_root(_MEMORY) else None
    return Path(tempfile.mkdtemp(prefix=f"{EXPORT_PREFIX}{os.getpid()}-", dir=where))


def _remove_stale_exports() -> None:
    for parent in {Path(_MEMORY), Path(tempfile.gettempdir())}:
        for stale in stale_entries(parent, EXPORT_PREFIX):
            with contextlib.suppress(OSError):
                remove(stale)


def _usable_by_root(directory: str) -> bool:
    """Whether the gate can make directories in `directory`."""
    return os.path.isdir(directory) and os.access(directory, os.W_OK | os.X_OK)


def _usable_by_anyone(directory: str) -> bool:
    """Whether the gate can write in `directory` and a dropped uid can pass through it (some machines mount
    /dev/shm with mode 0700: a run there works only when a mount namespace copies its directory out)."""
    try:
        mode = os.stat(directory).st_mode
    except OSError:
        return False
    return stat.S_ISDIR(mode) and bool(mode & stat.S_IXOTH) and os.access(directory, os.W_OK | os.X_OK)


def stale_entries(parent: Path, prefix: str = BASE_PREFIX) -> list[Path]:
    """Directories `<prefix><pid>-...` in `parent` whose gate (pid) is no longer running. Only real
    directories of this user's: `parent` may be shared and writable by anyone (/tmp, /dev/shm), and what
    another user planted there under that name is not the gate's to remove."""
    found = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(parent):
            pid = entry.name.removeprefix(prefix).split("-", 1)[0]
            if (entry.name.startswith(prefix) and pid.isdigit() and not os.path.exists(f"/proc/{pid}")
                    and entry.is_dir(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_uid
                    == os.geteuid()):
                found.append(Path(entry.path))
    return found


def _safe_relative(name: str) -> str:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise ValueError(f"run file {name!r} must be a relative path inside the working directory")
    return str(path)


def make_stage(base: Path, request: RunRequest, owner: tuple[int, int] | None, copy_tree: bool = True) -> Path:
    """A fresh private directory holding the request's files and, with `copy_tree`, its tree, owned by
    `owner` (uid, gid) if given (never its harness: a run imports that from memory, gate/sandbox/child.py).
    Plain os calls: this runs once per run, on the fast path. Raises ValueError for a file outside it."""
    names = {name: _safe_relative(name) for name in request.files}
    stage = tempfile.mkdtemp(prefix="run-", dir=base)
    try:
        _fill(stage, request, names, owner, copy_tree)
    except BaseException:
        remove(Path(stage))
        raise
    return Path(stage)


def make_shared_tree(base: Path, tree: Path) -> Path:
    """One copy of `tree` (without what NOT_RUN leaves out) that many runs mount read-only as the lower layer
    of their working directory. Its directories and files are writable by anyone: a run's writes go to its
    own upper layer, never to this copy, which no run's namespace holds in reach (namespaces.private_tmp)."""
    copy = Path(tempfile.mkdtemp(prefix="tree-", dir=base))
    try:
        shutil.copytree(tree, copy, symlinks=True, dirs_exist_ok=True, ignore=_not_run(tree))
        for parent, _dirs, files in os.walk(copy):
            os.chmod(parent, 0o777)
            for name in files:
                path = os.path.join(parent, name)
                if not os.path.islink(path):
                    os.chmod(path, 0o777 if os.stat(path).st_mode & stat.S_IXUSR else 0o666)
    except BaseException:
        remove(copy)
        raise
    return copy


def admit_native(tree: Path, relative: str) -> None:
    """Stage the native file `relative` of `tree` with it, as long as its bytes are those it has now: the gate
    placed it there, as the sandbox's build compiled it from the tree. Any other native file of a tree (one
    the tree holds, one written in it since) is left out as NOT_RUN_SUFFIXES says."""
    digest = hashlib.sha256((tree / relative).read_bytes()).hexdigest()
    with _ADMITTED_LOCK:
        _ADMITTED.setdefault(os.path.realpath(tree), {})[PurePosixPath(relative).as_posix()] = digest


def _not_run(tree: Path) -> Callable[[str, list[str]], set[str]]:
    """shutil.copytree's ignore for `tree`: the names NOT_RUN_DIRS and NOT_RUN_SUFFIXES leave out of a run,
    but the native files admitted for the tree (`admit_native`) with the bytes they were admitted with."""
    top = os.path.realpath(tree)
    with _ADMITTED_LOCK:
        admitted = dict(_ADMITTED.get(top, {}))

    def ignore(folder: str, names: list[str]) -> set[str]:
        return {name for name in names if name in NOT_RUN_DIRS or (
            (name.lower().endswith(NOT_RUN_SUFFIXES) or ".so." in name) and not _admitted(folder, name))}

    def _admitted(folder: str, name: str) -> bool:
        path = os.path.join(folder, name)
        digest = admitted.get(PurePosixPath(os.path.relpath(os.path.realpath(folder), top), name).as_posix())
        if digest is None or not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        with open(path, "rb") as file:
            return hashlib.file_digest(file, "sha256").hexdigest() == digest
    return ignore


def _fill(stage: str, request: RunRequest, names: dict[str, str], owner: tuple[int, int] | None,
          copy_tree: bool) -> None:
    copied = request.tree is not None and copy_tree
    if request.tree is not None and copy_tree:
        shutil.copytree(request.tree, stage, symlinks=True, dirs_exist_ok=True, ignore=_not_run(request.tree))
        if owner is not None:
            _chown_tree(stage, owner)
    made = {stage}
    for name, relative in names.items():
        target = os.path.join(stage, relative)
        _make_parents(os.path.dirname(target), made, owner)
        if copied:  # the tree's own entry of that name: the gate's file replaces it
            clear(target)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        try:
            os.write(fd, request.files[name])
            if owner is not None:
                os.fchown(fd, *owner)
        finally:
            os.close(fd)
    if owner is not None:
        os.chown(stage, *owner)


def clear(path: str) -> None:
    """Remove whatever is at `path` (a directory tree, a link, a file, a pipe) without following a link."""
    if os.path.isdir(path) and not os.path.islink(path):
        remove(Path(path))
    elif os.path.lexists(path):
        os.unlink(path)


def _make_parents(directory: str, made: set[str], owner: tuple[int, int] | None) -> None:
    """Make `directory` and its missing parents, owned by `owner`; `made` holds those known to exist. A link or
    file of the tree's in the way is replaced, never followed: the gate writes as root, the tree is the
    candidate's."""
    if directory in made:
        return
    _make_parents(os.path.dirname(directory), made, owner)
    if os.path.islink(directory) or (os.path.lexists(directory) and not os.path.isdir(directory)):
        os.unlink(directory)
    if not os.path.isdir(directory):
        os.mkdir(directory)
        if owner is not None:
            os.chown(directory, *owner)
    made.add(directory)


def _chown_tree(root: str, owner: tuple[int, int]) -> None:
    for parent, dirs, files in os.walk(root):
        for entry in (*dirs, *files):
            os.lchown(os.path.join(parent, entry), *owner)


def remove(path: Path) -> None:
    """Remove a run's directory whatever the program did to its permissions inside it (same uid), and never
    change anything outside it."""
    root = os.fspath(path)

    def writable(_func: Callable[..., object], failed: str, exc_info: tuple[type, BaseException, object]) -> None:
        parent = os.path.dirname(failed)
        if failed == root or (parent != root and not parent.startswith(root + os.sep)):
            raise exc_info[1]
        os.chmod(parent, stat.S_IRWXU)
        if os.path.isdir(failed) and not os.path.islink(failed):
            os.chmod(failed, stat.S_IRWXU)
            shutil.rmtree(failed, onerror=writable)
        else:
            os.unlink(failed)

    shutil.rmtree(root, onerror=writable)


def run_env(request: RunRequest, extra: Mapping[str, str]) -> dict[str, str]:
    """The whole environment of a run: an allow-list, never anything inherited from the gate."""
    env = {
        "PATH": MINIMAL_PATH,
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": str(request.hash_seed),
        "PYTHONDONTWRITEBYTECODE": "1",
        RESULT_FD_ENV: "3",
    }
    env.update(extra)
    env.update(request.env)
    return env
