"""Layers "uid" and "no-new-privs": who a run is, and which interpreter that user can start.

Child side (`drop`): runs inside the sandboxed child as root, right before the program. Parent side
(`UidPool`, `runnable_by_others`): dedicated system users, one per concurrent run, so that RLIMIT_NPROC counts only
that run and every process left under the uid after a run can be killed without touching anything else.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import stat
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from gate.sandbox import _libc

USER_PREFIX = "gate-sandbox"
NOBODY = 65534
MAX_SLOTS = 16


def drop(uid: int, gid: int, parent_pid: int, no_new_privs: bool) -> None:
    """Become uid/gid with no supplementary groups, undumpable, killed with the parent, without new privileges.

    setuid clears PR_SET_PDEATHSIG and resets dumpable, so both are set afterwards. Undumpable means another
    process of the same uid (a concurrent run, the other side of a pair) cannot ptrace this one or read its
    /proc/<pid>/mem or environ."""
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    _libc.prctl(_libc.PR_SET_DUMPABLE, 0)
    _libc.prctl(_libc.PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before PDEATHSIG was armed
        os._exit(137)
    if no_new_privs:
        _libc.prctl(_libc.PR_SET_NO_NEW_PRIVS, 1)


@dataclass(frozen=True)
class Identity:
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
        done = subprocess.run([useradd, "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
                               "--shell", "/usr/sbin/nologin", name], capture_output=True, check=False)
        if done.returncode != 0:
            return None
        entry = pwd.getpwnam(name)
    return Identity(entry.pw_uid, entry.pw_gid, name, dedicated=True)


class UidPool:
    """Hands out one dedicated uid per concurrent run (created with useradd on first use), or `nobody` when no
    user can be created. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._free: list[Identity] = []
        self._created = 0
        first = _ensure_user(USER_PREFIX)
        self.fallback = None if first else Identity(NOBODY, NOBODY, "nobody", dedicated=False)
        if first:
            self._free.append(first)
            self._created = 1

    @property
    def describe(self) -> str:
        """How the uid layer reads in the isolation map."""
        if self.fallback:
            return f"uid {NOBODY} (nobody, shared: could not create {USER_PREFIX})"
        first = pwd.getpwnam(USER_PREFIX)
        return f"uid {first.pw_uid} ({USER_PREFIX}, one dedicated user per concurrent run)"

    def acquire(self) -> Identity:
        """A uid for one run; blocks when MAX_SLOTS runs are already going."""
        if self.fallback:
            return self.fallback
        with self._lock:
            while not self._free:
                if self._created < MAX_SLOTS:
                    made = _ensure_user(f"{USER_PREFIX}{self._created}")
                    if made:
                        self._created += 1
                        return made
                self._lock.wait()
            return self._free.pop()

    def release(self, identity: Identity) -> None:
        """Give a uid back once nothing of its run is left."""
        if identity.dedicated:
            with self._lock:
                self._free.append(identity)
                self._lock.notify()


def runnable_by_others(path: str) -> bool:
    """Whether a user other than the owner can read and execute `path` (every directory on the way searchable)."""
    real = Path(os.path.realpath(path))
    try:
        if not real.is_file() or (real.stat().st_mode & (stat.S_IROTH | stat.S_IXOTH)) != (stat.S_IROTH | stat.S_IXOTH):
            return False
        return all(parent.stat().st_mode & stat.S_IXOTH for parent in real.parents)
    except OSError:
        return False


def _real_uid(pid: str) -> int | None:
    """The real uid of a live process (None for a zombie or a process that is gone)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            fields = dict(line.split(":", 1) for line in status if ":" in line)
    except OSError:
        return None
    if fields.get("State", "").strip().startswith("Z"):
        return None
    return int(fields["Uid"].split()[0])


def kill_uid(uid: int, rounds: int = 50) -> None:
    """SIGKILL every live process whose real uid is `uid`, until none is left (a fork bomb may race a round).
    Only for a dedicated uid: nothing else runs under it. Zombies are left to their reaper."""
    for _ in range(rounds):
        found = [pid for pid in os.listdir("/proc") if pid.isdigit() and _real_uid(pid) == uid]
        if not found:
            return
        for pid in found:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
