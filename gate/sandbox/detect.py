"""Find out at start-up which isolation layers work on this machine, and describe each for the verdict."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from types import ModuleType

import msgspec

from gate import __version__, memo
from gate.errors import GateFailure
from gate.sandbox import _libc, cgroups, layer, seccomp, stack, users
from gate.sandbox.cgroups import Cgroups
from gate.sandbox.runner import Layers
from gate.sandbox.stack import RECORDS

_INTERPRETERS = ("/usr/bin/python3", "/usr/local/bin/python3")
# Run under the chosen interpreter: each layer's probe (gate/sandbox/layer.py), in the order of stack.RECORDS
# (as root when the gate is: then it enters namespaces), each in a forked process of its own, so that what one
# changes (the mount namespace's covers /tmp) is not what the next one sees (a seccomp binding installed in a
# virtual environment under /tmp).
_PROBE = """
import json, os, sys
sys.path[:0] = sys.argv[2:]
from gate.sandbox import stack
found = {}
for record in stack.RECORDS:
    if record.probe is None:
        continue
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            result = record.probe(sys.argv[1] == "1")
        except BaseException as exc:
            result = {record.name: f"its probe failed: {type(exc).__name__}: {exc}"}
        with os.fdopen(write, "w") as sink:
            sink.write(json.dumps(result))
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as source:
        said = source.read()
    os.waitpid(pid, 0)
    found.update(json.loads(said) if said else {record.name: "its probe died before it answered"})
print(json.dumps(found))
"""
# The layers the probe finds out about.
_PROBED = tuple(record.name for record in RECORDS if record.probe is not None)


def gate_root() -> str:
    """The directory holding the `gate` package, which the sandbox interpreter must import."""
    return str(Path(__file__).resolve().parents[2])


def _interpreter(switch_uid: bool) -> tuple[str, str]:
    """(interpreter, why) — one the sandbox uid can run when switching uid, else this one."""
    if not switch_uid:
        return sys.executable, ""
    for candidate in (sys.executable, *_INTERPRETERS):
        if users.runnable_by_others(candidate):
            return candidate, ""
    return sys.executable, f"no Python interpreter that another uid can run (tried {sys.executable}, " \
                           + ", ".join(_INTERPRETERS) + ")"


def run_interpreter() -> str:
    """The interpreter this machine's runs use: one another uid can run when the gate is root (a repository's
    environment is made with it, so that its packages fit)."""
    return _interpreter(os.geteuid() == 0)[0]


def _start(interpreter: str, script: str, *args: str) -> subprocess.Popen[str]:
    """`script` under `interpreter`, started (the probes run side by side)."""
    return subprocess.Popen([interpreter, "-s", "-S", "-P", "-c", script, *args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})


def _finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of a started probe, killed after a minute."""
    try:
        out, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
    return process.returncode, out, err


def _probe(done: tuple[int, str, str]) -> dict[str, str]:
    code, out, err = done
    if code != 0:
        reason = err.strip().splitlines()[-1:] or ["probe failed"]
        return dict.fromkeys(_PROBED, reason[0])
    found: dict[str, str] = json.loads(out)
    return found


# Run under the sandbox interpreter: what it needs of the host's file system to start and import any module
# of its standard library: its directories on sys.path but site-packages; the directory of every shared
# library mapped once each extension module of lib-dynload is imported (whole: the loader opens a library by
# its soname, a link beside it, and one bind per directory keeps the mounts each run's namespace copies few)
# and every other file mapped (the locale it starts with); its ELF interpreter (the dynamic loader, by the
# path the executable names). Then the system data its library reads at run time, which every CI runner has
# and a project's suite reads: the time-zone database (zoneinfo's TZPATH) and the local zone (/etc/localtime,
# /etc/timezone), the compiled locales, the MIME types (mimetypes' files), the CA certificates and OpenSSL's
# configuration that a default SSL context loads (with the folders the certificates' links point into: public
# data, such as /usr/share/ca-certificates). Only world-readable paths under /usr and /etc (a link into
# /etc/ssl/private or a home directory is not followed there). Then the two programs every CI runner has that
# the standard library runs by their path: the shell (`subprocess`'s shell=True, os.system, os.popen) and
# ldconfig (`ctypes.util.find_library` asks `/sbin/ldconfig -p` for the loader's cache, /etc/ld.so.cache); and
# the common POSIX tools that test suites run by name (a pager of `cat`, an editor of `sed`, `bc` as a REPL, and
# util-linux's `script` for a terminal: TOOLS), those in /usr/bin or /bin; of one that is a script (Ubuntu's
# ldconfig wraps ldconfig.real), its interpreter and the programs it names by path; only world-readable ones
# under /usr, /bin and /sbin, and none set-user-ID or set-group-ID (no_new_privs would keep it from gaining
# anything; it is left out all the same).
_NEEDS = """
import importlib, json, os, re, struct, sys
library = [p for p in sys.path if p and not p.endswith(("site-packages", "dist-packages"))]
for folder in [p for p in library if os.path.basename(p) == "lib-dynload"]:
    for name in sorted(os.listdir(folder)):
        if name.endswith(".so"):
            try:
                importlib.import_module(name.split(".")[0])
            except BaseException:
                pass
with open("/proc/self/maps") as maps:
    mapped = {line.split(None, 5)[5].strip() for line in maps if len(line.split(None, 5)) == 6}
mapped = {p for p in mapped if p.startswith("/") and not p.startswith("/dev/") and os.path.isfile(p)}
libraries = {os.path.dirname(p) for p in mapped if ".so" in os.path.basename(p)}
mapped = {p for p in mapped if os.path.dirname(p) not in libraries or p == os.path.realpath(sys.argv[1])}
links = sorted(libraries)
with open(sys.argv[1], "rb") as elf:
    head = elf.read(64)
    offset, = struct.unpack_from("<Q", head, 32)
    size, count = struct.unpack_from("<HH", head, 54)
    for index in range(count):
        elf.seek(offset + index * size)
        kind, _, at, _, _, length = struct.unpack("<IIQQQQ", elf.read(40))
        if kind == 3:
            elf.seek(at)
            links.append(elf.read(length).rstrip(b"\\0").decode())
import mimetypes, ssl, stat, zoneinfo
verify = ssl.get_default_verify_paths()
data = [*zoneinfo.TZPATH, "/etc/localtime", "/etc/timezone", "/usr/lib/locale", *mimetypes.knownfiles,
        *filter(None, (verify.cafile, verify.capath, verify.openssl_cafile, verify.openssl_capath))]
for folder in filter(None, {verify.capath, verify.openssl_capath}):
    data.append(os.path.join(os.path.dirname(folder), "openssl.cnf"))
    if os.path.isdir(folder):
        data += [os.path.dirname(os.path.realpath(e.path)) for e in os.scandir(folder) if e.is_symlink()]
def public(path, places=("/usr/", "/etc/")):
    real = os.path.realpath(path)
    if not real.startswith(places) or not os.path.exists(real):
        return False
    mode = os.stat(real).st_mode
    if stat.S_ISREG(mode) and mode & (stat.S_ISUID | stat.S_ISGID):
        return False
    while real != "/":
        mode = os.stat(real).st_mode
        if not mode & stat.S_IROTH or (stat.S_ISDIR(mode) and not mode & stat.S_IXOTH):
            return False
        real = os.path.dirname(real)
    return True
data = [path for path in data if path.startswith(("/usr/", "/etc/")) and public(path)]
tools = [next((f"{folder}/{name}" for folder in ("/usr/bin", "/bin") if os.path.isfile(f"{folder}/{name}")), "")
         for name in sys.argv[2].split()]
programs = ["/bin/sh", "/sbin/ldconfig", *filter(None, tools)]
for program in programs:
    try:
        with open(program, "rb") as file:
            script = file.read(65536)
    except OSError:
        continue
    if script.startswith(b"#!"):
        first, _, rest = script[2:].partition(b"\\n")
        named = [*first.split()[:1], *re.findall(rb"(?<![\\w./-])(/[\\w./+-]+)", rest)]
        programs += [os.fsdecode(p) for p in named if os.fsdecode(p) not in programs
                     and os.path.isfile(p) and os.access(p, os.X_OK)]
places = ("/usr/", "/bin/", "/sbin/")
programs = [path for path in programs if path.startswith(places) and public(path, places)]
print(json.dumps(sorted({*library, *mapped, *links, *data, *programs})))
"""
_ALWAYS = ("/etc/ld.so.cache",)
# The tools a run's root holds besides the shell, by name: what test suites commonly run (coreutils, the
# text tools, find and diff; bash, which a test's own scripts name; `openssl rand` as a source of bulk data, as
# pexpect's tests use it), found where the host has them. Nothing whose purpose is to reach the network (the
# run has none to reach: its namespace has no interface up and seccomp refuses it sockets), build code
# (gate/sandbox/toolchain.py binds a compiler only for a build that needs one) or change privileges.
TOOLS = ("awk", "basename", "bash", "bc", "cat", "chmod", "cmp", "cp", "cut", "date", "diff", "dirname", "echo", "env",
         "expr", "false", "find", "grep", "head", "id", "kill", "ln", "ls", "mkdir", "mktemp", "mv", "nl", "nproc",
         "od", "openssl", "printenv", "printf", "pwd", "readlink", "realpath", "rm", "rmdir", "script", "sed", "seq",
         "sleep", "sort", "stat", "tail", "tar", "tee", "test", "touch", "tr", "true", "uname", "uniq", "wc", "which",
         "xargs", "yes")


def _root_paths(interpreter: str, done: tuple[int, str, str]) -> tuple[str, ...]:
    """The host paths a run's allow-listed root binds read-only for `interpreter`, from what _NEEDS printed:
    those that exist, its own path first."""
    code, out, err = done
    if code != 0:
        reason = (err.strip().splitlines() or ["no output"])[-1]
        raise GateFailure(f"could not list what {interpreter} needs in the sandbox's root: {reason}")
    needed = [path for path in dict.fromkeys([interpreter, *json.loads(out), *_ALWAYS])
              if os.path.lexists(path) and " (deleted)" not in path]
    return within_none(needed)


def within_none(paths: Sequence[str]) -> tuple[str, ...]:
    """`paths` without those inside another of them (a bound directory brings what it holds)."""
    folders = [(other, other.rstrip("/") + "/") for other in dict.fromkeys(paths) if os.path.isdir(other)]
    return tuple(path for path in paths if not any(path.startswith(inside) for other, inside in folders
                                                  if other != path))


# Where a checkout or a job's secrets may sit: the gate's working directory, and on GitHub the workspace and
# the runner's temporary directory (its step scripts).
_CHECKOUT_VARIABLES = ("GITHUB_WORKSPACE", "RUNNER_TEMP")
_SYSTEM = ("/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc", "/dev", "/proc", "/sys", "/tmp", "/var/tmp",
           "/dev/shm")


def _hidden(interpreter: str) -> tuple[str, ...]:
    """Places covered wherever a run's root would hold them (inside a directory bound read-only into it): the
    checkout (maybe with a token in .git/config) and the like. Anything else of the host, such as a runner's
    RUNNER_TEMP holding the gate's TMPDIR, is not in a run's root at all."""
    return hideable(interpreter, (os.getcwd(), *(os.environ.get(name, "") for name in _CHECKOUT_VARIABLES)))


def _needed(interpreter: str) -> list[Path]:
    """What every run reads: the system, the interpreter and its library, the gate's own package, the temp."""
    return [Path(p) for p in (*_SYSTEM, os.path.realpath(interpreter), sys.base_prefix, gate_root(),
                              tempfile.gettempdir())]


def _inside(path: Path, place: str) -> bool:
    return path.resolve().is_relative_to(os.path.realpath(place))


def hideable(interpreter: str, places: Sequence[str]) -> tuple[str, ...]:
    """The directories and files among `places` that a run's mount namespace can hide: those that exist,
    resolved, except a directory holding something a run needs (the interpreter, its library, the system)."""
    needed = _needed(interpreter)
    found = []
    for place in filter(None, places):
        path = Path(os.path.realpath(place))
        if path.is_file() or (path.is_dir() and not any(_inside(need, str(path)) for need in needed)):
            found.append(str(path))
    return tuple(dict.fromkeys(found))


class Found(msgspec.Struct, frozen=True):
    """What detection found here: what the layers' records describe (gate/sandbox/layer.py `describe`)."""

    probe: Mapping[str, str]  # a probed layer (or another finding of a probe) -> why it is off ("" when it works)
    root: bool  # the gate runs as root
    interpreter: str  # the sandbox interpreter
    no_interpreter: str  # why there is no interpreter another uid can run ("" when there is)
    prefer_zygote: bool
    uids: users.UidPool | None  # the runs' uids, when they switch
    cgroups: Cgroups | None  # the runs' cgroups...
    cgroup_why: str  # ...or why there are none ("off: ...")


class _Findings(msgspec.Struct, frozen=True):
    """What the probes found for an interpreter."""

    paths: list[str]  # the sandbox interpreter's import paths (the gate's package, the seccomp binding)
    probe: dict[str, str]  # layer -> why it is off ("" when it works)
    root: tuple[str, ...]  # the paths of a run's root (with a mount namespace)
    bpf: bytes  # the seccomp filter, built by the probe (b"" without the layer)


def _found(interpreter: str, root: bool) -> _Findings:
    """Run the probes under `interpreter`, side by side (the root's, as root only: without it there is no
    mount namespace, so no root to list)."""
    needs = _start(interpreter, _NEEDS, os.path.realpath(interpreter), " ".join(TOOLS)) if root else None
    try:
        paths = [gate_root()]
        try:
            lib: ModuleType | None = seccomp.library()  # (while the root's probe runs)
        except ImportError as missing:
            lib, why_no_binding = None, str(missing)
        if lib is not None and lib.__file__:
            paths.append(str(Path(lib.__file__).parent))
        probe = _probe(_finish(_start(interpreter, _PROBE, "1" if root else "0", *paths)))
    finally:
        listed = _finish(needs) if needs else None
    bpf = bytes.fromhex(probe.pop("bpf", ""))
    if lib is None:
        probe["seccomp"] = why_no_binding
    needed = _root_paths(interpreter, listed) if listed and not probe["mountns"] else ()
    return _Findings(paths, probe, needed, bpf)


def _remembered(interpreter: str, root: bool, recall: bool) -> _Findings:
    """`_found`, remembered (gate/memo.py, root only) while nothing it depends on changes: the
    interpreter, the seccomp binding, the shared libraries, the files of a run's root, the kernel and its
    boot, the gate's privileges and namespaces. Only a finding that every probed layer works is kept: a
    layer that then stops working fails its runs' set-up (exit 3), never a verdict; one that was off is
    looked for again by the next gate. `recall=False` finds out afresh (and remembers)."""
    key = _machine(interpreter, root)
    kept = _record(memo.recall("layers", key)) if recall else None
    if kept is not None:
        return kept
    found = _found(interpreter, root)
    if root and not any(found.probe.values()) and found.root:
        memo.remember("layers", key, {"paths": found.paths, "probe": found.probe, "root": list(found.root),
                                      "signatures": _signatures(found.root), "bpf": found.bpf.hex()})
    return found


def _record(kept: object) -> _Findings | None:
    """What a record holds, when it has the shape `_remembered` writes and the files of the root it lists
    are still those it found."""
    if not isinstance(kept, dict) or not all(isinstance(kept.get(name), list) for name in ("paths", "root")):
        return None
    paths, probe, needed, bpf = kept["paths"], kept.get("probe"), kept["root"], kept.get("bpf")
    if not isinstance(probe, dict) or not all(isinstance(p, str) for p in (*paths, *needed, *probe.values(), bpf)):
        return None
    if kept.get("signatures") != _signatures(needed):
        return None
    try:
        return _Findings(paths, probe, tuple(needed), bytes.fromhex(str(bpf)))
    except ValueError:
        return None


def _machine(interpreter: str, root: bool) -> dict[str, object]:
    """What the probes' findings depend on, read without running anything."""
    real = os.path.realpath(interpreter)
    modules = [(name, spec.origin if (spec := importlib.util.find_spec(name)) else None)
               for name in seccomp.MODULES]
    status = [line for line in _read("/proc/self/status").splitlines()
              if line.startswith(("Cap", "NoNewPrivs", "Seccomp"))]
    return {
        "gate": [__version__, gate_root(), _probes_digest()],  # the gate whose package the runs import
        "interpreter": [interpreter, signature(interpreter), real, signature(real)],
        "seccomp": [(name, origin, signature(origin) if origin else None) for name, origin in modules],
        "libraries": signature("/etc/ld.so.cache"),
        "user": [os.geteuid(), os.getegid(), root],
        "kernel": [_read("/proc/sys/kernel/random/boot_id"),
                   *(_read(f"/proc/sys/user/max_{kind}_namespaces") for kind in ("mnt", "net", "ipc"))],
        "process": [*(_link(f"/proc/self/ns/{kind}") for kind in ("user", "mnt", "net", "ipc", "pid", "cgroup")),
                    *status, _read("/proc/self/attr/current")],
    }


def _probes_digest() -> str:
    """The probes' own code: the scripts and the modules they import."""
    modules = {_libc, layer, stack, *(sys.modules[record.probe.__module__] for record in RECORDS if record.probe)}
    text = _PROBE + _NEEDS + " ".join(TOOLS) + "".join(Path(module.__file__ or "").read_text()
                                     for module in sorted(modules, key=lambda module: module.__name__))
    return hashlib.sha256(text.encode()).hexdigest()


def _signatures(paths: Sequence[str]) -> list[list[int] | None]:
    """What changes when a file of a run's root is replaced or a folder's entries change: each path's, and
    that of a `lib-dynload` folder in it (an extension module added there may need another library)."""
    extensions = [os.path.join(path, "lib-dynload") for path in paths]
    return [signature(path) for path in (*paths, *filter(os.path.isdir, extensions))]


def signature(path: str) -> list[int] | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return [info.st_dev, info.st_ino, info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            return file.read(65536)
    except OSError:
        return ""


def _link(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return ""


# The findings of the probes `found_ahead` started in this thread's block: ((interpreter, root), future).
_AHEAD: ContextVar[tuple[tuple[str, bool], Future[_Findings]] | None] = ContextVar("gate_layers_ahead",
                                                                                   default=None)


# What a zygote needs of the layers found: the interpreter, the import paths, the seccomp filter (None without
# the layer), as the registry hands them to a launcher; and the layers that are on (its namespaces).
ZygoteNeeds = tuple[str, tuple[str, ...], bytes | None, tuple[str, ...]]


@contextmanager
def found_ahead() -> Iterator[Future[ZygoteNeeds]]:
    """Start finding out which layers work (`_remembered`) in a thread of its own, so that the probes run while
    the gate does something else (reads the range, asks GitHub), and let `layers` called in this block use
    what they found. Yields what a zygote will need of them, once found. On exit the thread is waited for:
    nothing of it outlives the block."""
    root = os.geteuid() == 0
    interpreter = _interpreter(root)[0]
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="gate-layers") as pool:
        found = pool.submit(_remembered, interpreter, root, True)
        needs = pool.submit(_zygote_needs, interpreter, found)
        token = _AHEAD.set(((interpreter, root), found))
        try:
            yield needs
        finally:
            _AHEAD.reset(token)


def _zygote_needs(interpreter: str, found: Future[_Findings]) -> ZygoteNeeds:
    """What a zygote needs of the layers `found` (after them, on the same thread)."""
    findings = found.result()
    return (interpreter, tuple(findings.paths), None if findings.probe["seccomp"] else findings.bpf,
            _on(findings.probe))


def _on(probe: Mapping[str, str]) -> tuple[str, ...]:
    """The probed layers that work (their probe found nothing wrong)."""
    return tuple(name for name in _PROBED if not probe[name])


def layers(prefer_zygote: bool, recall: bool = True) -> Layers:
    """Detect every layer and choose the ones to use (what the probes find is remembered between gates: see
    `_remembered`; `recall=False` probes afresh). Inside a `found_ahead` block, the probes it started."""
    root = os.geteuid() == 0
    uids = users.UidPool() if root else None
    interpreter, no_interpreter = _interpreter(uids is not None)
    if no_interpreter:
        uids = None
    ahead = _AHEAD.get()
    if recall and ahead is not None and ahead[0] == (interpreter, root):
        found = ahead[1].result()
    else:
        found = _remembered(interpreter, root, recall)
    paths, probe = list(found.paths), dict(found.probe)
    if uids is None or uids.fallback:  # one cgroup per uid, so it needs a uid per concurrent run
        cgroup_manager, cgroup_why = None, "off: needs root and a dedicated uid per run"
    else:
        cgroup_manager, cgroup_why = cgroups.detect()
    here = Found(probe, root, interpreter, no_interpreter, prefer_zygote, uids, cgroup_manager, cgroup_why)
    isolation = {record.name: record.describe(here) for record in RECORDS}
    mountns = not probe["mountns"]
    return Layers(interpreter=interpreter, import_paths=tuple(paths), isolation=isolation, uids=uids,
                  on=_on(probe),
                  overlay=mountns and not probe["overlay"],
                  seccomp_program=found.bpf, cgroups=cgroup_manager,
                  hide=_hidden(interpreter) if mountns else (), root=found.root if mountns else ())
