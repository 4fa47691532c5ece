"""The warm zygote: a long-lived interpreter, started with a clean environment, that forks one child per run.

It holds no expected values and no tokens (its children inherit its memory and descriptors): it receives only
a run's config and descriptors, forks, and forgets them; or, ahead of runs, what they will share (the gate's
own harness sources, standard library names it filters, the namespaces' settings). It is a subreaper, so it
reaps every process its runs leave. Its control socket is an unnamed socketpair, closed in every child, so no
run can reach it. Standard library only (plus the seccomp binding): it runs under the sandbox interpreter.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import selectors
import signal
import socket
import sys
from typing import TYPE_CHECKING, Any, NoReturn

from gate.sandbox import _libc, child, interpreter, namespaces, seccomp

if TYPE_CHECKING:
    from gate.sandbox.child import ChildConfig, SharedConfig, WarmConfig

# Modules that dataset solutions and the harnesses commonly import, loaded once here so that a forked run finds
# them ready; pkgutil is what runpy needs to start a script. Not the rarely used heavy ones (dataclasses pulls
# in inspect; statistics, fractions, decimal, datetime, random, shutil): every module here makes every fork
# dearer (docs/benchmarks.md has by how much), and random also reseeds itself in each forked child.
WARM_MODULES = ("collections", "functools", "itertools", "math", "re", "typing", "json", "string", "heapq",
                "bisect", "enum", "copy", "operator", "traceback", "socket", "__future__", "pkgutil")
# Standard library modules a run may ask this zygote to import for it (RunRequest.preload): pure computation,
# nothing that starts a process, opens a file or a socket, or prints when imported (an import here runs as the
# zygote's user, outside every run's layers). Each costs the runs forked after it a little, so only those the
# code under test imports are loaded.
PRELOADABLE = frozenset({
    "abc", "array", "base64", "binascii", "bisect", "calendar", "cmath", "collections", "collections.abc",
    "contextlib", "copy", "dataclasses", "datetime", "decimal", "difflib", "enum", "fractions", "functools",
    "graphlib", "heapq", "itertools", "json", "math", "numbers", "operator", "pprint", "random", "re",
    "statistics", "string", "struct", "textwrap", "types", "typing", "unicodedata"})
_NETWORK_ISOLATED: list[bool] = []  # non-empty once this zygote is in its own network namespace
_MOUNT_TEMPLATE: list[tuple[Any, ...]] = []  # what the template was made of, once this zygote is in it
_MAX_FDS = 16
_MAX_MESSAGE = 1 << 20


def serve(control_fd: int, bpf: bytes | None) -> NoReturn:
    """Serve fork requests on `control_fd` until the gate closes it, or dies (then every run is killed), and
    exit. `bpf` is the seccomp filter its runs load, built by the gate's probe: the binding never loads here
    (its imports, ctypes.util pulling in subprocess and threading, would be in every run's fork; threading's
    after-fork handler alone costs each forked run about 150 copied pages)."""
    _libc.prctl(_libc.PR_SET_CHILD_SUBREAPER, 1)
    waiting = child.abandon_on_parent_death()
    if bpf is not None:
        seccomp.prepare(bpf)  # (refuses an empty program: the zygote fails, and so does the gate)
    for name in WARM_MODULES:
        importlib.import_module(name)
    child.start_as_ci()
    # Out of the collector's sight: a forked run's collections then do not touch (and copy) every page of
    # the zygote's objects.
    gc.freeze()
    control = socket.socket(fileno=control_fd)
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)
    with selectors.DefaultSelector() as selector:
        selector.register(control, selectors.EVENT_READ)
        selector.register(wake_r, selectors.EVENT_READ)
        while True:
            for key, _ in selector.select():
                if key.fileobj is control:
                    message, fds, _flags, _addr = socket.recv_fds(control, _MAX_MESSAGE, _MAX_FDS)
                    if not message:  # the gate is done: finish the runs still going, then exit
                        child.reap_ready(waiting, block=True)
                        os._exit(0)  # (nothing to flush: the interpreter's finalization would only cost time)
                    config = json.loads(message)
                    if "shared" in config:  # (ahead of runs: ZygoteLauncher.prepare and warm)
                        make_shared(config["shared"])
                        make_ready(config.get("ready"))
                        continue
                    config = _in_shared_namespaces(config)
                    make_ready(config)
                    child.import_warm(config["harness"], config["warm"], config["script"])
                    if config["own_reaper"]:
                        _fork_reaper(config, fds)
                    else:
                        pid = child.fork_run(config, fds[:-1], fds[-1])
                        waiting[pid] = (fds[-1], config["sweep_uid"])
                else:
                    _drain(wake_r)
            child.reap_ready(waiting, block=False)


def make_ready(ready: WarmConfig | None) -> None:
    """Import the standard library modules `ready` preloads and compile its harness (a harness that does not
    compile is left: its run then fails its set-up), for every run forked afterwards: on a run's request, or
    ahead of the runs that share them (Sandbox.warm)."""
    if ready is not None:
        _preload(ready["preload"])
        with contextlib.suppress(SyntaxError, ValueError):
            child.compile_harness(ready["harness"], ready["harness_sources"])


def _preload(names: list[str]) -> None:
    """Import the modules among `names` that are PRELOADABLE and not loaded yet, for every run forked afterwards;
    then out of the collector's sight, as the warm modules are."""
    fresh = [name for name in names if name in PRELOADABLE and name not in sys.modules]
    for name in fresh:
        with contextlib.suppress(Exception):  # (the run imports it itself and reports the error)
            importlib.import_module(name)
    if fresh:
        gc.freeze()


def _import_framework(names: list[str], path: list[str]) -> None:
    """Import the framework `names` (open_sandbox's `framework`) from the standard library and `path` alone, once,
    into child.FRAMEWORKS: out of sys.modules, as is every module they imported, for only the runs of that
    framework to take (child._take_framework). Once, in the network namespace the runs share and before the
    mount template (whose root holds none of the folders each run binds in its own), so only from a zygote's
    first request: never a module of a tree, and the import system's record of what it found is put back as
    it was. A name that is not there is left to the run to look for; an import that fails otherwise leaves
    the whole framework to each run."""
    key = child.framework_key(names, path)
    if not names or key in child.FRAMEWORKS:
        return
    before, finders = set(sys.modules), dict(sys.path_importer_cache)
    saved, writes, hooks = sys.path[:], sys.dont_write_bytecode, (sys.meta_path[:], sys.path_hooks[:])
    sys.path[:], sys.dont_write_bytecode = [*interpreter.library(), *path], True
    failed = False
    try:
        for name in names:
            try:
                importlib.import_module(name)
            except ModuleNotFoundError as missing:
                failed = failed or missing.name != name  # (what it needs is missing: the run says so)
            except BaseException:
                failed = True
    finally:
        sys.path[:], sys.dont_write_bytecode = saved, writes
        imported = {name: sys.modules.pop(name) for name in list(sys.modules) if name not in before}
        # The import system as it was: what the runs' own imports find is theirs to look for.
        sys.path_importer_cache.clear()
        sys.path_importer_cache.update(finders)
        sys.meta_path[:], sys.path_hooks[:] = hooks
    child.FRAMEWORKS[key] = {} if failed else imported
    gc.freeze()


def make_shared(shared: SharedConfig) -> None:
    """Enter a network namespace and a mount template once, for every run of this zygote, instead of doing it
    all in each run: creating and destroying a network namespace is dear (docs/benchmarks.md), and the
    template saves each run a third of its mount work (namespaces.enter_template). The runs share one network
    namespace with no interface up (they still cannot reach anything; the seccomp layer also keeps them from
    opening network sockets) and each still gets a mount namespace of its own, copied from the template.
    Done on the first request, or before it when the gate sends what its runs share ahead."""
    if "netns" in shared["unshare"] and not _NETWORK_ISOLATED:
        namespaces.unshare(["netns"])
        _NETWORK_ISOLATED.append(True)
    if not _MOUNT_TEMPLATE:  # (the template's root hides the host's folders the runs have bound in theirs)
        _import_framework(shared["framework"], shared["framework_path"])
    if "mountns" in shared["unshare"] and not _MOUNT_TEMPLATE:
        namespaces.enter_template(shared["root"], shared["staging"], shared["hide"])
        _MOUNT_TEMPLATE.append((shared["root"], shared["staging"], shared["hide"]))


def _in_shared_namespaces(config: ChildConfig) -> ChildConfig:
    """`config` for a run in this zygote's shared namespaces (make_shared): it enters no network namespace of
    its own, and copies the mount template when it asks for the root the template was made of. A zygote
    serves one sandbox, so every run asks for the same root; one that asked for another would get a root of
    its own."""
    make_shared(config)
    if "netns" in config["unshare"]:
        config = {**config, "unshare": [name for name in config["unshare"] if name != "netns"]}
    if "mountns" in config["unshare"]:
        config = {**config, "in_template": _MOUNT_TEMPLATE[0] == (config["root"], config["staging"], config["hide"])}
    return config


def _fork_reaper(config: ChildConfig, fds: list[int]) -> None:
    """Fork a reaper for this run alone (child.reap_one_run); the zygote then only reaps that reaper."""
    if os.fork() == 0:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        child.reap_one_run(config, fds[:-1], fds[-1])  # (it sets its own SIGTERM handler)
    for fd in fds:
        os.close(fd)


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass
