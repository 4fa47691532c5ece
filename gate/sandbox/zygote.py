"""Backend "zygote": fork each run from a warm interpreter (a few times cheaper than a new
interpreter per run: docs/benchmarks.md).

One zygote per hash seed: a forked child keeps its parent's hash seed, so a run asking for another
PYTHONHASHSEED needs a zygote started with it. A zygote is started with nothing of the gate's environment.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from gate.errors import GateFailure
from gate.sandbox import _libc
from gate.sandbox.child import EXIT, STARTED
from gate.sandbox.launcher import Handle, stop
from gate.sandbox.stage import MINIMAL_PATH

if TYPE_CHECKING:
    from gate.sandbox.child import ChildConfig, SharedConfig, WarmConfig

# argv: the control socket's descriptor, the seccomp filter's BPF program in hex ("-" without the layer), the
# import paths.
_BOOT = ("import sys; sys.path[:0] = sys.argv[3:]; from gate.sandbox.zygote_server import serve; "
         "serve(int(sys.argv[1]), None if sys.argv[2] == '-' else bytes.fromhex(sys.argv[2]))")
# Zygotes kept at once (a case usually runs under two seeds); the oldest is stopped beyond that.
MAX_ZYGOTES = 4
# Every zygote is started from this one long-lived thread: a zygote's PR_SET_PDEATHSIG fires when the *thread*
# that started it exits, and runs, sandboxes and `start_ahead` may come from short-lived threads.
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gate-zygote-spawner")
# Zygotes started ahead of any sandbox (`start_ahead`), by (interpreter, import paths, filter, hash seed).
_Key = tuple[str, tuple[str, ...], bytes | None, int]
_AHEAD: dict[_Key, Future[_Zygote]] = {}
_AHEAD_LOCK = threading.Lock()


def start_ahead(interpreter: str, import_paths: Sequence[str], seccomp_program: bytes | None,
                hash_seeds: Sequence[int]) -> None:
    """Start zygotes for `hash_seeds` before any sandbox asks for them, so that their interpreters start while
    the gate reads its input: a launcher of the same interpreter, paths and filter takes them instead of
    starting its own. `stop_ahead` stops those that none took."""
    with _AHEAD_LOCK:
        for seed in hash_seeds[:MAX_ZYGOTES]:  # (a launcher keeps no more)
            key = (interpreter, tuple(import_paths), seccomp_program, seed)
            if key not in _AHEAD:
                _AHEAD[key] = _SPAWNER.submit(_Zygote, interpreter, import_paths, seed, seccomp_program)


def share_ahead(interpreter: str, import_paths: Sequence[str], seccomp_program: bytes | None, hash_seed: int,
                shared: SharedConfig) -> None:
    """Have the zygote `start_ahead` started for `hash_seed` make `shared` now (zygote_server.make_shared),
    before the sandbox that takes it opens; nothing when there is none."""
    with _AHEAD_LOCK:
        starting = _AHEAD.get((interpreter, tuple(import_paths), seccomp_program, hash_seed))
    if starting is not None:
        _SPAWNER.submit(_told, starting, shared)


def _told(starting: Future[_Zygote], shared: SharedConfig) -> None:
    """(On the spawner, after the start it waits for.)"""
    if starting.exception() is None:
        starting.result().share(shared)


def _made_ready(zygote: Future[_Zygote] | _Zygote, shared: SharedConfig, ready: WarmConfig) -> None:
    """(On the spawner, after the start it waits for.)"""
    if isinstance(zygote, Future):
        if zygote.exception() is not None:
            return
        zygote = zygote.result()
    zygote.ready(shared, ready)


def stop_ahead() -> None:
    """Stop the zygotes `start_ahead` started that no launcher took (told all at once: they exit side by side)."""
    with _AHEAD_LOCK:
        left = [starting.result() for starting in _AHEAD.values() if starting.exception() is None]
        _AHEAD.clear()
    for zygote in left:
        zygote.control.close()
    for zygote in left:
        zygote.stop()


def _after_fork_in_child() -> None:
    """A forked gate process has no spawner thread (the executor would wait for it for ever) and does not own
    its parent's zygotes: a spawner of its own, and none started ahead."""
    global _SPAWNER, _AHEAD_LOCK
    _SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gate-zygote-spawner")
    _AHEAD_LOCK = threading.Lock()  # (another thread may have held it at the fork)
    _AHEAD.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _taken_ahead(key: _Key) -> Future[_Zygote] | None:
    """The zygote started ahead for `key`, taken (no other launcher gets it), or None."""
    with _AHEAD_LOCK:
        return _AHEAD.pop(key, None)


def _adopted(ahead: Future[_Zygote], key: _Key, shared: SharedConfig | None) -> _Zygote:
    """The zygote started ahead, told `shared`; a new one if it did not start or has died. (On the spawner,
    after the start it waits for.)"""
    zygote = ahead.result() if ahead.exception() is None else None
    if zygote is not None and zygote.process.poll() is None:
        if shared is not None:
            zygote.share(shared)
        return zygote
    if zygote is not None:
        zygote.stop()
    interpreter, paths, seccomp, seed = key
    return _Zygote(interpreter, paths, seed, seccomp, shared)


def read_exact(fd: int, size: int) -> bytes:
    """Read `size` bytes from a blocking descriptor, or fewer at end of file."""
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def status_pair() -> tuple[int, int]:
    """A run's status socket: (the gate's end, the reaper's end)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return ours.detach(), theirs.detach()


class StatusHandle:
    """A run leader forked by a reaper (a zygote, or a fresh interpreter's first process), known by the status
    socket on which the reaper sends a pidfd of it and, later, reports its exit."""

    def __init__(self, status_fd: int, who: str) -> None:
        self.exit_fd = status_fd
        raw, fds = b"", list[int]()
        try:
            with socket.socket(fileno=os.dup(status_fd)) as status:
                raw, fds, _, _ = socket.recv_fds(status, len(STARTED), 1)
        except OSError:
            pass
        if raw != STARTED or len(fds) != 1:
            for fd in (*fds, status_fd):
                os.close(fd)
            raise GateFailure(f"the sandbox's {who} died before starting the run, or its run cannot be killed "
                              "(no pidfd of it came)")
        self._pidfd = fds[0]
        os.set_inheritable(self._pidfd, False)  # (recv_fds leaves it inheritable)

    def kill(self) -> None:
        """See launcher.Handle: through the pidfd, which never names another process."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)

    def hold_watch(self) -> int | None:
        """See launcher.Handle. The leader is found through its pidfd, which never names another process: a pid
        taken by another process since fails the last call."""
        try:
            with open(f"/proc/self/fdinfo/{self._pidfd}") as info:
                pid = next(int(line.split()[1]) for line in info if line.startswith("Pid:"))
            for name in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{name}") == "anon_inode:inotify":
                    return _libc.pidfd_getfd(self._pidfd, int(name))
        except (OSError, StopIteration, ValueError):  # (gone, not traceable, or a kernel before 5.6)
            pass
        return None

    def reap(self) -> tuple[int, float]:
        """See launcher.Handle (the reaper killed the leader's group before reaping it)."""
        raw = read_exact(self.exit_fd, EXIT.size)
        if len(raw) != EXIT.size:
            raise GateFailure("the sandbox's reaper died during a run")
        status, cpu = EXIT.unpack(raw)
        return int(status), float(cpu)

    def close(self) -> None:
        """Release the status socket and the pidfd."""
        os.close(self.exit_fd)
        os.close(self._pidfd)


class _Zygote:
    def __init__(self, interpreter: str, paths: Sequence[str], hash_seed: int, bpf: bytes | None,
                 shared: SharedConfig | None = None) -> None:
        """Start a zygote; with `shared`, it makes what its runs share (zygote_server.make_shared) at once,
        before the first run asks."""
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {"PATH": MINIMAL_PATH, "LANG": "C.UTF-8", "PYTHONHASHSEED": str(hash_seed),
               "PYTHONDONTWRITEBYTECODE": "1"}
        self.compiled: set[str] = set()  # the sha256 of each harness source sent to it (it compiles and keeps them)
        self.process = subprocess.Popen(
            [interpreter, "-s", "-S", "-P", "-c", _BOOT, str(theirs.fileno()), "-" if bpf is None else bpf.hex(),
             *paths],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, pass_fds=(theirs.fileno(),), env=env,
            start_new_session=True, close_fds=True)
        theirs.close()
        if shared is not None:
            self.share(shared)

    def share(self, shared: SharedConfig) -> None:
        """Have it make what its runs share (zygote_server.make_shared) now, before the first run asks."""
        with contextlib.suppress(OSError):  # (it died: the first launch finds out, and starts another)
            self.control.send(json.dumps({"shared": shared}).encode())

    def ready(self, shared: SharedConfig, ready: WarmConfig) -> None:
        """Have it make `shared` and `ready` now (zygote_server.make_ready), before the runs that share them
        ask; only the harness sources it was not sent yet."""
        new = {digest: text for digest, text in ready["harness_sources"].items() if digest not in self.compiled}
        with contextlib.suppress(OSError):  # (it died: the next launch finds out, and starts another)
            self.control.send(json.dumps({"ready": {**ready, "harness_sources": new}, "shared": shared}).encode())
            self.compiled.update(new)

    def stop(self) -> None:
        self.control.close()
        stop(self.process)


class ZygoteLauncher:
    """Starts runs by asking a warm zygote (one per hash seed, started on first use) to fork."""

    def __init__(self, interpreter: str, import_paths: Sequence[str], seccomp_program: bytes | None) -> None:
        """`seccomp_program`: the filter every run loads (see gate/sandbox/seccomp.py), None without it."""
        self._interpreter = interpreter
        self._paths = list(import_paths)
        self._seccomp = seccomp_program
        self._zygotes: dict[int, _Zygote] = {}
        self._starting: dict[int, Future[_Zygote]] = {}  # (prepare: started, not used yet)
        self._readying: dict[int, Future[None]] = {}  # (warm: told what to make, by seed)
        self._lock = threading.Lock()

    def prepare(self, hash_seeds: Sequence[int], shared: SharedConfig) -> None:
        """Start the zygotes for `hash_seeds` (as many as are kept at once) without waiting for them: their
        interpreters start, import, and make what the runs share (`shared`: their network namespace, mount
        template and framework) while the gate reads the code, instead of when its first run asks."""
        with self._lock:
            for seed in hash_seeds:
                if seed not in self._zygotes and seed not in self._starting \
                        and len(self._zygotes) + len(self._starting) < MAX_ZYGOTES:
                    key = self._key(seed)
                    ahead = _taken_ahead(key)
                    self._starting[seed] = (
                        _SPAWNER.submit(_adopted, ahead, key, shared) if ahead is not None else
                        _SPAWNER.submit(_Zygote, self._interpreter, self._paths, seed, self._seccomp, shared))

    def warm(self, hash_seeds: Sequence[int], shared: SharedConfig, ready: WarmConfig) -> None:
        """See launcher.Launcher.warm: told on the spawner, after the start (`prepare`'s) it waits for, and
        before the next launch under the seed."""
        with self._lock:
            for seed in hash_seeds:
                zygote = self._starting.get(seed) or self._zygotes.get(seed)
                if zygote is not None:
                    self._readying[seed] = _SPAWNER.submit(_made_ready, zygote, shared, ready)

    def _zygote(self, hash_seed: int) -> _Zygote:
        with self._lock:
            readying = self._readying.pop(hash_seed, None)
            if readying is not None:  # (told before this run: a run after `warm` finds what it made)
                readying.exception()  # (waits; a run never depends on it: what failed there is the run's to meet)
            zygote = self._zygotes.pop(hash_seed, None)
            starting = self._starting.pop(hash_seed, None)
            if starting is not None:
                zygote = starting.result()
            ahead = _taken_ahead(self._key(hash_seed)) if zygote is None else None
            if ahead is not None:
                zygote = _SPAWNER.submit(_adopted, ahead, self._key(hash_seed), None).result()
            if zygote is None or zygote.process.poll() is not None:
                zygote = _SPAWNER.submit(_Zygote, self._interpreter, self._paths, hash_seed,
                                         self._seccomp).result()
            self._zygotes[hash_seed] = zygote  # most recently used last
            if len(self._zygotes) > MAX_ZYGOTES:
                # Its runs keep going: a zygote whose control socket closes finishes them, then exits.
                self._zygotes.pop(next(iter(self._zygotes))).control.close()
            return zygote

    def launch(self, config: ChildConfig, sources: Sequence[int], hash_seed: int) -> Handle:
        """Send the config and descriptors to the zygote for `hash_seed`; returns once the leader is forked.
        The config carries only the harness sources this zygote has not been sent yet (it keeps their code)."""
        status_r, status_w = status_pair()
        try:
            zygote = self._zygote(hash_seed)
            new = {digest: text for digest, text in config["harness_sources"].items()
                   if digest not in zygote.compiled}
            message = json.dumps({**config, "harness_sources": new}).encode()
            socket.send_fds(zygote.control, [message], [*sources, status_w])
            zygote.compiled.update(new)  # (once sent: a run sent after this finds the code there first)
        except OSError as exc:
            os.close(status_r)
            raise GateFailure(f"the sandbox's zygote is gone: {exc}") from exc
        finally:
            os.close(status_w)
        return StatusHandle(status_r, "zygote")

    def close(self) -> None:
        """Stop every zygote (told all at once: they finish their runs and exit side by side)."""
        with self._lock:
            for seed, starting in self._starting.items():  # (started, never used)
                if starting.exception() is None:
                    self._zygotes[seed] = starting.result()
            self._starting.clear()
            for readying in self._readying.values():  # (told, not sent yet: sent before the socket closes)
                readying.exception()
            self._readying.clear()
            for zygote in self._zygotes.values():
                zygote.control.close()
            for zygote in self._zygotes.values():
                zygote.stop()
            self._zygotes.clear()

    def _key(self, hash_seed: int) -> _Key:
        return (self._interpreter, tuple(self._paths), self._seccomp, hash_seed)
