"""Long-lived servers for `Sandbox.run_served`: a trusted program (a dataset's test harness) started once under every
layer and reused for many calls, each against a fresh peer (the candidate) on a fresh socket.

A server is an ordinary run (its own uid, directory, cgroup, rlimits, seccomp) that does not end: its pair channel
(PEER_FD_ENV) is a control socket to the gate. A call is one frame, `LENGTH` + message, sent with the server's end
of a new socketpair whose other end is the peer's channel; the server answers with one frame, the call's result
after one byte: KEEP, or RETIRE when the server will serve no more calls (it then exits). Only the gate holds a
server's control socket, so a peer reaches a server only through the socket of its own call, which the server
closes when the call ends. A server that does not answer in time, answers garbage, dies, or has served MAX_CALLS
calls is killed and replaced; its CPU limit is set so that it cannot run out before that (see `server_limits`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import select
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

import msgspec

from gate.sandbox.base import RunRequest, RunResult

LENGTH = struct.Struct("!Q")
# Calls one server answers before it is replaced (bounds whatever a long life could accumulate).
MAX_CALLS = 200
MAX_ANSWER = 1 << 20
MAX_KEYS = 64
# Idle servers kept at once: each holds a sandbox uid (of users.MAX_SLOTS, shared by every gate on the machine),
# so that runs never wait long for a uid that an idle server sits on.
MAX_IDLE = 8
KEEP, RETIRE = b".", b"!"


def server_limits(request: RunRequest) -> RunRequest:
    """The server's request with a CPU limit it cannot reach in MAX_CALLS calls: each call is cut at the wall
    limit, and the server is one thread, so a call spends at most wall_s of CPU. (The per-call bound is the
    wall limit; the peer keeps the request's own CPU limit.)"""
    cpu = request.limits.wall_s * (MAX_CALLS + 1) + request.limits.cpu_s
    return msgspec.structs.replace(request, limits=msgspec.structs.replace(request.limits, cpu_s=cpu))


def read_frame(sock: socket.socket, limit: int) -> bytes | None:
    """One frame from a blocking socket, or None when it ends early or is longer than `limit`."""
    head = _read_exact(sock, LENGTH.size)
    if head is None:
        return None
    (size,) = LENGTH.unpack(head)
    return _read_exact(sock, size) if size <= limit else None


def _read_exact(sock: socket.socket, size: int) -> bytes | None:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


class Answer(msgspec.Struct):
    """A call in progress, gate side: the server's control descriptor, the call's deadline, its answer."""

    fd: int
    deadline: float
    pending: bool
    reply: bytes | None = None
    timed_out: bool = False
    retiring: bool = False

    def read(self) -> None:
        """The server has something to say (or has died): read its frame (it writes one at once)."""
        with socket.socket(fileno=os.dup(self.fd)) as sock:
            sock.settimeout(max(0.1, self.deadline - time.monotonic()))
            try:
                frame = read_frame(sock, MAX_ANSWER)
            except OSError:
                frame = None
        self.pending = False
        if frame is not None and frame[:1] in (KEEP, RETIRE):
            self.reply, self.retiring = frame[1:], frame[:1] == RETIRE

    @property
    def healthy(self) -> bool:
        """The server answered in time and may take another call."""
        return self.reply is not None and not self.timed_out and not self.retiring

    def expire(self, now: float) -> bool:
        """True once the deadline passed without an answer (the call then timed out)."""
        if self.pending and now >= self.deadline:
            self.pending = False
            self.timed_out = True
        return self.timed_out


def lead_result(answer: Answer, started: float, ended: RunResult | None) -> RunResult:
    """What the server did for one call, as a run's result: its answer is the result channel. Without an
    answer, the server was ended (`ended`, its own run's result): its exit and stderr say why."""
    wall_s = time.monotonic() - started
    if answer.reply is not None and not answer.timed_out:  # (an answer read after the deadline is too late)
        return RunResult(exit_code=0, signal=None, timed_out=False, stdout=b"", stderr=b"",
                         result=answer.reply or None, wall_s=wall_s)
    how = "wall timeout" if answer.timed_out else "server ended"
    exit_code, signal, stderr = (ended.exit_code, ended.signal, ended.stderr) if ended else (None, None, b"")
    return RunResult(exit_code=exit_code, signal=signal, timed_out=answer.timed_out, stdout=b"", stderr=stderr,
                     result=None, killed_reason=how, wall_s=wall_s)


class Server(msgspec.Struct):
    """One live server: its run (runner._Live), the gate's end of its control socket, calls served."""

    live: Any
    control: socket.socket
    key: str
    calls: int = 0
    ending: bool = False  # set before its run is retired: whatever that raises, never a second retire
    ended: RunResult | None = None  # its run's result, once ended

    def send(self, message: bytes, channel_fd: int) -> bool:
        """Start a call: the message and the server's end of the peer's channel. False if the server is gone.
        """
        frame = LENGTH.pack(len(message)) + message
        try:
            sent = socket.send_fds(self.control, [frame], [channel_fd])
        except OSError:  # nothing reached it: the caller may try another server
            return False
        self.calls += 1
        # From here the server holds the channel and may have talked to the peer: the call is out, never sent
        # again. A server that dies before the rest of the frame reaches it fails this call (its answer never
        # comes); one that answered at once and retired must not make it look unsent.
        with contextlib.suppress(OSError):
            if sent < len(frame):
                self.control.sendall(frame[sent:])
        return True

    def idle_and_alive(self) -> bool:
        """Nothing to read from an idle server: it neither exited nor wrote out of turn."""
        readable, _, _ = select.select([self.control, self.live.handle.exit_fd], [], [], 0)
        return not readable


def request_key(request: RunRequest) -> str:
    """Requests that can share a server: the same program, files, seed and limits."""
    digest = hashlib.sha256(repr((request.script, request.args, request.argv, request.hash_seed,
                                  request.limits, request.warm, sorted(request.env.items()))).encode())
    for kind, files in (("files", request.files), ("harness", request.harness)):
        for name in sorted(files):
            digest.update(f"{kind}:{name}".encode() + b"\0" + hashlib.sha256(files[name]).digest())
    return digest.hexdigest()


class Servers:
    """Idle servers by request, for one sandbox. Thread-safe: a call holds its server alone."""

    def __init__(self, start: Callable[[RunRequest, int], Any], retire: Callable[[Any], RunResult]) -> None:
        self._start = start
        self._retire = retire
        self._idle: dict[str, list[Server]] = {}
        # Keys of requests seen, by identity (a caller usually reuses one request object for its calls); the
        # request is kept, so that its id cannot be reused by another object while it is here.
        self._keys: dict[int, tuple[RunRequest, str]] = {}
        self._lock = threading.Lock()

    def call(self, request: RunRequest, message: bytes, channel_fd: int) -> tuple[Server, bool]:
        """Start a call on a server for `request`: (the server, whether the call went out). A server that
        turns out to be gone (it died while idle) is replaced once."""
        for _ in range(2):
            server = self.acquire(request)
            if server.send(message, channel_fd):
                return server, True
            self._end(server)
        return server, False

    def acquire(self, request: RunRequest) -> Server:
        """An idle server for `request` that is still healthy, or a new one."""
        key = self._key(request)
        while True:
            with self._lock:
                server = self._idle.get(key, []).pop() if self._idle.get(key) else None
            if server is None:
                return self._new(request, key)
            if server.idle_and_alive():
                return server
            self._end(server)

    def release(self, server: Server, healthy: bool) -> RunResult | None:
        """Return a server after a call; one that failed the call or has served enough is ended, and its run's
        result returned."""
        if healthy and server.calls < MAX_CALLS:
            with self._lock:
                if sum(len(idle) for idle in self._idle.values()) < MAX_IDLE:
                    self._idle.setdefault(server.key, []).append(server)
                    return None
        return self._end(server)

    def close(self) -> None:
        """End every idle server."""
        with self._lock:
            servers = [server for idle in self._idle.values() for server in idle]
            self._idle.clear()
        for server in servers:
            self._end(server)

    def _key(self, request: RunRequest) -> str:
        with self._lock:
            known = self._keys.get(id(request))
        if known is not None and known[0] is request:
            return known[1]
        key = request_key(request)
        with self._lock:
            if len(self._keys) >= MAX_KEYS:
                self._keys.clear()
            self._keys[id(request)] = (request, key)
        return key

    def _new(self, request: RunRequest, key: str) -> Server:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        with theirs:
            try:
                live = self._start(server_limits(request), theirs.fileno())
            except BaseException:
                ours.close()
                raise
        # A server reads no stdin: close it now, so that only the call frames reach it.
        for fd, kind in list(live.fds.items()):
            if kind == "stdin":
                os.close(fd)
                del live.fds[fd]
        return Server(live, ours, key)

    def _end(self, server: Server) -> RunResult | None:
        # Once: a call whose server was gone twice ends it, then its release would again (and a second retire
        # would close descriptor numbers, or signal a pidfd number, that other runs have since).
        if server.ending:
            return server.ended
        server.ending = True
        server.control.close()
        server.ended = self._retire(server.live)
        return server.ended
