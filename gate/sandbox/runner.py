"""The sandbox every backend shares: stage a run, start it through a launcher, supervise it, clean up.

Supervision: stdin is fed from the request, stdout and stderr are read up to the output cap (the run is killed
beyond it), the result channel is read separately, the wall clock kills the run's process group (and its
cgroup, and every process of its dedicated uid), and once the leader has exited everything else of the run is
killed too.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pwd
import selectors
import signal
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from gate.errors import GateFailure
from gate.sandbox import account, interpreter, namespaces, rlimits, scripts, served, stage, users
from gate.sandbox.base import PEER_FD_ENV, RunRequest, RunResult
from gate.sandbox.cgroups import CgroupRun, Cgroups
from gate.sandbox.child import CGROUPS, PEER, RESULT, SETUP, STDERR, STDIN, STDOUT
from gate.sandbox.launcher import Handle, Launcher
from gate.sandbox.namespaces import STAGING
from gate.sandbox.stack import RECORDS

if TYPE_CHECKING:
    from gate.sandbox.child import ChildConfig, SharedConfig
    from gate.sandbox.stack import LayerSettings

_CHUNK = 65536
# Slack for the kernel's accounting of CPU time against RLIMIT_CPU, as a share of the limit: a loop killed by
# SIGXCPU may report well under the limit's CPU in its rusage on a loaded machine (docs/benchmarks.md). (A
# program that sends itself SIGXCPU to pass for a timeout only costs itself more points.)
_CPU_SLACK = 0.5
_STREAMS = ("stdin", "stdout", "stderr", "result", "setup")  # the run's first descriptors, in order
# After a leader exits and the rest of its run is killed, how long its pipes may stay open (only a process
# that escaped every kill could hold them).
_DRAIN_S = 2.0


class Layers(msgspec.Struct, frozen=True):
    """What open_sandbox found and chose: how every run of this sandbox is isolated."""

    interpreter: str
    import_paths: tuple[str, ...]
    isolation: Mapping[str, str]
    uids: users.UidPool | None = None
    no_new_privs: bool = True
    # The probed layers each run uses (gate/sandbox/layer.py: those whose probe found them working): of
    # namespaces.NAMESPACES, "seccomp", ...
    on: tuple[str, ...] = ()
    overlay: bool = False  # with mountns: a head tree is staged once and shared read-only (overlayfs)
    seccomp_program: bytes = b""  # the filter's BPF program, built once by open_sandbox's probe
    cgroups: Cgroups | None = None
    hide: tuple[str, ...] = ()
    # With mountns: the host paths bound read-only into every run's otherwise empty root (the interpreter, its
    # library, what the caller adds); nothing else of the host is there.
    root: tuple[str, ...] = ()
    # Absolute import roots that are site directories (the repository's environment): a run that has one on its
    # import path reads its `.pth` files as `site` does (gate/sandbox/startup.py).
    sites: tuple[str, ...] = ()
    # A test framework the runs import (its modules by name) and the read-only folders it comes from, never a
    # tree's (the environment's site directories, the gate's pytest copy): each zygote imports it once, from
    # those alone, for the runs that ask for it (RunRequest.framework; child.FRAMEWORKS).
    framework: tuple[str, ...] = ()
    framework_path: tuple[str, ...] = ()

    @property
    def mountns(self) -> bool:
        """Each run has a mount namespace (and so an allow-listed root) of its own."""
        return "mountns" in self.on


class RunSetup(msgspec.Struct, frozen=True):
    """What the layers' records (gate/sandbox/layer.py `settings`) build a run's child config from."""

    layers: Layers
    request: RunRequest
    who: users.Identity | None  # the run's uid, when it switches to one
    cgroup_fds: list[int]  # the descriptor numbers of the files that join its cgroups, in the child
    staging: str  # the host directory of the sandbox's run directories
    tree: str | None  # a shared read-only tree (overlay), as the run sees it


class _Live(msgspec.Struct):
    """One run in progress, parent side."""

    request: RunRequest
    who: users.Identity | None
    stage: Path
    cgroup: CgroupRun | None
    handle: Handle
    fds: dict[int, str]  # parent-side descriptor -> "stdin", "stdout", "stderr", "result", "setup", "exit"
    start: float
    stdout: bytearray = msgspec.field(default_factory=bytearray)
    stderr: bytearray = msgspec.field(default_factory=bytearray)
    result: bytearray = msgspec.field(default_factory=bytearray)
    setup_error: bytearray = msgspec.field(default_factory=bytearray)
    stdin_sent: int = 0
    exited: bool = False
    status: int = 0
    cpu_s: float = 0.0
    killed_reason: str = ""
    timed_out: bool = False
    truncated: bool = False
    drain_until: float = 0.0
    watch: int | None = None  # the leader's inotify instance, held from its first result (RunRequest.watches)

    @property
    def deadline(self) -> float:
        return self.start + self.request.limits.wall_s

    @property
    def done(self) -> bool:
        return self.exited and not any(kind != "stdin" for kind in self.fds.values())


def _harness(request: RunRequest) -> tuple[dict[str, str], dict[str, str]]:
    """The request's harness files as (name -> sha256 of the source, sha256 -> source); checks the request."""
    named: dict[str, str] = {}
    sources: dict[str, str] = {}
    for name, data in request.harness.items():
        if "/" in name or not name.endswith(".py"):
            raise ValueError(f"harness file {name!r} must be a top-level .py file")
        digest, text = _source(data)
        named[name] = digest
        sources[digest] = text
    if request.harness and request.script not in request.harness:
        raise ValueError(f"a harness's script must be one of its files, not {request.script!r}")
    for name in request.warm:
        if name not in request.harness:
            raise ValueError(f"warm file {name!r} must be one of the request's harness files")
    return named, sources


@functools.cache
def _own_name() -> str:
    """The gate's user's name (a run without a uid of its own runs as that user), else its uid."""
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


@functools.lru_cache(maxsize=64)
def _source(data: bytes) -> tuple[str, str]:
    """(sha256, text) of a harness file: the same few files for every run, each hashed once."""
    return hashlib.sha256(data).hexdigest(), data.decode()


class LayeredSandbox:
    """A Sandbox (gate.sandbox.base) over one launcher and the layers open_sandbox chose."""

    def __init__(self, launcher: Launcher, layers: Layers) -> None:
        self.launcher = launcher
        self.layers = layers
        self._base = stage.make_base(copied_as_root=layers.mountns)
        self._null_in = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        self._null_out = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
        self._servers = served.Servers(self._start, self._retire)
        self._trees: dict[Path, Path] = {}  # a request's tree -> its one read-only copy (with mountns)
        self._trees_lock = threading.Lock()

    @property
    def isolation(self) -> Mapping[str, str]:
        """Each layer: "on", "off: <why>", or a detail such as "uid 999 (...)"."""
        return self.layers.isolation

    @property
    def private_tmp(self) -> bool:
        """See gate.sandbox.base.Sandbox.private_tmp."""
        return {"mountns", "ipcns"} <= set(self.layers.on)

    def run(self, request: RunRequest) -> RunResult:
        """See gate.sandbox.base.Sandbox.run."""
        live = self._start(request, None)
        return self._supervise([live])[0]

    def run_served(self, server: RunRequest, message: bytes, peer: RunRequest) -> tuple[RunResult, RunResult]:
        """See gate.sandbox.base.Sandbox.run_served."""
        lead_end, peer_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        with lead_end, peer_end:
            candidate = self._start(peer, peer_end.fileno())
            try:
                held, sent = self._servers.call(server, message, lead_end.fileno())
            except BaseException:
                self._kill(candidate, "server failed to start")
                self._supervise([candidate])
                raise
        answer = served.Answer(held.control.fileno(), candidate.deadline, pending=sent)
        try:
            results = self._supervise([candidate], answer=answer)
        finally:
            ended = self._servers.release(held, healthy=answer.healthy)
        return served.lead_result(answer, candidate.start, ended), results[0]

    def prepare(self, hash_seeds: Sequence[int]) -> None:
        """See gate.sandbox.base.Sandbox.prepare."""
        self.launcher.prepare(hash_seeds, self._shared())

    def warm(self, request: RunRequest, hash_seeds: Sequence[int]) -> None:
        """See gate.sandbox.base.Sandbox.warm."""
        harness, sources = _harness(request)
        self.launcher.warm(hash_seeds, self._shared(),
                           {"preload": list(request.preload), "harness": harness, "harness_sources": sources})

    def _shared(self) -> SharedConfig:
        """What every run's config carries the same: the namespaces and root (namespaces.shared) and the
        framework."""
        return {**namespaces.shared(self.layers, str(self._base)), "framework": list(self.layers.framework),
                "framework_path": list(self.layers.framework_path)}

    def leftovers(self) -> list[str]:
        """What past runs left behind: run directories, run cgroups (a cgroup with a live process cannot be
        removed), or without cgroups, live processes of a sandbox uid that no run holds. Empty between runs (a
        killed process may take a moment to die), apart from idle servers (run_served) until close; the tests
        check it."""
        shared = set(self._trees.values())  # (kept for the sandbox's life)
        found = [f"directory {path}" for path in self._base.iterdir() if path not in shared]
        if self.layers.cgroups:
            found += [f"process {proc}" for proc in self.layers.cgroups.strays()]
        elif self.layers.uids:
            found += [f"process {proc}" for proc in self.layers.uids.strays()]
        return found

    def close(self) -> None:
        """Stop the backend's helpers and remove every directory and cgroup this sandbox made."""
        self._servers.close()
        self.launcher.close()
        if self.layers.cgroups:
            self.layers.cgroups.close()
        if self.layers.uids:
            self.layers.uids.close()
        stage.remove(self._base)
        os.close(self._null_in)
        os.close(self._null_out)

    # Starting a run

    def _shared_tree(self, tree: Path) -> Path:
        """The read-only copy of `tree` that every run of this sandbox shares, staged on first use."""
        with self._trees_lock:
            if tree not in self._trees:
                self._trees[tree] = stage.make_shared_tree(self._base, tree)
            return self._trees[tree]

    def _seen(self, path: Path) -> str:
        """`path` (in the base directory) as a run sees it: in its root's staging directory with mountns."""
        return f"{STAGING}/{path.relative_to(self._base)}" if self.layers.mountns else str(path)

    def _config(self, request: RunRequest, who: users.Identity | None, where: Path,
                cgroup: CgroupRun | None, peer: bool, cgroup_fds: int) -> ChildConfig:
        if (request.script is None) == (request.argv is None):
            raise ValueError("a RunRequest sets exactly one of `script` and `argv`")
        groups = list(range(CGROUPS, CGROUPS + cgroup_fds))
        harness, sources = _harness(request)
        tree = self._shared_tree(request.tree) if request.tree is not None and self.layers.overlay else None
        setup = RunSetup(self.layers, request, who, groups, str(self._base),
                         self._seen(tree) if tree is not None else None)
        settings: LayerSettings = {}
        for layer in RECORDS:
            if layer.settings is not None:
                settings.update(layer.settings(setup))
        config: ChildConfig = {
            **self._shared(),
            **settings,
            "targets": [STDIN, STDOUT, STDERR, RESULT, SETUP, *([PEER] if peer else []), *groups],
            "stage": self._seen(where),
            "sweep_uid": who.uid if who and who.dedicated and cgroup is None else None,
            # Nothing else can find this run's detached processes: give it a reaper of its own.
            "own_reaper": cgroup is None and not (who and who.dedicated),
            "env": self._env(request, who, where, peer),
            "script": request.script,
            "args": list(request.args),
            "argv": list(request.argv) if request.argv is not None else None,
            "harness": harness,
            "harness_sources": sources,
            "warm": list(request.warm),
            "python_path": list(request.python_path),
            "sites": [path for path in request.python_path if path in self.layers.sites],
            "scripts": scripts.of(request.python_path) if request.script is not None else {},
            "programs": scripts.programs([path for path in request.python_path if path in self.layers.sites])
            if request.script is not None else {},
            "preload": list(request.preload),
            "take_framework": request.framework,
        }
        return config

    def _env(self, request: RunRequest, who: users.Identity | None, where: Path, peer: bool) -> dict[str, str]:
        """The run's environment (stage.run_env) with its user's HOME, USER and LOGNAME (gate/sandbox/account.py:
        the name of the gate's making in a root of the gate's making, else the host's name of the run's uid); a
        Python program's PATH starts with its interpreter's folder (gate/sandbox/interpreter.py), so that
        `python` there is the one `sys.executable` names, and the console scripts beside it are found."""
        mountns = self.layers.mountns
        if mountns:
            name = account.NAME if who is not None and who.uid else "root"
        else:
            name = who.name if who is not None else _own_name()
        user = {"HOME": account.home(self._seen(where), mountns), "USER": name, "LOGNAME": name}
        env = stage.run_env(request, {**user, **({PEER_FD_ENV: str(PEER)} if peer else {})})
        if request.script is not None:
            env["PATH"] = f"{interpreter.home(self._seen(where), mountns)}/bin:{env['PATH']}"
        return env

    def _start(self, request: RunRequest, peer_fd: int | None) -> _Live:
        who = self.layers.uids.acquire() if self.layers.uids else None
        where: Path | None = None
        cgroup: CgroupRun | None = None
        child_ends: list[int] = []
        groups: list[int] = []
        parent_ends: list[int] = []
        kinds: list[str] = []
        try:
            where = stage.make_stage(self._base, request, (who.uid, who.gid) if who else None,
                                     copy_tree=not self.layers.overlay)
            if self.layers.cgroups and who:  # (detect only has cgroups with dedicated uids)
                cgroup = self.layers.cgroups.for_uid(who.uid, request.limits)
                groups = cgroup.open_joins()
            config = self._config(request, who, where, cgroup, peer_fd is not None, len(groups))
            sources = []
            for kind in _STREAMS:
                null = self._null_stream(request, kind)
                if null is not None:
                    sources.append(null)
                    continue
                read, write = os.pipe()
                theirs, ours = (read, write) if kind == "stdin" else (write, read)
                child_ends.append(theirs)
                parent_ends.append(ours)
                kinds.append(kind)
                sources.append(theirs)
            if peer_fd is not None:
                sources.append(peer_fd)
            handle = self.launcher.launch(config, [*sources, *groups], request.hash_seed)
        except BaseException:
            for fd in parent_ends:
                os.close(fd)
            self._release(who, where, cgroup)
            raise
        finally:
            for fd in (*child_ends, *groups):
                os.close(fd)
        fds = dict(zip(parent_ends, kinds, strict=True))
        fds[handle.exit_fd] = "exit"
        return _Live(request, who, where, cgroup, handle, fds, time.monotonic())

    def _null_stream(self, request: RunRequest, kind: str) -> int | None:
        """/dev/null for a stream the run does not need piped, else None. A run with nothing to read gets it
        for stdin (one pipe and one wake-up less than an empty one); a run whose output is discarded, for its
        outputs."""
        if kind == "stdin" and not request.stdin:
            return self._null_in
        if kind in ("stdout", "stderr", "result") and request.discard_output:
            return self._null_out
        return None

    # Supervising

    def _retire(self, live: _Live) -> RunResult:
        """End a server run (served.Servers): kill it, read what is left of it, release what it held."""
        self._kill(live, "retired")
        return self._supervise([live])[0]

    def _supervise(self, runs: list[_Live], answer: served.Answer | None = None) -> list[RunResult]:
        try:
            self._watch(runs, answer)
        except BaseException:  # the gate failed (its reaper died, an interrupt): nothing of the runs may stay
            for live in runs:
                self._kill(live, "gate error")
                for fd, kind in live.fds.items():
                    if kind != "exit":  # the handle closes its own
                        os.close(fd)
                _drop_watch(live)
                live.handle.close()
                self._release(live.who, live.stage, live.cgroup)
            raise
        results = [self._finish(live) for live in runs]
        failed = [live.setup_error.decode(errors="replace") for live in runs if live.setup_error]
        if failed:  # a program never ran: the gate cannot do its job
            raise GateFailure("sandbox setup failed: " + "; ".join(failed))
        return results

    def _watch(self, runs: list[_Live], answer: served.Answer | None = None) -> None:
        """Feed, read and time the runs until every one has exited and its pipes are closed. With `answer` (a
        served call), also until the server answers or its deadline passes; then the runs are killed."""
        with selectors.DefaultSelector() as selector:
            if answer is not None and answer.pending:
                selector.register(answer.fd, selectors.EVENT_READ, (None, "answer"))
            for live in runs:
                for fd, kind in live.fds.items():
                    if kind == "stdin":
                        os.set_blocking(fd, False)
                        selector.register(fd, selectors.EVENT_WRITE, (live, kind))
                    else:
                        selector.register(fd, selectors.EVENT_READ, (live, kind))
            while not all(live.done for live in runs) or (answer is not None and answer.pending):
                now = time.monotonic()
                waits = [(lv.drain_until if lv.exited else lv.deadline) - now for lv in runs if not lv.done]
                if answer is not None and answer.pending:
                    waits.append(answer.deadline - now)
                for key, _ in selector.select(max(0.0, min(waits))):
                    if key.data[1] == "answer":
                        selector.unregister(key.fd)
                        answer.read()  # type: ignore[union-attr]
                    else:
                        self._on_event(selector, key.fd, *key.data)
                now = time.monotonic()
                # Before the runs' own deadlines (the same instant): a served call that runs out of time is
                # the tests' timeout, not the candidate's exit.
                if answer is not None and (answer.expire(now) or not answer.pending):
                    for live in runs:
                        if not live.exited:
                            self._kill(live, "peer finished")
                for live in runs:
                    if not live.exited and now >= live.deadline:
                        self._kill(live, "wall timeout")
                    elif live.exited and not live.done and now >= live.drain_until:
                        for fd in [fd for fd, kind in live.fds.items() if kind != "stdin"]:
                            self._close(selector, live, fd)
            for live in runs:
                for fd in list(live.fds):
                    self._close(selector, live, fd)

    def _on_event(self, selector: selectors.BaseSelector, fd: int, live: _Live, kind: str) -> None:
        if kind == "stdin":
            self._feed(selector, fd, live)
        elif kind == "exit":
            selector.unregister(fd)
            del live.fds[fd]
            live.status, live.cpu_s = live.handle.reap()
            live.exited = True
            live.drain_until = time.monotonic() + _DRAIN_S
            _drop_watch(live)
            self._sweep(live)
        else:
            data = os.read(fd, _CHUNK)
            if not data:
                self._close(selector, live, fd)
            else:
                self._take(live, kind, data)

    def _feed(self, selector: selectors.BaseSelector, fd: int, live: _Live) -> None:
        data = live.request.stdin
        try:
            live.stdin_sent += os.write(fd, data[live.stdin_sent:live.stdin_sent + _CHUNK])
        except (BrokenPipeError, BlockingIOError) as exc:
            if isinstance(exc, BlockingIOError):
                return
            live.stdin_sent = len(data)
        if live.stdin_sent >= len(data):
            self._close(selector, live, fd)

    def _take(self, live: _Live, kind: str, data: bytes) -> None:
        cap = live.request.limits.output_bytes
        if kind == "setup":
            live.setup_error += data
            return
        if kind == "result":
            if live.request.watches and not live.result and live.watch is None:
                live.watch = live.handle.hold_watch()
            room = cap - len(live.result)
            live.result += data[:max(0, room)]
            if live.request.on_result is not None and room > 0:
                live.request.on_result(data[:room])
        else:
            room = cap - len(live.stdout) - len(live.stderr)
            (live.stdout if kind == "stdout" else live.stderr).extend(data[:max(0, room)])
        if len(data) > room:
            live.truncated = True
            self._kill(live, "output limit")

    @staticmethod
    def _close(selector: selectors.BaseSelector, live: _Live, fd: int) -> None:
        if fd in live.fds:
            selector.unregister(fd)
            del live.fds[fd]
            os.close(fd)

    def _kill(self, live: _Live, reason: str) -> None:
        """Kill the whole run now: its leader, whose reaper then kills its process group (and, without a
        cgroup, its uid) before collecting it; and its cgroup. Never by pid: the leader may be collected
        already, its pid another process's."""
        if not live.killed_reason:
            live.killed_reason = reason
            live.timed_out = reason == "wall timeout"
        live.handle.kill()
        if live.cgroup:  # what left the process group; waiting for them to go is the exit's and release's job
            live.cgroup.signal_all()

    def _sweep(self, live: _Live) -> None:
        """Once the leader exited, kill every process of the run that is left, wherever it went (setsid, double
        fork). Without a cgroup, the run's reaper does it for a dedicated uid (child.reap_ready) before it
        reports the leader's exit."""
        if live.cgroup:
            live.cgroup.kill_all(leader_gone=True)

    def _finish(self, live: _Live) -> RunResult:
        _drop_watch(live)
        live.handle.close()
        # The OOM killer may have hit any process of the run, so ask the cgroup whenever the run failed.
        failed = live.status != 0
        memory_hit = bool(failed and live.cgroup and live.cgroup.memory_exceeded())
        self._release(live.who, live.stage, live.cgroup)
        code = os.waitstatus_to_exitcode(live.status)
        signum = -code if code < 0 else None
        reason = live.killed_reason
        # RLIMIT_CPU sends SIGXCPU at the soft limit (whole seconds), SIGKILL at the hard one (a second later).
        # A SIGXCPU after that much CPU is the limit even when the gate was about to kill the run for another
        # reason (a served call's tests may answer before the candidate's exit is read); one the program sent
        # itself earlier is not.
        spent_all = live.cpu_s >= rlimits.cpu_seconds(live.request.limits.cpu_s) * (1 - _CPU_SLACK)
        if (signum == signal.SIGXCPU and spent_all) or (
                not reason and signum == signal.SIGKILL and live.cpu_s >= live.request.limits.cpu_s):
            reason = "cpu limit"
        elif not reason and memory_hit:
            reason = "memory limit"
        return RunResult(
            exit_code=None if signum is not None else code, signal=signum, timed_out=live.timed_out,
            stdout=bytes(live.stdout), stderr=bytes(live.stderr), result=bytes(live.result) or None,
            output_truncated=live.truncated, killed_reason=reason, wall_s=time.monotonic() - live.start)

    def _release(self, who: users.Identity | None, where: Path | None, cgroup: CgroupRun | None) -> None:
        if cgroup:
            cgroup.kill_all()  # empty before its uid (and so the cgroup) goes to the next run
        if where is not None:
            stage.remove(where)
            for beside in (interpreter.home(str(where), mountns=False), account.home(str(where), mountns=False)):
                stage.clear(beside)  # (a run without a mount namespace's)
        if who and self.layers.uids:
            self.layers.uids.release(who)


def _drop_watch(live: _Live) -> None:
    """Close the run's inotify instance the gate holds, in a thread of its own: that close frees the watches
    and waits for the kernel's grace period (RunRequest.watches)."""
    if live.watch is not None:
        threading.Thread(target=os.close, args=(live.watch,), name="gate-watch-close", daemon=True).start()
        live.watch = None
