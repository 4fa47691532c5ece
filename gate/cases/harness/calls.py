"""Serve many `call` cases in one run, each as a run of its own (`call.py`) would have gone, or not at all.

Request on stdin (JSON): {"calls": [{"module", "function", "args", "tripwire": the gate's, on a call it made one
(wire.call)}, ...] (those of one module together), "cpu":
a case's CPU seconds, "wall": a case's wall seconds, "cut": the wall seconds after which a case is not served
here, "import_cut": the same for a module's import, "output": the bytes a case may print, "record": the bytes
of its record, "private": whether the run has a /tmp and System V IPC of its own, "core": the core the run's
processes stay on, or null}. The expected values are not in it.

Each module is imported in a process of its own, forked from this one, which has imported nothing of the candidate;
each case calls its function in a fork of that process, and the last one in that process itself, which has no case
left to fork for (this process then watches and judges it as that process judges a fork; its call sees what a fork's
would, but for what the forks before it spent, `resource.RUSAGE_CHILDREN`, and its process's own age and CPU, as in
a run of its own). So a case starts from the state a run of its own would have after the import (the cores it may
use and the `random` module's generator, which a fork resets, set back), and no case sees what another did in
memory. A case is served only when its process ended by itself, in time (`cut`, and what is left of `wall`, `cpu`
and `output` once its module's import is counted), with a whole record, and left nothing behind: no process, no
change in the working directory (nor in /tmp, /var/tmp and /dev/shm when they are the run's own), no System V IPC
object. Anything else is for the gate to judge in a run of its own, where its limits apply as they always do: the
first case not served is reported `alone` and the serving ends. A case that left something behind is served, and the
serving ends after it; so does a module whose import left something (a folder it made is watched from then on). A
module whose import left what its cases' processes would all share (a process, an open descriptor, a shared memory
map) or would not have (a thread, a timer) has each case reported `alone`. The gate serves the cases not reached in
a new run, which no case has touched.

Once imported, the candidate runs the module's process (it can replace this program's functions there), so
that process has no more than a run of its own: `cpu` of CPU and `wall` in all (killed for it, its cases are
for runs of their own); one that has had half of that stops before its next case, and a new one imports the
module again for the rest (or, when the import left something, the rest are not reached). This process can
be held too (a signal from the candidate stops it): when a module's process outlived its time as seen from
here, this one exits 4, and the gate takes nothing from the run.

Outcome lines on the result channel (JSON, in the order of `calls`): {"i": index, "record": call.py's record,
"seconds": the import's and the call's wall time} or {"i": index, "alone": true, "cut": whether it went on
past `cut`}; a case with no line was not reached. The candidate can write on the channel itself, as in
call.py: then it only says what its function could have returned.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import importlib
import math
import mmap
import os
import resource
import select
import signal
import struct
import sys
import termios
import time
from json import dumps, loads  # bound before the candidate's import, which may patch the json module's
from typing import Any, NoReturn

import _gate_tree as tree
import _gate_wire as wire

RESULT_FD_ENV = "GATE_RESULT_FD"
_PRIVATE = ("/tmp", "/var/tmp", "/dev/shm")  # the run's own places to write, besides its directory (mountns)
_PR_SET_CHILD_SUBREAPER = 36
_LIBC = ctypes.CDLL(None, use_errno=True)  # inotify and prctl, which the os module lacks
# How a module's process ends: every case served, the serving ends here, or a new process goes on from here.
_SERVED, _STOPPED, _MORE = 0, 3, 5
# This process's exit when a module's process outlived its time: this one was held (stopped by a signal from
# the candidate), so whatever is on the result channel may have taken longer than a run of its own has.
_OVERRAN = 4
_OVERRUN_S = 0.25  # how late this process may see a module's process end before it counts as held
# A case that used this share of its CPU limit is judged under the exact limit, in a run of its own.
_CPU_SHARE = 0.5
_ALL_CHILDREN = 0x40000000  # __WALL: a child made by clone(2) with no exit signal is a child too
# inotify: IN_MODIFY, IN_ATTRIB, IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE, IN_DELETE_SELF, IN_MOVE_SELF.
# (Not IN_CLOSE_WRITE: a file opened for writing and left as it was, as SQLite opens a database to read it, would
# end the serving after each case; a file written through a shared memory map raises none of these.)
_CHANGES = 0x2 | 0x4 | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800
# What a module's process tells the serving process: its import is done; it becomes its last case's process,
# with what the import spent, its CPU seconds so far and the time.
_IMPORTED, _LAST = b"1", b"2"
_SPENT = struct.Struct("<ddddd")  # the import's wall and CPU seconds, bytes printed; CPU seconds so far; the time
_SAID = 2 + _SPENT.size  # (all it says)
_MOST_SIGNALS = 100_000  # (a queue of real-time signals holds at most RLIMIT_SIGPENDING of them)
_EVERY_CORE = os.sched_getaffinity(0)  # the cores a run may use (a served run keeps each process on one: _keep_on)
_STANDARD_RANDOM = os.path.join(os.path.dirname(os.__file__), "random.py")  # (_AfterImport)


# call.py imports a module and calls a function as many frames below its `main` as this program does (its
# _IMPORT_DEPTH and _CALL_DEPTH): keep them in step with the functions between `main` and those two calls.
def main() -> None:
    result = int(os.environ.pop(RESULT_FD_ENV))
    request = loads(sys.stdin.read())
    calls = request["calls"]
    private = request["private"]
    _keep_on(request["core"])
    watch = _Watch(["."] + (list(_PRIVATE) if private else []))
    _adopt_orphans()
    pristine = _ipc(private)
    start = 0
    while start < len(calls):
        end = start
        while end < len(calls) and calls[end]["module"] == calls[start]["module"]:
            end += 1
        served = _module_process(request, start, end, result, watch, pristine)
        if served is None:
            os._exit(_OVERRAN)
        if not served or _left_a_process() or _ipc(private) != pristine:
            break
        start = end
    os._exit(0)


class _Watch:
    """Whether anything changed in the places a case could leave a file for the next one (inotify on every
    directory there now: a new one is a change in its parent). Without inotify, everything counts as a
    change, so that each run serves one case. Made before the first outcome line: from it on, the gate holds
    the instance too (RunRequest.watches), so that this process's exit does not wait for the watches to go."""

    def __init__(self, tops: list[str]) -> None:
        self.tops = tops
        self.fd = -1
        try:
            self.fd = _LIBC.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except AttributeError:
            return
        self.extend()

    def extend(self) -> None:
        """Watch every directory there now (those watched already stay as they are)."""
        try:
            for top in self.tops:
                for folder, _, _ in os.walk(top):
                    if self.fd < 0 or _LIBC.inotify_add_watch(self.fd, folder.encode(), _CHANGES) < 0:
                        raise OSError(ctypes.get_errno(), folder)
        except OSError:
            if self.fd >= 0:
                os.close(self.fd)
            self.fd = -1

    def changed(self) -> bool:
        """Whether anything changed since the last call."""
        if self.fd < 0:
            return True
        seen = False
        while True:
            try:
                seen = bool(os.read(self.fd, 65536)) or seen
            except BlockingIOError:
                return seen
            except OSError:
                return True


def _module_process(request: dict[str, Any], start: int, end: int, result: int, watch: _Watch,
                    ipc: tuple[bytes, ...]) -> bool | None:
    """Serve calls[start:end] (one module) in a fork, or in forks one after another when one has had half of
    a run's time (each imports the module afresh, only where the one before left nothing: no process, file or
    System V IPC object beyond the run's `ipc`); whether the serving may go on after them, or None when a fork
    outlived its time (this process was held)."""
    while True:
        forked = _module_fork(request, start, end, result, watch)
        if forked is None:
            return None
        code, served = forked
        if code != _MORE:
            return code == _SERVED and not watch.changed()
        if _left_a_process() or watch.changed() or _ipc(request["private"]) != ipc:  # (the next would see it)
            return False
        start += served


def _module_fork(request: dict[str, Any], start: int, end: int, result: int, watch: _Watch
                 ) -> tuple[int | None, int] | None:
    """Serve calls[start:end] (one module) in a fork: how it ended (None: killed) and how many cases it gave a
    line; None when it outlived its time (this process was held). The import may take `import_cut`, each case
    then at most `cut` and the time its process takes to go, and the whole no more than `wall` (what a run of
    its own has: the candidate runs that process once it is imported); a process that takes longer is killed,
    and its cases left to runs of their own."""
    done = mmap.mmap(-1, 8)  # shared with the fork: how many of its cases have their line
    # What the fork says as it goes: _IMPORTED once the module is imported; then _LAST and what the import spent
    # (_SPENT) when it becomes its last case's process (`_serve_last`), whose output and record go to `last`.
    opened: list[int] = []  # (closed on every way out)
    try:
        ready, said = os.pipe()
        opened += (ready, said)
        relayed, lines = os.pipe()
        opened += (relayed, lines)
        last = (_grow_only("gate-case-output"), _grow_only("gate-case-record"))
        opened += last
        pid = os.fork()
        if pid == 0:
            exit_code = 1
            try:
                os.close(ready)
                os.close(relayed)
                os.dup2(lines, result)  # (its lines' descriptor where the run's channel was: never the channel)
                os.close(lines)
                exit_code = _serve_module(request, start, end, result, watch, done, said, last)
            finally:
                os._exit(exit_code)
        for fd in (said, lines):
            opened.remove(fd)
            os.close(fd)
        began = time.monotonic()
        deadline = began + min(request["import_cut"] + (end - start) * (request["cut"] + 1) + 1, request["wall"])
        in_time, became, import_left = _watch_fork(request, pid, ready, relayed, result, began, deadline)
        if not in_time or import_left:
            for kill in (os.killpg, os.kill) if became else (os.kill,):  # (a case's process leads its group)
                with contextlib.suppress(OSError):
                    kill(pid, signal.SIGKILL)
        _, status, usage = os.wait4(pid, 0)
        if not import_left:  # what it wrote before it ended, not what a process it left writes after
            _relay(relayed, result, _buffered(relayed))
        if time.monotonic() > deadline + _OVERRUN_S:
            return None
        if import_left:  # (a process not its own: the serving ends, and the cases whose lines were not passed
            # on are not reached, for a new run, or one of their own when a run serves none: gate/cases/schedule.py)
            return _STOPPED, 0
        code = os.waitstatus_to_exitcode(status) if in_time else None
        served = int.from_bytes(done[:8], "little")
        if became is not None and in_time and code is not None and served == end - start - 1:
            # The fork was its last case's process: judged here as a fork of it would be (_serve_case).
            cpu = usage.ru_utime + usage.ru_stime - became[1][3]
            record = _judged(request, code, cpu, became[1][:3], *last)
            seconds = round(became[1][0] + time.monotonic() - became[0], 6)
            _line(result, {"i": end - 1, "alone": True, "cut": False} if record is None else
                  {"i": end - 1, "record": record, "seconds": seconds})
            return (_STOPPED if record is None else _SERVED), served + 1
        if code == _MORE and not served:  # (never from this program, which serves a case before it stops)
            code = None
        if code not in (_SERVED, _STOPPED, _MORE):  # the import ended the process, or it was killed
            for index in range(start + served, end):
                _line(result, {"i": index, "alone": True, "cut": index == start + served and not in_time})
        return code, served
    finally:
        for fd in opened:
            os.close(fd)


def _watch_fork(request: dict[str, Any], pid: int, ready: int, relayed: int, result: int, began: float,
                deadline: float) -> tuple[bool, tuple[float, tuple[float, ...]] | None, bool]:
    """Wait for a module's process (`pid`, saying how it goes on `ready`) to end, relaying
    its lines (`relayed`) to the run's channel (`result`) as they come: whether it ended in time (its import
    within `import_cut`, the whole by `deadline`, and the last case, once the process became its process,
    within `cut`), when it became that case's process, with what the import spent, and whether a process not its
    own was left to this one (then this returns at once, and relays nothing more)."""
    handle = os.pidfd_open(pid)
    os.set_blocking(ready, False)
    os.set_blocking(relayed, False)
    heard, became, limit = b"", None, began + request["import_cut"]
    listening = True  # until it has said all it says, or closed its end (the candidate runs that process)
    relaying = [handle, relayed]
    try:
        while True:
            readable = select.select([*relaying, ready] if listening else relaying, [], [],
                                     max(0.0, limit - time.monotonic()))[0]
            # A process that is not that process's child (its import stopped it adopting what its children
            # leave, and a double fork's is this one's then): the cases would share it. Looked for at every wake,
            # before any line passes: nothing that process says can put it off.
            if _stranger(pid):
                return True, became, True
            with contextlib.suppress(BlockingIOError):
                while listening:
                    piece = os.read(ready, _SAID - len(heard))
                    heard += piece
                    listening = bool(piece) and len(heard) < _SAID
            if relayed in readable and not _relay(relayed, result):
                relaying.remove(relayed)  # (every writer closed it)
            if heard[:1] == _IMPORTED and became is None:
                limit = deadline
            if became is None and len(heard) >= _SAID and heard[:2] == _IMPORTED + _LAST:
                *spent, at = _SPENT.unpack(heard[2:_SAID])
                became = (min(max(at, began), time.monotonic()), tuple(spent))
                limit = min(deadline, became[0] + min(request["cut"], request["wall"] - spent[0]))
            if not readable or handle in readable:
                return bool(readable), became, False
    finally:
        os.close(handle)


def _relay(relayed: int, result: int, most: int | None = None) -> bool:
    """Pass on to the run's channel what a module's process has written on its own so far (as it wrote it: a
    forged or half line reads to the gate as it would have on the channel itself), or `most` bytes of it;
    False once every writer closed it."""
    try:
        while (most is None or most > 0) and (piece := os.read(relayed, 65536 if most is None else min(most, 65536))):
            most = None if most is None else most - len(piece)
            left = memoryview(piece)
            while left:
                left = left[os.write(result, left):]
    except BlockingIOError:
        return True
    return most is not None


def _buffered(relayed: int) -> int:
    """How many bytes wait in the pipe `relayed` now."""
    return int.from_bytes(fcntl.ioctl(relayed, termios.FIONREAD, bytes(4)), sys.byteorder, signed=True)


def _stranger(pid: int) -> bool:
    """Whether this process has a child other than `pid`, running or ended and not collected, or may have one:
    without /proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN) nothing here tells (the run's /proc shows no
    other process: hidepid), and an unknown child counts as one."""
    try:
        with open(f"/proc/self/task/{os.getpid()}/children") as listed:
            return bool({int(child) for child in listed.read().split()} - {pid})
    except FileNotFoundError:
        return True


def _grow_only(name: str) -> int:
    """A memory file that can grow but never shrink, nor be sealed otherwise, written at its end whatever the
    offset (O_APPEND, which `_appending` checks is still set): what a case printed or recorded is measured by its
    size, which the case's own `ftruncate` must not take back, nor a seek or `pwrite` print over."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)
        fcntl.fcntl(fd, fcntl.F_SETFL, os.O_APPEND)
    except OSError:
        os.close(fd)
        raise
    return fd


def _appending(fd: int) -> bool:
    """Whether `fd`'s open file is still written at its end (a case or an import can clear O_APPEND)."""
    return bool(fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_APPEND)


def _serve_module(request: dict[str, Any], start: int, end: int, result: int, watch: _Watch,
                  done: mmap.mmap, said: int, last: tuple[int, int]) -> int:
    output = _grow_only("gate-output")  # what the import prints counts against each case's output
    os.dup2(output, 1)
    os.dup2(output, 2)
    os.close(output)
    _limit_cpu(request["cpu"])  # the candidate runs this process: a run's own CPU limit
    _adopt_orphans()  # (before the import: a process it leaves, however it leaves it, is this one's child)
    held = _held(said)
    began, cpu_began = time.monotonic(), _cpu()
    module = request["calls"][start]["module"]
    tree.enter()  # (only in this fork: the process that serves the cases imports nothing of the tree's)
    _keep_on(None)  # (the import sees the cores a run of its own has)
    try:
        loaded: Any = importlib.import_module(module)
        failure = None
    except BaseException as exc:
        loaded, failure = None, {"load": wire.describe(exc)}
    spent = (time.monotonic() - began, _cpu() - cpu_began, os.fstat(1).st_size)
    # From here on no handler the import set runs in this process, which every case is a fork of: a signal (a
    # case's to its parent, SIGCHLD as each case ends) waits, and is dropped before the last case
    # (_no_signal_pending); each case's process takes signals as the import left it to (_AfterImport).
    imported_mask = _block_every_signal()
    _adopt_orphans()  # (the import may have stopped it: what a case's children leave is then seen all the same)
    after = _AfterImport(imported_mask)
    _keep_on(request["core"])  # (its cases' processes start on this core; each call then sees the import's)
    os.write(said, _IMPORTED)
    import_left_traces = watch.changed()
    if import_left_traces:
        watch.extend()  # a folder the import made: what a case writes there is a trace as anywhere else
    ipc = _ipc(request["private"])
    # Its cases' processes would not have the import's threads nor its timers; and they would all share a
    # process it left (even one that has ended: its status is for one of them to collect), a descriptor it holds
    # open (a case reaches it through /proc), a memory map it shares: what one case did there, the next would see.
    if len(os.listdir("/proc/self/task")) > 1 or _has_a_child() or _kept(held, said) or not _appending(1):
        for index in range(start, end):
            _line(result, {"i": index, "alone": True}, done)
        return _STOPPED
    for index in range(start, end):
        if index > start and time.monotonic() - began > request["wall"] / 2:
            return _STOPPED if import_left_traces else _MORE  # (a new import would see what this one left)
        call = request["calls"][index]
        record = failure
        if record is None:
            try:
                function = getattr(loaded, call["function"])
            except BaseException as exc:
                record = {"load": wire.describe(exc)}
        if record is not None:  # what a run of its own would say: the call never starts
            _line(result, {"i": index, "record": record, "seconds": round(spent[0], 6)}, done)
            continue
        if index == end - 1 and not import_left_traces and _no_signal_pending():
            _serve_last(request, function, call, spent, after, result, done, said, last)
        served = _serve_case(request, function, call, spent, after, result, done)
        if not isinstance(served, tuple):
            _line(result, {"i": index, "alone": True, "cut": served == "cut"}, done)
            return _STOPPED
        _line(result, {"i": index, "record": served[0], "seconds": round(spent[0] + served[1], 6)}, done)
        if watch.changed() or _left_a_process() or _ipc(request["private"]) != ipc:
            return _STOPPED
    return _STOPPED if import_left_traces else _SERVED


def _serve_case(request: dict[str, Any], function: Any, call: dict[str, Any], spent: tuple[float, float, int],
                after: _AfterImport, result: int, done: mmap.mmap) -> tuple[dict[str, Any], float] | str:
    """(record, wall seconds) of one call in a fork; or "alone" when it is for a run of its own to judge, "cut"
    when that is because it went on past `cut`."""
    imported_s, imported_cpu, _ = spent
    output = _grow_only("gate-case-output")
    channel = _grow_only("gate-case-record")
    began = time.monotonic()
    try:
        pid = os.fork()
        if pid == 0:
            try:
                done.close()  # (shared with every case's process: one case could leave the next a note in it)
                _case_process(request, function, call, imported_cpu, after, output, channel, result)
            finally:
                os._exit(1)
        waited = _wait(pid, began + min(request["cut"], request["wall"] - imported_s) - time.monotonic())
        seconds = time.monotonic() - began
        if waited is None:
            return "cut"
        record = _judged(request, *waited, spent, output, channel)
        return "alone" if record is None else (record, seconds)
    except OSError:
        return "alone"
    finally:
        os.close(output)
        os.close(channel)


def _serve_last(request: dict[str, Any], function: Any, call: dict[str, Any], spent: tuple[float, float, int],
                after: _AfterImport, result: int, done: mmap.mmap, said: int, last: tuple[int, int]) -> NoReturn:
    """Become the process of the module's last case (this process ends after it: a fork would only copy it to
    throw it away), as a fork of it would be (`_case_process`, at the same depth): the serving process, told
    so, takes the fork's place for it (`_module_fork`), and writes its line."""
    done.close()  # (as a fork closes it: the case sees no shared map of the harness's)
    # A fork is no subreaper: the orphans of its children go to this run's harness, which looks for them.
    _LIBC.prctl(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
    # Nor does a fork's process count have this process beside it: one process less, as a fork has.
    soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    if soft != resource.RLIM_INFINITY:
        resource.setrlimit(resource.RLIMIT_NPROC, (max(0, soft - 1), hard))
    # (the CPU this process and the forks it collected spent so far: the serving process's wait counts both)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    os.write(said, _LAST + _SPENT.pack(*spent, _cpu() + children.ru_utime + children.ru_stime, time.monotonic()))
    # Its CPU limit stays this process's, a run's own (a limit is never raised): a fork's is that less what the
    # import spent, to the whole second; a case that uses half of it is judged alone either way.
    _case_process(request, function, call, 0.0, after, *last, result)


def _no_signal_pending() -> bool:
    """Take every signal pending for this process (all are blocked after the import: SIGCHLD of the forks before,
    one a case sent its parent), as a fork has none, and say whether that left none: then this process may be the
    last case's (`_serve_last`); one that keeps coming leaves that case to a fork."""
    for _ in range(_MOST_SIGNALS):
        pending = signal.sigpending()
        if not pending:
            return True
        if signal.sigtimedwait(pending, 0) is None:
            break
    return not signal.sigpending()


def _judged(request: dict[str, Any], status: int, cpu: float, spent: tuple[float, ...], output: int,
            channel: int) -> dict[str, Any] | None:
    """The record of a case whose process ended with `status` after `cpu` seconds of CPU, its output in
    `output` and its record in `channel` (the import having spent `spent`: wall and CPU seconds, bytes printed);
    None when a run of its own must judge it."""
    _, imported_cpu, printed = spent[:3]
    try:
        if (status != 0 or cpu + imported_cpu >= request["cpu"] * _CPU_SHARE
                or os.fstat(output).st_size + printed > request["output"]
                or os.fstat(channel).st_size > request["record"] or not (_appending(output) and _appending(channel))):
            return None
        record = loads(os.pread(channel, request["record"], 0))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(record, dict) or record.get("raised") in ("MemoryError", "RecursionError"):
        return None  # at a limit's edge: a run of its own has a little more or less room
    return record


def _case_process(request: dict[str, Any], function: Any, call: dict[str, Any], imported_cpu: float,
                  after: _AfterImport, output: int, channel: int, result: int) -> NoReturn:
    """In the case's own process: the state the import left (`after`), its output and its record to files of
    their own, its CPU limit, the call (a tripwire's, when the gate made it one: wire.call)."""
    os.setpgid(0, 0)
    after.restore()
    os.dup2(output, 1)
    os.dup2(output, 2)
    os.dup2(channel, result)  # the record goes where a run of its own writes it
    os.closerange(3, result)
    os.closerange(result + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
    _limit_cpu(request["cpu"] - imported_cpu)
    answer = wire.call(function, call["args"], call.get("tripwire"))
    os.write(result, dumps(answer).encode())
    os._exit(0)


def _held(*skip: int) -> tuple[list[tuple[str, str]], list[str], list[bool]]:
    """This process's open descriptors but `skip` (each with what it is), its shared memory maps, which of its
    timers are set, and whether a signal is pending (a fork has none of its parent's)."""
    descriptors = []
    for name in os.listdir("/proc/self/fd"):
        if int(name) not in skip:
            with contextlib.suppress(OSError):  # (the listing's own, closed since)
                descriptors.append((name, os.readlink(f"/proc/self/fd/{name}")))
    with open("/proc/self/maps") as maps:
        shared = [line for line in maps if line.split()[1][3] == "s"]
    timers = [any(signal.getitimer(which)) for which in (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL,
                                                       signal.ITIMER_PROF)]
    return sorted(descriptors), shared, [*timers, bool(_read("/proc/self/timers")), bool(signal.sigpending())]


def _kept(held: tuple[list[tuple[str, str]], list[str], list[bool]], *skip: int) -> bool:
    """Whether the process holds more than `held` (what `_held` found before the import) that its cases' processes
    would share or not have. A new shared map counts when this process may write it (one mapped read-only can be
    made writable): not a file opened only for reading (the C library's locale cache, after `setlocale`)."""
    descriptors, shared, timers = _held(*skip)
    if (descriptors, timers) != (held[0], held[2]):
        return True
    new = set(shared) - set(held[1])
    if not new:
        return False
    mapping = ""
    with open("/proc/self/smaps") as maps:  # (dearer than maps: only for a map the import made)
        for line in maps:
            if not line[0].isupper():
                mapping = line
            elif line.startswith("VmFlags:") and mapping in new and "mw" in line.split()[1:]:
                return True
    return False


def _has_a_child() -> bool:
    """Whether this process has a child, running or ended (not collected: its status stays for its parent)."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT | _ALL_CHILDREN)
    except ChildProcessError:
        return False
    return True


def _wait(pid: int, seconds: float) -> tuple[int, float] | None:
    """(exit status, CPU seconds) of process `pid`, or None (it is killed, with its group) when it goes on for
    longer than `seconds`."""
    handle = os.pidfd_open(pid)
    try:
        ready = select.select([handle], [], [], max(0.0, seconds))[0]
    finally:
        os.close(handle)
    if not ready:
        for kill in (os.killpg, os.kill):
            with contextlib.suppress(OSError):
                kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        return None
    _, status, usage = os.wait4(pid, 0)
    return os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime


def _keep_on(core: int | None) -> None:
    """Keep this process on `core`, or (None) let it run on every core the run may use, as a run of its own does.
    A run's processes hand the core to one another (a fork, a wait, an exit): kept on the core of the process
    that forks them, they neither wait for another core nor land on another run's (docs/benchmarks.md). The
    module's import and each case's call see the cores as a run of their own would (`os.sched_getaffinity`:
    every one for the import, those the import left for the call, `_AfterImport`)."""
    with contextlib.suppress(OSError):  # (a core this run may not use: it goes where the kernel puts it)
        os.sched_setaffinity(0, _EVERY_CORE if core is None else {core})


class _AfterImport:
    """What of a module's process after its import a fork of it does not keep, for each case's process to take
    back: the signals the import left unblocked (the serving blocks every one there), the cores the process may
    use (the serving keeps it on one, _keep_on), and the state of the standard
    library `random` module's generator (a fork reseeds it: a module that seeds it as it is imported has its calls
    draw the same numbers as in a run of its own). Never a `random` of the tree's (which no fork reseeds), whose
    code is not called here."""

    def __init__(self, mask: Any) -> None:
        self.mask = mask
        self.cores = _EVERY_CORE
        with contextlib.suppress(OSError):
            self.cores = os.sched_getaffinity(0)
        drawn: Any = sys.modules.get("random")
        self.generator: Any = None
        self.state: Any = None
        if getattr(getattr(drawn, "__spec__", None), "origin", None) == _STANDARD_RANDOM:
            with contextlib.suppress(Exception):
                self.generator = drawn._inst
                self.state = self.generator.getstate()

    def restore(self) -> None:
        _LIBC.pthread_sigmask(signal.SIG_SETMASK, self.mask, None)
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, self.cores)
        if self.state is not None:
            with contextlib.suppress(Exception):
                self.generator.setstate(self.state)


_SIGSET = ctypes.c_ubyte * 128  # sigset_t


def _block_every_signal() -> Any:
    """Block every signal in this process; the mask it had, as the C library gives it (signal.pthread_sigmask
    makes a set of enum members of each mask, a cost each case's process would pay)."""
    before = _SIGSET()
    _LIBC.pthread_sigmask(signal.SIG_BLOCK, _SIGSET(*[0xFF] * 128), before)
    return before


def _limit_cpu(seconds: float) -> None:
    """RLIMIT_CPU as the sandbox sets it for a run (gate/sandbox/rlimits.py): whole seconds, at least one, the
    hard limit a second later so that SIGXCPU comes first."""
    soft = max(1, math.ceil(seconds))
    resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 1))


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _adopt_orphans() -> None:
    """Make this process the parent of every process its children leave (a double fork, a new session), so
    that `_left_a_process` sees them whatever uid the run has."""
    if _LIBC.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def _left_a_process() -> bool:
    """Whether a process of the cases served so far (or of the import) is still there."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG | _ALL_CHILDREN)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def _ipc(private: bool) -> tuple[bytes, ...]:
    """The run's System V IPC objects (a run that shares the host's sees no more alone)."""
    return tuple(_read(f"/proc/sysvipc/{kind}") for kind in ("shm", "sem", "msg")) if private else ()


def _read(path: str) -> bytes:
    """The whole of a file of /proc (b"" when it cannot be opened), read in pieces: a buffer of a megabyte,
    which few of them need, is a new memory map at each of the hundreds of reads a run makes."""
    try:
        handle = os.open(path, os.O_RDONLY)
    except OSError:
        return b""
    try:
        pieces = []
        while piece := os.read(handle, 16384):
            pieces.append(piece)
        return b"".join(pieces)
    finally:
        os.close(handle)


def _line(result: int, said: dict[str, Any], done: mmap.mmap | None = None) -> None:
    """One outcome line, after a line break (a process killed while it wrote leaves half a line). It is
    counted first: killed in between, the case has no line (a new run serves it), never two."""
    if done is not None:
        done[:8] = (int.from_bytes(done[:8], "little") + 1).to_bytes(8, "little")
    os.write(result, ("\n" + dumps(said) + "\n").encode())
