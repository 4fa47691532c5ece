"""Layer "uid", parent side: dedicated system users for runs, and an interpreter such a user can start.

One user per concurrent run (gate-sbx, gate-sbx1, ...; created with useradd on first use and reused
afterwards), so that RLIMIT_NPROC counts only that run and every process left under the uid after the run can
be killed without touching anything else. Without useradd, `nobody` (shared, so neither holds).
"""

from __future__ import annotations

import fcntl
import os
import pwd
import shutil
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec

from gate import memo
from gate.errors import GateFailure
from gate.memo import state_dir

USER_PREFIX = "gate-sbx"
NOBODY = 65534
MAX_SLOTS = 32


class Identity(msgspec.Struct, frozen=True):
    """A uid a run can switch to. `dedicated` means nothing but sandbox runs ever uses it."""

    uid: int
    gid: int
    name: str
    dedicated: bool


def _ensure_user(name: str) -> Identity | None:
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        useradd = shutil.which("useradd") or "/usr/sbin/useradd"
        if not os.path.exists(useradd):
            return None
        subprocess.run([useradd, "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
                               "--shell", "/usr/sbin/nologin", name], capture_output=True, check=False)
        try:
            entry = pwd.getpwnam(name)  # made now, or by another gate at the same moment
        except KeyError:
            return None
    return Identity(entry.pw_uid, entry.pw_gid, name, dedicated=True)


class UidPool:
    """Hands out one dedicated uid per concurrent run, or `nobody` when no user can be created. Thread-safe,
    and safe across gate processes on one machine (parallel tests, parallel jobs): a uid is held with an
    exclusive flock on its lock file in the gate's state directory (gate/memo.py) for as long as its run lasts."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fds: dict[int, int] = {}  # slot -> its lock file, open for the pool's life
        self._known: dict[int, Identity] = {}  # slot -> its user, once looked up
        self._busy: dict[int, int] = {}  # slot -> uid, while one of this gate's runs holds it
        first = _ensure_user(USER_PREFIX)
        self.fallback = None if first else Identity(NOBODY, NOBODY, "nobody", dedicated=False)
        self._state = state_dir() if first else -1

    @property
    def describe(self) -> str:
        """How the uid layer reads in the isolation map."""
        if self.fallback:
            return f"uid {NOBODY} (nobody, shared: could not create {USER_PREFIX})"
        first = pwd.getpwnam(USER_PREFIX)
        return f"uid {first.pw_uid} ({USER_PREFIX}; one dedicated user per concurrent run)"

    def _try(self, slot: int) -> Identity | None:
        """The slot's identity if neither this gate nor another one holds it (called with the lock held)."""
        if slot in self._busy:
            return None
        name = USER_PREFIX + (str(slot) if slot else "")
        if slot not in self._fds:
            flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
            fd = os.open(name, flags, 0o600, dir_fd=self._state)
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                raise GateFailure(f"{memo.STATE_DIR}/{name} is not a regular file; remove it")
            self._fds[slot] = fd
        try:
            fcntl.flock(self._fds[slot], fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another gate's run has it
            return None
        made = self._known.get(slot) or _ensure_user(name)
        if made is None:
            fcntl.flock(self._fds[slot], fcntl.LOCK_UN)
            return None
        self._known[slot] = made
        self._busy[slot] = made.uid
        return made

    def acquire(self) -> Identity:
        """A uid for one run; waits while MAX_SLOTS runs (of any gate on this machine) are going."""
        if self.fallback:
            return self.fallback
        while True:
            with self._lock:
                for slot in range(MAX_SLOTS):
                    made = self._try(slot)
                    if made:
                        return made
            time.sleep(0.05)

    def release(self, identity: Identity) -> None:
        """Give a uid back once nothing of its run is left."""
        if identity.dedicated:
            with self._lock:
                slot = next(slot for slot, uid in self._busy.items() if uid == identity.uid)
                del self._busy[slot]
                fcntl.flock(self._fds[slot], fcntl.LOCK_UN)

    def strays(self) -> list[str]:
        """Live processes of a sandbox uid that no run holds (there should be none): "pid (user)"."""
        found = []
        for slot in range(MAX_SLOTS):
            with self._lock:
                made = self._try(slot) if not self.fallback else None
            if made is not None:
                try:
                    found += [f"{pid} ({made.name})" for pid in processes_of(made.uid)]
                finally:
                    self.release(made)
        return found


    def close(self) -> None:
        """Close the lock files (releasing every uid)."""
        with self._lock:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()
            self._busy.clear()
            if self._state >= 0:
                os.close(self._state)
                self._state = -1



def _statuses() -> Iterator[tuple[int, dict[str, str]]]:
    """(pid, fields of /proc/<pid>/status) of every process still there."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status") as status:
                    yield int(entry), dict(line.split(":", 1) for line in status if ":" in line)
            except OSError:
                continue


def processes_of(uid: int) -> list[int]:
    """Live (not zombie) processes whose real uid is `uid`."""
    return [pid for pid, fields in _statuses()
            if int(fields["Uid"].split()[0]) == uid and not fields["State"].strip().startswith("Z")]


def tasks_of(uid: int) -> int:
    """How many tasks (threads, zombies included) RLIMIT_NPROC counts for `uid` now."""
    return sum(int(fields["Threads"]) for _, fields in _statuses() if int(fields["Uid"].split()[0]) == uid)


def runnable_by_others(path: str) -> bool:
    """Whether a user other than the owner can read and execute `path` (every directory on the way
    searchable)."""
    real = Path(os.path.realpath(path))
    try:
        wanted = stat.S_IROTH | stat.S_IXOTH
        if not real.is_file() or real.stat().st_mode & wanted != wanted:
            return False
        return all(parent.stat().st_mode & stat.S_IXOTH for parent in real.parents)
    except OSError:
        return False
