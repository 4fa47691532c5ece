"""Layers "uid" and "no-new-privs", child side: become the run's user, and kill what is left of it.

Runs inside the sandbox (the child as root, right before the program; the reaper after a run), so it imports
only what starts fast. The users themselves are handed out by gate/sandbox/users.py.
"""

from __future__ import annotations

import os
import signal

from gate.sandbox import _libc


def drop(uid: int, gid: int, parent_pid: int, no_new_privs: bool) -> None:
    """Become uid/gid with no supplementary groups, undumpable, killed with the parent, without new
    privileges.

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


def kill_user(uid: int) -> None:
    """SIGKILL every process of `uid` (a dedicated one: nothing else runs under it), wherever it went (setsid,
    double fork). A forked helper becomes that uid and calls kill(-1): the kernel then signals exactly the
    processes that uid may signal, all at once, so a fork bomb cannot outrun a scan of /proc."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setuid(uid)
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
