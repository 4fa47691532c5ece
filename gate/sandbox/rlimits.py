"""Layer "rlimits": kernel resource limits for one run (standard library only: runs inside the child).

RLIMIT_AS (not RLIMIT_DATA) bounds memory: a shared anonymous mmap escapes RLIMIT_DATA. RLIMIT_NPROC counts
every process of the real uid (zombies too) and does nothing for root, so it is exact only under a dedicated
uid.
"""

from __future__ import annotations

import math
import os
import resource
from collections.abc import Mapping

from gate.sandbox.layer import Layer, Run

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the child imports this module
if TYPE_CHECKING:
    from gate.sandbox.child import ChildConfig
    from gate.sandbox.detect import Found
    from gate.sandbox.runner import RunSetup
    from gate.sandbox.stack import LayerSettings

# Names in the child's config -> resource constants.
_RESOURCES = {
    "cpu": resource.RLIMIT_CPU,
    "as": resource.RLIMIT_AS,
    "fsize": resource.RLIMIT_FSIZE,
    "nofile": resource.RLIMIT_NOFILE,
    "nproc": resource.RLIMIT_NPROC,
    "core": resource.RLIMIT_CORE,
}


def cpu_seconds(cpu_s: float) -> int:
    """RLIMIT_CPU's soft limit for `cpu_s` seconds of CPU: whole seconds, at least one."""
    return max(1, math.ceil(cpu_s))


def plan(cpu_s: float, memory_bytes: int, file_size_bytes: int, open_files: int,
         processes: int | None) -> dict[str, int]:
    """The limits to set, by name; `processes` is None when RLIMIT_NPROC would not be exact (no own uid)."""
    limits = {
        "cpu": cpu_seconds(cpu_s),
        "as": memory_bytes,
        "fsize": file_size_bytes,
        "nofile": open_files,
        "core": 0,
    }
    if processes is not None:
        limits["nproc"] = processes
    return limits


def apply(limits: Mapping[str, int]) -> None:
    """Set each limit (soft and hard; CPU gets a hard limit one second later so SIGXCPU comes first)."""
    for name, value in limits.items():
        hard = value + 1 if name == "cpu" else value
        resource.setrlimit(_RESOURCES[name], (value, hard))


def _describe(found: Found) -> str:
    if found.uids and not found.uids.fallback:
        nproc = "nproc"
    elif found.root and not found.uids:
        nproc = "no nproc: it does nothing for root"
    else:
        nproc = "nproc on top of what the shared uid runs already"
    return f"on (cpu, as, fsize, nofile, core, {nproc})"


def _settings(setup: RunSetup) -> LayerSettings:
    limits, who = setup.request.limits, setup.who
    processes: int | None = limits.processes
    if who is None or not who.dedicated:
        # RLIMIT_NPROC counts every task of the uid (it does nothing for root): on a shared uid, allow the run
        # its processes on top of what the uid has now (a scan of /proc; only without root).
        from gate.sandbox import users  # (the gate's side only)

        uid = who.uid if who else os.getuid()
        processes = None if uid == 0 else users.tasks_of(uid) + limits.processes
    return {"rlimits": plan(limits.cpu_s, limits.memory_bytes, limits.file_size_bytes, limits.open_files,
                            processes)}


def _apply(config: ChildConfig, run: Run) -> None:
    apply(config["rlimits"])


RLIMITS = Layer("rlimits", _describe, settings=_settings, apply=_apply)
