"""How a backend starts the sandboxed child: the small interface behind the registry
(gate/sandbox/registry.py).

A backend gets the child's config (see gate/sandbox/child.py) and the descriptors to hand it, starts a process
that ends in `child.run_child`, and returns a handle the supervisor polls. Everything else (pipes, limits,
cleanup) is common to every backend and lives in gate/sandbox/runner.py.
"""

from __future__ import annotations

import os
import select
import subprocess
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from gate.sandbox.child import ChildConfig, SharedConfig, WarmConfig


class Handle(Protocol):
    """A started child. `exit_fd` becomes readable when the child has exited."""

    exit_fd: int

    def reap(self) -> tuple[int, float]:
        """The child's (raw wait status, CPU seconds), once its reaper has killed what was left of its process
        group and collected it. Blocks until then; call once `exit_fd` is readable or after killing it."""
        ...

    def kill(self) -> None:
        """SIGKILL the leader if its reaper has not collected it yet; never another process, even one that has
        its pid since (its reaper then kills its group too)."""
        ...

    def hold_watch(self) -> int | None:
        """A descriptor of the leader's inotify instance (the same instance, not a new one), or None when it has
        none or the gate may not take it (pidfd_getfd: the right to trace the leader, which root has)."""
        ...

    def close(self) -> None:
        """Release the handle's descriptors."""
        ...


class Launcher(Protocol):
    """A backend: starts children (thread-safe) and owns whatever helper processes it needs."""

    def launch(self, config: ChildConfig, sources: Sequence[int], hash_seed: int) -> Handle: ...

    def prepare(self, hash_seeds: Sequence[int], shared: SharedConfig) -> None:
        """Start, without waiting, the helpers that launches under `hash_seeds` will need (Sandbox.prepare),
        and what they can make of `shared` (what every launch's config carries the same) before a launch."""
        ...

    def warm(self, hash_seeds: Sequence[int], shared: SharedConfig, ready: WarmConfig) -> None:
        """Have the helpers for `hash_seeds` that `prepare` started make `ready` (what launches to come share:
        Sandbox.warm) once they have made `shared`, without waiting."""
        ...

    def close(self) -> None: ...


def stop(process: subprocess.Popen[bytes]) -> None:
    """Wait for a helper process told to finish (its descriptors closed) to exit; kill it after 10 s. The wait
    is on a pidfd, which wakes when the process exits (Popen.wait with a timeout polls with growing sleeps,
    which overshoot a quick exit several times: docs/benchmarks.md)."""
    try:
        exited = os.pidfd_open(process.pid)
    except OSError:  # a kernel before 5.3
        exited = -1
    try:
        if exited >= 0:
            select.select([exited], [], [], 10)
        process.wait(timeout=0 if exited >= 0 else 10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    finally:
        if exited >= 0:
            os.close(exited)
