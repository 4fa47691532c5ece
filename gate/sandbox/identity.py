"""Layers "uid" and "no-new-privs", child side: become the run's user, and kill what is left of it.

Runs inside the sandbox (the child as root, right before the program; the reaper after a run), so it imports
only what starts fast. The users themselves are handed out by gate/sandbox/users.py.
"""

from __future__ import annotations

import os
import signal

from gate.sandbox import _libc
from gate.sandbox.layer import Layer, Run, switch

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the child imports this module
if TYPE_CHECKING:
    from gate.sandbox.child import ChildConfig
    from gate.sandbox.detect import Found
    from gate.sandbox.runner import RunSetup
    from gate.sandbox.stack import LayerSettings


def drop(uid: int, gid: int, parent_pid: int) -> None:
    """Become uid/gid with no supplementary groups, undumpable, killed with the parent.

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


def _describe_uid(found: Found) -> str:
    why = "needs root (run the gate with sudo)" if not found.root else found.no_interpreter
    return switch(why, f"{found.uids.describe}; runs {found.interpreter}" if found.uids else "")


def _uid_settings(setup: RunSetup) -> LayerSettings:
    who = setup.who
    return {"uid": who.uid if who else None, "gid": who.gid if who else None}


def _become(config: ChildConfig, run: Run) -> None:
    """uid: become the run's user (the last privileged step), or without one stay, killed with the parent."""
    uid, gid = config["uid"], config["gid"]  # (both set, or neither)
    parent = os.getppid()
    if uid is not None and gid is not None:
        drop(uid, gid, parent)
    else:
        _libc.prctl(_libc.PR_SET_PDEATHSIG, signal.SIGKILL)


def _no_new_privs_settings(setup: RunSetup) -> LayerSettings:
    return {"no_new_privs": setup.layers.no_new_privs}


def _no_new_privs(config: ChildConfig, run: Run) -> None:
    """no-new-privs: no setuid binary the program runs gives privileges back."""
    if config["no_new_privs"]:
        _libc.prctl(_libc.PR_SET_NO_NEW_PRIVS, 1)


# (The users themselves are the parent's: gate/sandbox/users.py's UidPool, held by runner.Layers.)
UID = Layer("uid", _describe_uid, settings=_uid_settings, apply=_become)
NO_NEW_PRIVS = Layer("no-new-privs", lambda found: "on", settings=_no_new_privs_settings, apply=_no_new_privs)
