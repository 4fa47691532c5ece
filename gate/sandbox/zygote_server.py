"""The warm zygote: a long-lived interpreter, started with a clean environment, that forks one child per run.

It holds no expected values and no tokens (its children inherit its memory and descriptors): it receives only
a run's config and descriptors, forks, and forgets them. It is a subreaper, so it reaps every process its runs
leave. Its control socket is an unnamed socketpair, closed in every child, so no run can reach it. Standard
library only (plus the seccomp binding): it runs under the sandbox interpreter.
"""

from __future__ import annotations

import importlib
import json
import os
import selectors
import signal
import socket

from gate.sandbox import _libc, child, seccomp

# Modules programs commonly import, loaded once here so that a forked run finds them ready. (random reseeds
# itself in every forked child.)
WARM_MODULES = ("collections", "functools", "itertools", "math", "re", "typing", "json", "string", "heapq",
                "bisect", "dataclasses", "enum", "random", "fractions", "decimal", "datetime", "copy",
                "operator",
                "statistics", "traceback", "shutil")  # shutil: the mount namespace copies the run's files
_MAX_FDS = 16
_MAX_MESSAGE = 1 << 20


def serve(control_fd: int, with_seccomp: bool) -> None:
    """Serve fork requests on `control_fd` until the gate closes it (or dies: PDEATHSIG)."""
    parent = os.getppid()
    _libc.prctl(_libc.PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        return
    _libc.prctl(_libc.PR_SET_CHILD_SUBREAPER, 1)
    if with_seccomp:
        seccomp.prepare()
    for name in WARM_MODULES:
        importlib.import_module(name)
    control = socket.socket(fileno=control_fd)
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)
    waiting: dict[int, tuple[int, int | None]] = {}
    with selectors.DefaultSelector() as selector:
        selector.register(control, selectors.EVENT_READ)
        selector.register(wake_r, selectors.EVENT_READ)
        while True:
            for key, _ in selector.select():
                if key.fileobj is control:
                    message, fds, _flags, _addr = socket.recv_fds(control, _MAX_MESSAGE, _MAX_FDS)
                    if not message:  # the gate is done: finish the runs still going, then exit
                        child.reap_ready(waiting, block=True)
                        return
                    config = json.loads(message)
                    pid = child.fork_run(config, fds[:-1], fds[-1])
                    waiting[pid] = (fds[-1], config["sweep_uid"])
                else:
                    _drain(wake_r)
            child.reap_ready(waiting, block=False)


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass
