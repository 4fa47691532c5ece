"""Layer "cgroup": one control group per run, for memory and process limits and for killing everything of it.

A cgroup follows every process of the run however it detaches (setsid, double fork), so killing the cgroup's
processes leaves nothing behind. Version 1 hierarchies give `memory` and `pids` where root can write them; a
cgroup v2 hierarchy gives `cgroup.kill` (kernel 5.14+) and, where its controllers can be enabled, `memory.max`
and `pids.max`. Both are used at once on a hybrid machine (this one: v1 memory/pids, v2 without controllers).
Parent side only: the child just writes its pid into each `cgroup.procs` listed in its config.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from gate.sandbox.base import Limits

_KILL_ROUNDS = 100
_REMOVE_ROUNDS = 50


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, type, options) of every cgroup mount."""
    found = []
    with open("/proc/self/mounts") as mounts:
        for line in mounts:
            _, point, kind, options, *_ = line.split()
            if kind in ("cgroup", "cgroup2"):
                found.append((point, kind, set(options.split(","))))
    return found


def _write(path: Path, value: str) -> None:
    path.write_text(value)


@dataclass
class CgroupRun:
    """The cgroup directories of one run (one per hierarchy)."""

    dirs: list[Path]
    v2: Path | None

    @property
    def paths(self) -> list[str]:
        """What the child joins."""
        return [str(d) for d in self.dirs]

    def _pids(self) -> set[int]:
        found: set[int] = set()
        for directory in self.dirs:
            with contextlib.suppress(OSError):
                found.update(int(p) for p in (directory / "cgroup.procs").read_text().split())
        return found

    def kill_all(self) -> None:
        """SIGKILL every process in the run's cgroups until none is left."""
        if self.v2 is not None and (self.v2 / "cgroup.kill").exists():
            _write(self.v2 / "cgroup.kill", "1")
        for _ in range(_KILL_ROUNDS):
            pids = self._pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    def memory_exceeded(self) -> bool:
        """Whether the kernel killed a process of the run for going over the memory limit."""
        for directory in self.dirs:
            for name in ("memory.oom_control", "memory.events"):
                with contextlib.suppress(OSError):
                    for line in (directory / name).read_text().splitlines():
                        key, _, value = line.partition(" ")
                        if key == "oom_kill" and int(value) > 0:
                            return True
        return False

    def remove(self) -> None:
        """Kill what is left and remove the directories (a dying process may hold one a moment)."""
        self.kill_all()
        for directory in self.dirs:
            for _ in range(_REMOVE_ROUNDS):
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    self.kill_all()
                    time.sleep(0.01)


class Cgroups:
    """The gate's own cgroup directories (one per usable hierarchy) under which each run gets one."""

    def __init__(self, v1: dict[str, Path], v2: Path | None, v2_controllers: set[str]) -> None:
        self._v1 = v1  # controller -> this sandbox's directory in that hierarchy
        self._v2 = v2
        self._v2_controllers = v2_controllers
        self._count = itertools.count()

    @property
    def describe(self) -> str:
        """How the layer reads in the isolation map."""
        parts = [f"v1 {'+'.join(sorted(self._v1))}"] if self._v1 else []
        if self._v2 is not None:
            extra = "+".join(sorted(self._v2_controllers))
            parts.append("v2 kill" + (f"+{extra}" if extra else ""))
        return "on (" + ", ".join(parts) + ")"

    def create(self, limits: Limits) -> CgroupRun:
        """A new cgroup (in each hierarchy) with the run's memory and process limits."""
        name = f"run-{next(self._count)}"
        dirs: list[Path] = []
        v2_dir = None
        for controller, base in self._v1.items():
            directory = base / name
            directory.mkdir()
            dirs.append(directory)
            if controller == "memory":
                _write(directory / "memory.limit_in_bytes", str(limits.memory_bytes))
                with contextlib.suppress(OSError):  # swap accounting may be off
                    _write(directory / "memory.memsw.limit_in_bytes", str(limits.memory_bytes))
            else:
                _write(directory / "pids.max", str(limits.processes))
        if self._v2 is not None:
            v2_dir = self._v2 / name
            v2_dir.mkdir()
            dirs.append(v2_dir)
            if "memory" in self._v2_controllers:
                _write(v2_dir / "memory.max", str(limits.memory_bytes))
                with contextlib.suppress(OSError):
                    _write(v2_dir / "memory.swap.max", "0")
            if "pids" in self._v2_controllers:
                _write(v2_dir / "pids.max", str(limits.processes))
        return CgroupRun(dirs, v2_dir)

    def strays(self) -> list[str]:
        """Run cgroups of this sandbox still present (there should be none between runs)."""
        return [str(d) for base in [*self._v1.values(), *([self._v2] if self._v2 else [])]
                for d in base.iterdir() if d.is_dir()]

    def close(self) -> None:
        """Remove this sandbox's directories (every run's own is gone by then)."""
        for base in [*self._v1.values(), *([self._v2] if self._v2 else [])]:
            with contextlib.suppress(OSError):
                base.rmdir()


def _v2_base(point: str, name: str) -> tuple[Path, set[str]]:
    root = Path(point)
    available = set((root / "cgroup.controllers").read_text().split()) & {"memory", "pids"}
    base = root / name
    base.mkdir()
    enabled: set[str] = set()
    for controller in sorted(available):
        try:
            _write(root / "cgroup.subtree_control", f"+{controller}")
            _write(base / "cgroup.subtree_control", f"+{controller}")
            enabled.add(controller)
        except OSError:
            continue
    return base, enabled


def detect() -> tuple[Cgroups | None, str]:
    """This sandbox's cgroups, or None and why not. Needs write access to a hierarchy (root, here)."""
    name = f"gate-sandbox-{os.getpid()}-{time.monotonic_ns()}"
    v1: dict[str, Path] = {}
    v2: Path | None = None
    v2_controllers: set[str] = set()
    reasons = []
    for point, kind, options in _mounts():
        try:
            if kind == "cgroup":
                for controller in ("memory", "pids"):
                    if controller in options and controller not in v1:
                        (Path(point) / name).mkdir()
                        v1[controller] = Path(point) / name
            elif v2 is None:
                v2, v2_controllers = _v2_base(point, name)
        except OSError as exc:
            reasons.append(f"{point}: {exc.strerror}")
    if v2 is not None and not (v2 / "cgroup.kill").exists() and not v2_controllers:
        with contextlib.suppress(OSError):
            v2.rmdir()
        v2 = None
    if not v1 and v2 is None:
        return None, "off: " + ("; ".join(reasons) if reasons else "no cgroup hierarchy mounted")
    return Cgroups(v1, v2, v2_controllers), ""
