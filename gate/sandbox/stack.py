"""Every isolation layer's record (gate/sandbox/layer.py), in the verdict's order, and the child's steps in the
order it applies them. Adding a layer: its module with its record, then its lines here (RECORDS; APPLIED when
the child applies it; LayerSettings for what its runs' config carries).

Standard library only: the sandboxed child and the start-up probe import it. Also the records of the layers
that have no child-side module of their own (the backends, the session, the cgroup).
"""

from __future__ import annotations

import os

from gate.sandbox import identity, namespaces, rlimits, seccomp
from gate.sandbox.layer import Layer, Run

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the child must not pay for importing typing
if TYPE_CHECKING:
    from typing import TypedDict

    from gate.sandbox.child import ChildConfig
    from gate.sandbox.detect import Found
    from gate.sandbox.runner import RunSetup

    class LayerSettings(TypedDict, total=False):
        """What a run's child config carries for the layers, each key set by its layer's `settings` (every
        one, for every run) and read by the child's steps."""

        cgroups: list[int]  # cgroup: the files that join the run's cgroups (among ChildConfig targets)
        unshare: list[str]  # netns, mountns, ipcns: the namespaces to enter (namespaces.NAMESPACES)
        loopback: bool  # netns: a network namespace of the run's own, its loopback up (RunRequest.loopback)
        disk_bytes: int  # filesystem: the private /tmp's size (mountns)
        hide: list[str]  # filesystem: host paths covered in the run's root (mountns)
        root: list[str]  # filesystem: host paths bound read-only into the run's root (mountns)
        staging: str  # filesystem: the host directory of the runs' working directories
        in_template: bool  # filesystem: set by a zygote that made the run's mount template (zygote_server)
        read_only: bool  # filesystem: the working directory read-only (RunRequest.read_only_tree; mountns)
        tree: str | None  # filesystem: a shared read-only tree staged once (overlay), as the run sees it
        rlimits: dict[str, int]  # rlimits: gate/sandbox/rlimits.py's plan
        uid: int | None  # uid: the uid to switch to (None: stay)
        gid: int | None
        no_new_privs: bool  # no-new-privs
        seccomp: bool  # seccomp: install the filter


def _fresh_interpreter(found: Found) -> str:
    return f"{found.interpreter} -s -S -P" + ("" if not found.prefer_zygote else " (fallback)")


def _start_session(config: ChildConfig, run: Run) -> None:
    """setsid: the run is a session (and process group) of its own, which the wall timeout kills whole."""
    if os.getsid(0) != os.getpid():
        os.setsid()


def _cgroups(setup: RunSetup) -> LayerSettings:
    return {"cgroups": list(setup.cgroup_fds)}


def _join_cgroups(config: ChildConfig, run: Run) -> None:
    """cgroup: join the run's cgroups, 0 meaning the writer (the gate opened the files: a run's root has no
    /sys; gate/sandbox/cgroups.py says which)."""
    for fd in config["cgroups"]:
        try:
            os.write(fd, b"0")
        finally:
            os.close(fd)


def _cgroup(found: Found) -> str:
    return found.cgroups.describe if found.cgroups else found.cgroup_why


ZYGOTE = Layer("zygote", lambda found: "on" if found.prefer_zygote else "off: not preferred (prefer_zygote=False)")
FRESH_INTERPRETER = Layer("fresh-interpreter", _fresh_interpreter)
SETSID = Layer("setsid", lambda found: "on", apply=_start_session)
# (The manager, cgroups.Cgroups, is the parent's: found in the gate's process, held by runner.Layers.)
CGROUP = Layer("cgroup", _cgroup, settings=_cgroups, apply=_join_cgroups)

# Every layer, in the order of the verdict's isolation (base.LAYERS: the names a policy's `require:` uses).
RECORDS = (ZYGOTE, FRESH_INTERPRETER, SETSID, rlimits.RLIMITS, identity.UID, identity.NO_NEW_PRIVS,
           namespaces.NETNS, namespaces.MOUNTNS, namespaces.FILESYSTEM, namespaces.IPCNS, seccomp.SECCOMP,
           CGROUP)

# The child's steps, in the order it takes them (gate/sandbox/child.py): session and cgroup first, so that
# nothing escapes the kill; namespaces and the run's own root and working directory while still root;
# rlimits after the copy into it (RLIMIT_FSIZE would stop it); the uid switch (the last privileged step);
# no-new-privs; seccomp last (it needs no_new_privs or root), right before the program.
APPLIED = (SETSID, CGROUP, namespaces.NETNS, namespaces.MOUNTNS, namespaces.IPCNS, namespaces.FILESYSTEM,
           rlimits.RLIMITS, identity.UID, identity.NO_NEW_PRIVS, seccomp.SECCOMP)
