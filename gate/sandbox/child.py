"""The sandboxed side of a run: apply the layers, then run the program. Standard library and gate.sandbox's
layer modules only, because it runs under the sandbox interpreter (maybe /usr/bin/python3, not the gate's).

Both backends end here: a fresh interpreter runs `main()` (its config arrives on a pipe), a zygote's forked
child calls `run_child()` directly; the process that forks a run's leader is its reaper (`reap_ready`).
Order matters: file descriptors first (so a failure can be reported on the setup channel), then each layer's
step in gate/sandbox/stack.py APPLIED's order (session and cgroup, namespaces and the private directory while
still root, rlimits after the copy, the uid switch, no-new-privs, seccomp), then the program.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import fcntl
import importlib.machinery
import importlib.util
import json
import os
import runpy
import signal
import struct
import sys
import traceback
import types
from collections.abc import Mapping, Sequence

from gate.sandbox import _libc, identity, interpreter, seccomp, stack, startup
from gate.sandbox.layer import Run

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs a fresh interpreter milliseconds
if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from types import CodeType, ModuleType
    from typing import NoReturn, TypedDict

    from gate.sandbox.stack import LayerSettings

    class SharedConfig(LayerSettings):
        """What every run of a sandbox carries the same (the runner's `_shared`): what a zygote makes once for
        all its runs, on its first request or ahead of it (zygote_server)."""

        framework: list[str]  # the sandbox's framework (open_sandbox): a zygote imports it once...
        framework_path: list[str]

    class WarmConfig(TypedDict):
        """What runs to come share beyond SharedConfig, for a zygote to make ahead of them (Sandbox.warm): the
        standard library modules they preload and their harness compiled (ChildConfig's keys of those names)."""

        preload: list[str]
        harness: dict[str, str]
        harness_sources: dict[str, str]

    class ChildConfig(SharedConfig):
        """What the gate tells a run's child (gate/sandbox/runner.py builds it; JSON to a zygote or a fresh
        interpreter): what each layer's step reads (LayerSettings, set by the layers' records), then the run's
        own descriptors, directory and reaper, and what to run."""

        targets: list[int]  # the descriptor numbers the sources move to (STDIN... and the cgroups')
        stage: str  # the run's working directory, as the run sees it
        sweep_uid: int | None  # a dedicated uid whose every process dies with the run (no cgroup)
        own_reaper: bool  # nothing else can find the run's detached processes: a reaper of its own
        env: dict[str, str]
        script: str | None  # a Python program: one of `harness`, or a file of the working directory...
        args: list[str]
        argv: list[str] | None  # ...or a program exec'd from the run's PATH
        harness: dict[str, str]  # RunRequest.harness: file name -> sha256 of its source
        harness_sources: dict[str, str]  # sha256 -> source, but those its zygote has (see HARNESS_CODE)
        warm: list[str]  # RunRequest.warm: the names of `harness` a zygote imports once
        python_path: list[str]
        sites: list[str]  # those of `python_path` read as site directories (gate/sandbox/startup.py)
        scripts: dict[str, str]  # the run's console scripts: name -> "module:attribute" (interpreter.py)
        programs: dict[str, str]  # the environment's programs beside them: name -> host path (scripts.py)
        preload: list[str]
        take_framework: bool  # the run takes the sandbox's framework that its zygote imported (SharedConfig)

    class FreshConfig(ChildConfig):
        """A fresh interpreter's config: where its descriptors arrive and where it reports the leader."""

        sources: list[int]
        status_fd: int

# Where the child finds its descriptors (RESULT_FD_ENV and PEER_FD_ENV announce 3 and 4); from CGROUPS on, its
# files that join the cgroups, opened by the gate (a run's root has no /sys), closed before the program.
STDIN, STDOUT, STDERR, RESULT, PEER, SETUP, CGROUPS = 0, 1, 2, 3, 4, 5, 6
SETUP_FAILED = 125
# On a run's status socket: first STARTED with a pidfd of its leader, then its raw wait status and CPU seconds.
STARTED = b"+"
EXIT = struct.Struct("qd")
# Code of harness files (RunRequest.harness) by the sha256 of their source, and the modules made of the warm ones
# (RunRequest.warm): filled by a zygote before it forks (it keeps every one: they are the gate's own few
# programs, and the gate sends a source to a zygote only once), by a fresh interpreter as its run imports them.
HARNESS_CODE: dict[str, CodeType] = {}
WARM_IMPORTED: dict[str, ModuleType] = {}
# The modules of each framework a zygote imported (RunRequest.framework), by `framework_key`: out of sys.modules
# (no other run finds them), put there for a run of that framework (`_take_framework`).
FRAMEWORKS: dict[str, dict[str, ModuleType]] = {}
# Where a harness finds the import path the tree's code runs with (JSON), to take once it has imported all it
# needs: gate/sandbox/tree.py.
TREE_PATH_ENV = "GATE_TREE_PATH"


def _place_fds(sources: Sequence[int], targets: Sequence[int]) -> None:
    """Move each source descriptor to its target number and close every other descriptor."""
    # Two steps, through numbers above every target: a source may sit on another's target number.
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, SETUP + 1) for fd in sources]
    for fd, target in zip(high, targets, strict=True):
        os.dup2(fd, target, inheritable=target < SETUP)
    os.closerange(max(targets) + 1, os.sysconf("SC_OPEN_MAX"))
    for fd in range(max(targets) + 1):
        if fd not in targets:
            with contextlib.suppress(OSError):
                os.close(fd)


def _setup(config: ChildConfig, sources: Sequence[int]) -> str:
    """Apply every layer the config asks for, each by its step in stack.APPLIED's order; returns the working
    directory."""
    _place_fds(sources, config["targets"])
    run = Run(config["stage"])
    for layer in stack.APPLIED:
        if layer.apply is None:
            raise RuntimeError(f"layer {layer.name} has no step in the child")
        layer.apply(config, run)
    return run.workdir


def _set_environ(env: Mapping[str, str]) -> None:
    """Make os.environ exactly `env`, touching only the variables that differ from the zygote's (clear() and
    update() would rewrite every one, in Python, in every forked run)."""
    for name in [name for name in os.environ if name not in env]:
        del os.environ[name]
    for name, value in env.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


def start_as_ci() -> None:
    """What the sandbox's interpreter, started with -s -S -P, lacks to run a program as the project's CI's
    interpreter does: what `site` adds to builtins (`exit`, `quit`, `help`, `copyright`, `credits`, `license`:
    code calling `exit(2)` exits with 2 instead of raising NameError), and `sys.flags` as CI's interpreter has
    them (site imported, no -s, no -P), so that what starts an interpreter with the program's own flags
    (multiprocessing's spawn and forkserver children, `subprocess._args_from_interpreter_flags`) starts it
    with `site`, as in CI, instead of passing it -S. Nothing else of `site` (no site-packages, `.pth` file or
    `sitecustomize` of the machine's). Once per interpreter: a zygote's runs inherit it."""
    import site

    site.setquit()
    site.setcopyright()
    site.sethelper()
    if not isinstance(sys.flags, _Flags):
        _Flags.real = sys.flags
        names = _Flags.names()
        values = [_CI_FLAGS.get(names[index], value) if index < len(names) else value
                  for index, value in enumerate(sys.flags)]
        setattr(sys, "flags", _Flags(values))  # noqa: B010 (mypy refuses an assignment to sys.flags)


# What CI's interpreter has where the sandbox's, started with -s -S -P, differs.
_CI_FLAGS = {"no_site": 0, "no_user_site": 0, "safe_path": False}


class _Flags(tuple):  # type: ignore[type-arg]
    """`sys.flags` as CI's interpreter has them: the sandbox interpreter's own (`real`), by index and by name,
    but for _CI_FLAGS. (The type of `sys.flags` makes no new instance, and its fields vary with the version.)"""

    __slots__ = ()
    real: object = None

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The fields' names, in order."""
        names: tuple[str, ...] = getattr(type(cls.real), "__match_args__", ())
        return names

    def __getattr__(self, name: str) -> object:
        return _CI_FLAGS[name] if name in _CI_FLAGS else getattr(self.real, name)

    def __repr__(self) -> str:
        return "sys.flags(" + ", ".join(f"{name}={getattr(self, name)!r}" for name in self.names()) + ")"


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def compile_harness(harness: Mapping[str, str], sources: Mapping[str, str]) -> None:
    """Compile each file of `harness` (name -> sha256) whose source is among `sources` (sha256 -> source) and
    not compiled yet, into HARNESS_CODE."""
    for name, digest in harness.items():
        if digest not in HARNESS_CODE and digest in sources:
            HARNESS_CODE[digest] = compile(sources[digest], name, "exec", dont_inherit=True)


class _Harness:
    """Imports a run's harness modules (RunRequest.harness) from their code, never from a file: the module its
    zygote imported already when it is warm, else a new one from the code compiled for it. Only top-level
    names of `harness` (file name -> sha256 of the source)."""

    def __init__(self, harness: Mapping[str, str]) -> None:
        self._harness = harness

    def find_spec(self, name: str, path: object, target: object = None) -> ModuleSpec | None:
        digest = self._harness.get(f"{name}.py") if path is None else None
        loader: _HarnessLoader | _Imported
        if digest in WARM_IMPORTED:
            loader = _Imported(WARM_IMPORTED[digest])
        elif digest in HARNESS_CODE:
            loader = _HarnessLoader(HARNESS_CODE[digest])
        else:
            return None
        # The import system needs only create_module and exec_module (importlib.abc.Loader is slow to import).
        # The file name is the one its code was compiled with: no file of that name is read.
        return importlib.util.spec_from_file_location(name, f"{name}.py", loader=loader)  # type: ignore[arg-type]


class _HarnessLoader:
    def __init__(self, code: CodeType) -> None:
        self._code = code

    def create_module(self, spec: ModuleSpec) -> None:
        return None  # the default module

    def exec_module(self, module: ModuleType) -> None:
        exec(self._code, module.__dict__)


class _Imported:
    """A module its zygote imported already (a copy of it, like all of the zygote's memory)."""

    def __init__(self, module: ModuleType) -> None:
        self._module = module

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        return self._module

    def exec_module(self, module: ModuleType) -> None:
        return None


def import_warm(harness: Mapping[str, str], warm: Sequence[str], script: str | None) -> None:
    """In a zygote: import the warm modules (`warm`, names of `harness`, file name -> sha256; `script` never)
    once, into WARM_IMPORTED, for every run forked afterwards. Not into sys.modules: a run that does not name
    them still imports its own files of those names."""
    names = {name: harness[name] for name in warm if name in harness}
    held = {name.removesuffix(".py") for name in names} & sys.modules.keys()  # never replaced, never popped
    missing = [name for name, digest in names.items() if name != script and digest in HARNESS_CODE
               and digest not in WARM_IMPORTED and name.removesuffix(".py") not in held]
    if not missing:
        return
    finder = _Harness(names)
    sys.meta_path.insert(0, finder)
    try:
        for name in missing:
            with contextlib.suppress(BaseException):  # the run imports it itself and reports the error
                importlib.import_module(name.removesuffix(".py"))
    finally:
        sys.meta_path.remove(finder)
        for name, digest in names.items():  # those imported along the way too (their finder served them)
            if name.removesuffix(".py") in held:
                continue
            module = sys.modules.pop(name.removesuffix(".py"), None)
            if module is not None and name != script:
                WARM_IMPORTED[digest] = module


def _run_main(script: str, code: CodeType | None) -> None:
    """Run the script as __main__: runpy compiles a file of the working directory; a harness's code runs in a
    module set up as runpy would, but with no `__file__`, since it has none: a process that multiprocessing's
    spawn or forkserver starts from it (a test's pool) then runs no main module first, as under CI's
    `python -m pytest`, instead of failing to find the harness's file and leaving its pool waiting."""
    if code is None:
        runpy.run_path(script, run_name="__main__")
        return
    main = types.ModuleType("__main__")
    main.__dict__.update(__cached__=None, __loader__=None, __package__="", __spec__=None, __builtins__=builtins)
    sys.modules["__main__"] = main
    exec(code, main.__dict__)


def _prepare(config: ChildConfig, script: str, workdir: str) -> CodeType | None:
    """Set the import path and argv a Python program starts with, the way `python script.py` would; returns
    the code to run as __main__ for a harness, None for a file of the working directory (runpy reads it).

    The tree's import path: gate/sandbox/startup.py, the environment's `.pth` files processed as the run's
    interpreter processes them. A harness (RunRequest.harness) starts with the standard library alone on it
    instead (and its own modules, from memory), and that path in TREE_PATH_ENV, for it to take once it has
    imported all it needs: no module of the tree or of the working directory (a `tempfile.py`, a file named
    like a harness module, a `__pycache__`) is ever what the gate's own program imports."""
    harness = config["harness"]
    library = interpreter.library()
    head, roots = interpreter.parts(workdir, config["python_path"])
    tree = startup.run_path(head, library, roots, config["sites"])
    sys.argv = [script, *config["args"]]
    # The run's interpreter (HOME, gate/sandbox/interpreter.py) is what a test that starts a child gets, and its
    # prefix the run's, as in a virtual environment (sysconfig's "scripts" is the folder of its commands).
    home = interpreter.home(config["stage"], "mountns" in config["unshare"])
    sys.executable = interpreter.executable(home)
    sys.prefix = sys.exec_prefix = home
    sys.dont_write_bytecode = True
    if script not in harness:
        sys.path[:] = tree
        return None
    sys.path[:] = library
    os.environ[TREE_PATH_ENV] = json.dumps(tree)
    _take_framework(config, [path for path in tree if path != workdir and not path.startswith(workdir + os.sep)])
    compile_harness(harness, config["harness_sources"])  # (a fresh interpreter's run: a zygote has them already)
    # The modules its zygote imported are there already, as if imported (the import system's own path through
    # a finder costs each run more than the rest of its start); the finder makes the others from their code.
    for name in config["warm"]:
        if harness.get(name) in WARM_IMPORTED:
            sys.modules[name.removesuffix(".py")] = WARM_IMPORTED[harness[name]]
    sys.meta_path.insert(0, _Harness(harness))
    return HARNESS_CODE[harness[script]]


def framework_key(names: Sequence[str], path: Sequence[str]) -> str:
    """The key in FRAMEWORKS of the framework `names` imported from `path`."""
    return json.dumps([list(names), list(path)])


def _take_framework(config: ChildConfig, path: list[str]) -> None:
    """Put in sys.modules the modules of the run's framework that its zygote imported, when the import path the
    program imports it from (`path`: the tree's, less the working directory and what is under it) finds each
    top-level one in the file the zygote took it from, and none is imported yet (a `.pth` file's import): a
    folder of the tree or of the head's build named like one of them keeps them all out."""
    modules = FRAMEWORKS.get(framework_key(config["framework"], config["framework_path"])) \
        if config["take_framework"] else None
    if not modules or not modules.keys().isdisjoint(sys.modules):
        return
    for name, module in modules.items():
        origin = getattr(module, "__file__", None)
        if "." in name or origin is None or name in sys.stdlib_module_names:  # (the library comes first)
            continue
        found = importlib.machinery.PathFinder.find_spec(name, path)
        if found is None or found.origin != origin:
            return
    sys.modules.update(modules)


def _run_script(script: str, code: CodeType | None) -> int:
    """Run the program as __main__ (see _prepare); returns its exit status."""
    # sys.stdin/stdout/stderr already wrap descriptors 0, 1 and 2, now the run's pipes, with empty buffers (a
    # zygote never reads or writes them), so they are used as they are.
    try:
        _run_main(script, code)
        status = 0
    except SystemExit as exc:
        status = _exit_code(exc.code)
    except BaseException:  # the program's own failure: report it the way python would
        traceback.print_exc()
        status = 1
    # Wait for non-daemon threads, as interpreter exit does, if the program imported threading: the zygote
    # does not (threading's after-fork handler would cost every forked run about 150 copied pages).
    threading = sys.modules.get("threading")
    if threading is not None:
        getattr(threading, "_shutdown", lambda: None)()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # the program may have closed them
            stream.flush()
    return status


def run_child(config: ChildConfig, sources: Sequence[int]) -> NoReturn:
    """Set up the run and execute its program; never returns (the process ends with the program's status)."""
    try:
        workdir = _setup(config, sources)
        _set_environ(config["env"])
        atexit._clear()  # only the program's own exit handlers run at its end
        if config["argv"]:
            os.execvpe(config["argv"][0], config["argv"], config["env"])  # found on the run's PATH
        script = config["script"]
        if script is None:
            raise ValueError("the run names neither a script nor an argv")
        code = _prepare(config, script, workdir)
    except BaseException as exc:  # a layer failed: tell the gate on the setup channel, never run the program
        try:
            os.write(SETUP, f"{type(exc).__name__}: {exc}".encode()[:4000])
        finally:
            os._exit(SETUP_FAILED)
    os.close(SETUP)
    os._exit(_run_script(script, code))


def reap_ready(waiting: dict[int, tuple[int, int | None]], block: bool) -> None:
    """Reap every exited child (this process is a subreaper, so orphans of a run come here too, and zombies do
    not pile up under RLIMIT_NPROC). A run's leader has its process group killed while it is still a zombie
    (so its id cannot have been reused) and, for a dedicated uid without a cgroup, every process of that uid
    too; then its status goes to its status descriptor. `waiting` maps a leader's pid to (status descriptor,
    uid to sweep or None). With `block` (a reaper of one run), wait until no child is left, killing every
    child that is left once the leader is gone: the run's orphans, however they detached."""
    flags = os.WEXITED | os.WNOWAIT | (0 if block else os.WNOHANG)
    while True:
        if block and not waiting:
            for orphan in _children():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(orphan, signal.SIGKILL)
        try:
            info = os.waitid(os.P_ALL, 0, flags)
        except ChildProcessError:
            return
        if info is None:
            return
        pid = info.si_pid
        if pid in waiting:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
            sweep_uid = waiting[pid][1]
            if sweep_uid is not None:
                identity.kill_user(sweep_uid)
        _, status, usage = os.wait4(pid, 0)
        status_fd, _ = waiting.pop(pid, (None, None))
        if status_fd is not None:
            with contextlib.suppress(BrokenPipeError):  # the gate is gone (see abandon_on_parent_death)
                os.write(status_fd, EXIT.pack(status, usage.ru_utime + usage.ru_stime))
            os.close(status_fd)


def _children() -> list[int]:
    """This process's children (orphans of a run become children of its reaper)."""
    pid = os.getpid()
    try:
        with open(f"/proc/self/task/{pid}/children") as listed:
            return [int(child) for child in listed.read().split()]
    except FileNotFoundError:  # a kernel without CONFIG_PROC_CHILDREN: scan every process's parent
        found = []
        for entry in filter(str.isdigit, os.listdir("/proc")):
            with contextlib.suppress(OSError, IndexError), open(f"/proc/{entry}/stat") as stat:
                if int(stat.read().rsplit(")", 1)[1].split()[1]) == pid:  # field 4: the parent's pid
                    found.append(int(entry))
        return found


def reap_one_run(config: ChildConfig, sources: Sequence[int], status_fd: int) -> NoReturn:
    """Be the reaper of exactly one run: fork its leader, report it, and once it exits kill and reap
    everything else the run left, then exit. (A fresh interpreter always does this; a zygote forks one when
    no cgroup or dedicated uid can find a run's processes, since the zygote itself reaps for every run.)"""
    _libc.prctl(_libc.PR_SET_CHILD_SUBREAPER, 1)
    waiting = abandon_on_parent_death()
    pid = fork_run(config, sources, status_fd)
    waiting[pid] = (status_fd, config["sweep_uid"])
    reap_ready(waiting, block=True)
    os._exit(0)


def abandon_on_parent_death() -> dict[int, tuple[int, int | None]]:
    """When this reaper's parent dies (the gate, or the zygote), kill every run it reaps for: each leader's
    group, then every child it has until none is left (every process of its runs is a descendant, or an
    orphan reparented here), then exit. Returns the `waiting` map (see reap_ready) the caller fills in."""
    waiting: dict[int, tuple[int, int | None]] = {}

    def abandon(_signum: int, _frame: object) -> None:
        for pid, (status_fd, _) in list(waiting.items()):
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
            os.close(status_fd)
        waiting.clear()
        reap_ready(waiting, block=True)
        os._exit(0)

    parent = os.getppid()
    signal.signal(signal.SIGTERM, abandon)
    _libc.prctl(_libc.PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # it died before PDEATHSIG was armed
        abandon(signal.SIGTERM, None)
    return waiting


def fork_run(config: ChildConfig, sources: Sequence[int], status_fd: int) -> int:
    """Fork a run's leader (the caller must be a subreaper); sends a pidfd of it on `status_fd` (a Unix
    socket): the gate signals the leader only through that, so that a kill sent after this reaper collected
    it cannot reach a process that got its pid since. Returns the pid. The leader keeps no other descriptor of
    the caller's: run_child closes all but `sources`."""
    pid = os.fork()
    if pid == 0:
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, signal.SIGTERM):  # the program gets the defaults, not the reaper's
            signal.signal(signum, signal.SIG_DFL)
        run_child(config, sources)
    import socket  # (the reaper's alone: a run's leader is forked without it)

    for fd in sources:
        os.close(fd)
    status = socket.socket(fileno=status_fd)
    try:
        pidfd = os.pidfd_open(pid)  # (not reaped yet: only this process reaps it)
        try:
            socket.send_fds(status, [STARTED], [pidfd])
        finally:
            os.close(pidfd)
    except OSError:
        os.kill(pid, signal.SIGKILL)  # (still unreaped, so still this run's): no run the gate cannot kill
        raise
    finally:
        status.detach()
    return pid


def main() -> NoReturn:
    """Entry point of a fresh interpreter (the config is JSON on the descriptor named by argv[1]): become a
    one-run reaper, fork the run's leader, reap everything it leaves, then exit."""
    with os.fdopen(int(sys.argv[1]), "rb") as source:
        config: FreshConfig = json.load(source)
    _libc.prctl(_libc.PR_SET_PDEATHSIG, signal.SIGKILL)
    start_as_ci()
    if config["seccomp"]:
        seccomp.prepare()
    reap_one_run(config, config["sources"], config["status_fd"])
