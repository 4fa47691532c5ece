"""A directory shared by every process of one test session (pytest-xdist's workers too), for set-up that is
expensive enough to be built once per session: the gate's cache of environments, the simulated runner.

The session's first process (pytest's main process: the xdist controller, or the only one) makes it and names it
in the environment its workers inherit; it removes it, and whatever the workers registered, when the session
ends. A build in it is guarded by `once` (a file lock), so the first worker to ask builds and the others wait
and read what it left.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

VARIABLE = "GATE_TEST_SESSION_DIR"
_CLEANUP = "remove-at-end"


def start() -> None:
    """Called at configure time: the main process makes the directory; workers (and a session run inside a
    test) find one already named in their environment."""
    if not os.environ.get(VARIABLE):
        # World-traversable, outside /tmp/pytest-of-root (0700): a run's dropped uid reads the environments.
        folder = Path(tempfile.mkdtemp(prefix="gate-test-session-"))
        folder.chmod(0o755)
        os.environ[VARIABLE] = str(folder)
        os.environ[VARIABLE + "_OWNER"] = str(os.getpid())


def finish() -> None:
    """Called at unconfigure time: the process that made the directory removes it and what was registered."""
    folder = os.environ.get(VARIABLE)
    if not folder or os.environ.get(VARIABLE + "_OWNER") != str(os.getpid()):
        return
    listed = Path(folder, _CLEANUP)
    for line in listed.read_text().splitlines() if listed.is_file() else ():
        shutil.rmtree(line, ignore_errors=True)
    shutil.rmtree(folder, ignore_errors=True)
    del os.environ[VARIABLE], os.environ[VARIABLE + "_OWNER"]


def directory() -> Path:
    folder = os.environ.get(VARIABLE)
    assert folder, "tests/conftest.py makes the session directory at configure time"
    return Path(folder)


def remove_at_end(*paths: Path) -> None:
    """Remove `paths` when the session ends (not when the worker that made them does: others use them)."""
    with (directory() / _CLEANUP).open("a") as listed:
        listed.write("".join(f"{p}\n" for p in paths))


@contextlib.contextmanager
def exclusive(name: str) -> Iterator[None]:
    """Hold the session's lock for `name`: one process of the session at a time gets past it."""
    with (directory() / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@contextlib.contextmanager
def once(name: str) -> Iterator[Path]:
    """Hold the session's lock for `name`; yields the file the builder writes its record to (build when it is
    absent, read it otherwise)."""
    with exclusive(name):
        yield directory() / f"{name}.json"
