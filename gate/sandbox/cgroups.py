"""Layer "cgroup": one control group per run, for memory and process limits and for killing everything of it.

A cgroup follows every process of the run however it detaches (setsid, double fork), so killing the cgroup's
processes leaves nothing behind. Version 1 hierarchies give `memory` and `pids` where root can write them; a
cgroup v2 hierarchy gives `cgroup.kill` (kernel 5.14+) and, where its controllers can be enabled, `memory.max`
and `pids.max`. Both are used at once on a hybrid machine (this one: v1 memory/pids, v2 without controllers).
Parent side only: the child joins by writing 0 (itself) on descriptors the gate opened. In a v1 hierarchy that
goes to `tasks`, which moves only the writing thread, the whole of a forked process (it has one): a move of a
whole process (`cgroup.procs`) takes the kernel's cgroup_threadgroup_rwsem for writing, and the first such move
after a quiet moment waits for an RCU grace period (4-15 ms here, on the way to every first run); a move of the
current thread alone skips that lock (Linux 6.0 and later; before, both wait alike). A v2 cgroup takes threads
only in threaded mode, so there it is `cgroup.procs`, and the wait stays (unless the hierarchy is mounted with
`favordynmods`, which makes every move skip it).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from gate.sandbox import stage
from gate.sandbox.base import Limits

_KILL_ROUNDS = 200


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


def _sigkill(pids: set[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _read(path: str) -> str:
    """A cgroup file's text, or "" once the cgroup is gone."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return ""
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    except OSError:
        return ""
    finally:
        os.close(fd)
    return b"".join(chunks).decode()


@dataclass
class CgroupRun:
    """The cgroup directories (one per hierarchy) of one sandbox uid, reused by each run under that uid: a uid
    runs one run at a time, and a run ends only when its cgroup is empty again."""

    dirs: list[Path]
    v2: Path | None
    _oom_before: int = 0
    _limits: Limits | None = None  # the limits written last (each write costs more than comparing)
    # Seen empty after the run's leader exited: only a process inside can add one, so it stays empty until the
    # next run begins.
    _emptied: bool = False
    # The files read around every run, found once: plain reads of known paths are the per-run fast path.
    _procs: list[str] = field(init=False)
    _joins: list[str] = field(init=False)  # where the run's leader writes 0 to join (the module's docstring)
    _oom_files: list[str] = field(init=False)
    _kill_file: Path | None = field(init=False)

    def __post_init__(self) -> None:
        self._procs = [str(directory / "cgroup.procs") for directory in self.dirs]
        self._joins = [str(directory / ("cgroup.procs" if directory == self.v2 else "tasks"))
                       for directory in self.dirs]
        self._oom_files = [str(directory / name) for directory in self.dirs
                           for name in ("memory.oom_control", "memory.events") if (directory / name).exists()]
        kill = self.v2 / "cgroup.kill" if self.v2 is not None else None
        self._kill_file = kill if kill is not None and kill.exists() else None

    def open_joins(self) -> list[int]:
        """Descriptors of the files the child joins by writing 0 (the module's docstring; the caller closes
        them)."""
        return [os.open(join, os.O_WRONLY | os.O_CLOEXEC) for join in self._joins]

    def pids(self) -> set[int]:
        """The processes in the cgroup now."""
        found: set[int] = set()
        for procs in self._procs:
            found.update(int(p) for p in _read(procs).split())
        return found

    def begin(self, limits: Limits) -> None:
        """Set the next run's limits (and remember the OOM count, which only grows)."""
        self._oom_before = self._oom_kills()
        self._emptied = False
        if limits == self._limits:
            return
        self._limits = limits
        for directory in self.dirs:
            # (v1 charges a socket's buffers to a cgroup only once its own TCP limit is set: without it a suite's
            # run, which has a loopback, could fill the machine's TCP memory, which is one for all; v2 charges
            # them to memory.max.)
            for name, value in (("memory.limit_in_bytes", limits.memory_bytes),
                                ("memory.kmem.tcp.limit_in_bytes", limits.memory_bytes),
                                ("memory.max", limits.memory_bytes), ("pids.max", limits.processes)):
                if (directory / name).exists():
                    _write(directory / name, str(value))

    def kill_all(self, leader_gone: bool = False) -> None:
        """SIGKILL every process in the cgroup until it is empty (a killed process takes a moment to go). Once
        the run's leader is gone (`leader_gone`), an empty cgroup stays empty until the next run begins, and
        later calls cost nothing."""
        if self._emptied:
            return
        if self._kill_file is not None:
            _write(self._kill_file, "1")
        for round_ in range(_KILL_ROUNDS):
            pids = self.pids()
            if not pids:
                self._emptied = leader_gone
                return
            _sigkill(pids)
            time.sleep(0.001 * min(round_, 20))

    def signal_all(self) -> None:
        """SIGKILL every process in the cgroup now, once, without waiting for them to go."""
        if self._kill_file is not None:
            _write(self._kill_file, "1")
        else:
            _sigkill(self.pids())

    def _oom_kills(self) -> int:
        total = 0
        for path in self._oom_files:
            for line in _read(path).splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    total += int(value)
        return total

    def memory_exceeded(self) -> bool:
        """Whether the kernel killed a process of this run for going over the memory limit."""
        return self._oom_kills() > self._oom_before

    def remove(self) -> None:
        """Kill what is left and remove the directories."""
        self.kill_all()
        for directory in self.dirs:
            with contextlib.suppress(FileNotFoundError):
                directory.rmdir()


class Cgroups:
    """The gate's own cgroup directories (one per usable hierarchy), with one cgroup per sandbox uid below,
    made on the uid's first run and kept until close (a mkdir and rmdir per run would cost more than the
    run)."""

    def __init__(self, v1: dict[str, Path], v2: Path | None, v2_controllers: set[str]) -> None:
        self._v1 = v1  # controller -> this sandbox's directory in that hierarchy
        self._v2 = v2
        self._v2_controllers = v2_controllers
        self._runs: dict[int, CgroupRun] = {}
        self._lock = threading.Lock()

    @property
    def describe(self) -> str:
        """How the layer reads in the isolation map."""
        parts = [f"v1 {'+'.join(sorted(self._v1))}"] if self._v1 else []
        if self._v2 is not None:
            kill = ["kill"] if (self._v2 / "cgroup.kill").exists() else []
            parts.append("v2 " + "+".join([*kill, *sorted(self._v2_controllers)]))
        return "on (" + ", ".join(parts) + ")"

    def for_uid(self, uid: int, limits: Limits) -> CgroupRun:
        """The cgroup of `uid`, empty, with the run's limits."""
        with self._lock:
            run = self._runs.get(uid)
            if run is None:
                run = self._runs[uid] = self._create(f"uid-{uid}")
        run.begin(limits)
        return run

    def _create(self, name: str) -> CgroupRun:
        dirs = [base / name for base in self._v1.values()]
        v2_dir = self._v2 / name if self._v2 is not None else None
        for directory in [*dirs, *([v2_dir] if v2_dir else [])]:
            directory.mkdir(exist_ok=True)
        if v2_dir is not None:
            dirs.append(v2_dir)
        if v2_dir is not None and (v2_dir / "memory.swap.max").exists():
            _write(v2_dir / "memory.swap.max", "0")  # the memory limit is the limit, not a start on swap
        return CgroupRun(dirs, v2_dir)

    def strays(self) -> list[str]:
        """Processes in a uid's cgroup while no run holds it (there should be none between runs)."""
        return [f"{pid} in {run.dirs[0]}" for run in self._runs.values() for pid in run.pids()]

    def close(self) -> None:
        """Remove every cgroup of this sandbox."""
        for run in self._runs.values():
            run.remove()
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


def _remove_stale(root: Path) -> None:
    """Remove what a killed gate left in this hierarchy (its processes are dead, or killed here)."""
    for base in stage.stale_entries(root):
        runs = [CgroupRun([run], None) for run in base.iterdir() if run.is_dir()]
        for run in runs:
            run.remove()
        with contextlib.suppress(OSError):
            base.rmdir()


def detect() -> tuple[Cgroups | None, str]:
    """This sandbox's cgroups, or None and why not. Needs write access to a hierarchy (root, here)."""
    name = f"{stage.BASE_PREFIX}{os.getpid()}-{time.monotonic_ns()}"
    v1: dict[str, Path] = {}
    v2: Path | None = None
    v2_controllers: set[str] = set()
    reasons = []
    for point, kind, options in _mounts():
        try:
            _remove_stale(Path(point))
            if kind == "cgroup":
                for controller in ("memory", "pids"):
                    if controller in options and controller not in v1:
                        (Path(point) / name).mkdir()
                        v1[controller] = Path(point) / name
            elif v2 is None and "pids" not in v1:  # v1 pids tracks and limits the run well enough
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
