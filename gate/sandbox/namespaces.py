"""Layers "netns", "mountns" and "ipcns": a run without network, with an allow-listed file system of its own,
and without the System V IPC objects of anyone else.

Child side, as root before the uid switch. A new network namespace has only a loopback device, left down, so
nothing (not even 127.0.0.1) is reachable; a run that asks for its loopback (RunRequest.loopback: a repository's
suite, whose tests often serve and connect on 127.0.0.1) gets a network namespace of its own, even from a zygote
whose runs share one, with that device up: it reaches itself and nothing else.
A new IPC namespace per run: a shared memory segment or semaphore a
run makes dies with it, and no run sees another's.

The file system is built the way nsjail and bubblewrap build theirs: a fresh tmpfs becomes the root
(pivot_root, the host's root detached), holding only read-only binds of the paths the sandbox allows (the
interpreter, its standard library and shared libraries, /etc/ld.so.cache, the system data its library reads:
time zones, locales, MIME types, CA certificates; what the caller adds), the
symbolic links on the way to them, null, zero, full, random and urandom in /dev, a /proc of its own
(`hidepid=invisible`: no other user's process is visible) and, in a directory only root can enter, the
sandbox's staging directory. Nothing else of the host exists there. Each run then gets one tmpfs of
`disk_bytes` on /tmp, with /var/tmp and /dev/shm bound to directories inside it (every place a run can fill
shares that one bound and disappears with the namespace), and a devpts instance of its own on /dev/pts, at most
`PTYS` pseudo-terminals that no other run and nothing of the host can see (test suites drive programs through
one: `pty`, `script`, coloredlogs' and pexpect's tests); its files are copied from its staging directory
into /tmp/work, over a shared read-only tree (overlayfs) when it has one, and the staging directory is
unmounted from the run's namespace before the program starts.
A zygote builds the root once, in a template its runs' namespaces copy. Standard library only: imported
inside the child.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import struct
from collections.abc import Callable, Sequence

from gate.sandbox import _libc, account, interpreter
from gate.sandbox.layer import Layer, Run, switch

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the child imports this module
if TYPE_CHECKING:
    from gate.sandbox.child import ChildConfig
    from gate.sandbox.detect import Found
    from gate.sandbox.layer import Probe
    from gate.sandbox.runner import Layers, RunSetup
    from gate.sandbox.stack import LayerSettings

# The layers that are each a namespace of the run's own, by name: the unshare(2) flag of each. Their records
# (NETNS, MOUNTNS, IPCNS, below) share one setting, the list of those the runs use (ChildConfig "unshare").
NAMESPACES = {
    "netns": _libc.CLONE_NEWNET,
    "mountns": _libc.CLONE_NEWNS,
    "ipcns": _libc.CLONE_NEWIPC,
}
WORKDIR = "/tmp/work"
# Where the sandbox's staging directory is bound in the root: inside a directory only root may enter.
GATE_DIR = "/.gate"
STAGING = GATE_DIR + "/stage"
_ASIDE = GATE_DIR + "/aside"  # read-only paths under /tmp, bound again over each run's own /tmp
_OVERLAY = "/tmp/.gate-overlay"  # the upper and work directories of a run's overlay (root only)
_SHARED_TMP = (("/var/tmp", ".var-tmp"), ("/dev/shm", ".shm"))
DEVICES = ("null", "zero", "full", "random", "urandom")
_DEV_LINKS = (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
              ("stderr", "/proc/self/fd/2"), ("ptmx", "pts/ptmx"))
_ROOT_DIRS = (("/tmp", 0o1777), ("/var", 0o755), ("/var/tmp", 0o1777), ("/dev", 0o755), ("/dev/shm", 0o1777),
              ("/dev/pts", 0o755), ("/proc", 0o555), (GATE_DIR, 0o700), (STAGING, 0o700), (_ASIDE, 0o700))
# The pseudo-terminals a run may hold at once, in its own devpts instance (private_tmp): enough for a test suite
# that drives a few programs through them, few enough that no run takes a large share of the kernel's
# (/proc/sys/kernel/pty/max, which every instance shares).
PTYS = 16
_NEW_ROOT = "/tmp"  # in the new namespace only: where the root is built before it becomes "/"
_RO = _libc.MS_RDONLY | _libc.MS_NOSUID | _libc.MS_NODEV
_MAX_LINKS = 40


def unshare(names: Sequence[str]) -> None:
    """Enter a new namespace of each of `names` (NAMESPACES)."""
    flags = 0
    for name in names:
        flags |= NAMESPACES[name]
    if flags:
        _libc.unshare(flags)


def enter_template(root: Sequence[str], staging: str, hide: Sequence[str]) -> None:
    """Enter a mount namespace holding the allow-listed root, once for all the runs forked from this process
    (a zygote). Each run's namespace is then a copy of it with only its tmpfs added (see private_tmp)."""
    unshare(["mountns"])
    enter_root(root, staging, hide)


def enter_root(root: Sequence[str], staging: str, hide: Sequence[str]) -> None:
    """In a new mount namespace: make the allow-listed root (see the module docstring) and pivot into it.
    `root` lists the host paths to bind read-only (files or directories, at the same path), `staging` is the
    host directory of the sandbox's staged runs; `hide` places inside a bound directory are covered."""
    _libc.mount("none", "/", None, _libc.MS_REC | _libc.MS_PRIVATE)  # nothing propagates to the host
    links: dict[str, str] = {}
    binds: dict[str, int] = {}
    # Every source is opened before the new root hides anything (a source may live under /tmp).
    for name in os.listdir("/"):  # the top-level links (/lib -> usr/lib, /bin -> usr/bin, ...), as links only
        if os.path.islink("/" + name):
            links["/" + name] = os.readlink("/" + name)
    for path in (*_outside_tmp(root), *(f"/dev/{name}" for name in DEVICES)):
        _plan(path, links, binds, 0)
    # A path reached through a link may lie inside a directory planned after it (/etc/localtime's zone file in
    # /usr/share/zoneinfo): that directory's bind brings it, one mount fewer for each run to copy.
    for path in [path for path in binds if any(path.startswith(other + "/") for other in binds)]:
        os.close(binds.pop(path))
    # A path under /tmp would be covered by each run's own /tmp: kept aside, bound again by every run.
    aside = [os.open(path, os.O_PATH | os.O_CLOEXEC) for path in _under_tmp(root)]
    staged = os.open(staging, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _libc.mount("tmpfs", _NEW_ROOT, "tmpfs", _libc.MS_NOSUID, "size=1m,mode=0755")
        for path, mode in _ROOT_DIRS:
            _mkdir(_NEW_ROOT + path, mode)
        for path, target in links.items():
            _make_parents(_NEW_ROOT + path)
            if not os.path.lexists(_NEW_ROOT + path):
                os.symlink(target, _NEW_ROOT + path)
        for path, fd in binds.items():
            _bind(fd, _NEW_ROOT + path, device=path.startswith("/dev/"))
        for name, target in _DEV_LINKS:
            os.symlink(target, f"{_NEW_ROOT}/dev/{name}")
        _bind(staged, _NEW_ROOT + STAGING, device=False)
        interpreter.make_home(_NEW_ROOT + interpreter.HOME, linked=True)
        account.link_databases(_NEW_ROOT)
        for name, text in _NAMES:
            with open(f"{_NEW_ROOT}/etc/{name}", "x") as written:
                written.write(text)
        for index, fd in enumerate(aside):
            _bind(fd, f"{_NEW_ROOT}{_ASIDE}/{index}", device=False)
        _libc.mount("proc", _NEW_ROOT + "/proc", "proc", _libc.MS_NOSUID | _libc.MS_NODEV | _libc.MS_NOEXEC,
                    "hidepid=invisible")
    finally:
        for fd in (staged, *aside, *binds.values()):
            os.close(fd)
    os.chdir(_NEW_ROOT)
    os.mkdir(".old", 0o700)
    _libc.pivot_root(".", ".old")
    os.chdir("/")
    _libc.umount("/.old", _libc.MNT_DETACH)
    os.rmdir("/.old")
    _libc.mount("none", "/", None, _libc.MS_REMOUNT | _libc.MS_BIND | _RO)
    _hide(hide)


def _under_tmp(root: Sequence[str]) -> list[str]:
    return [path for path in root if path == "/tmp" or path.startswith("/tmp/")]


def _outside_tmp(root: Sequence[str]) -> list[str]:
    return [path for path in root if path != "/tmp" and not path.startswith("/tmp/")]


def _plan(path: str, links: dict[str, str], binds: dict[str, int], depth: int) -> None:
    """Note what makes `path` reachable in the new root as on the host: each symbolic link on the way (as a
    link) and the path itself (a bind of an opened descriptor). A path that does not exist is left out."""
    if depth > _MAX_LINKS:
        return
    parts = [part for part in path.split("/") if part]
    current = ""
    for index, part in enumerate(parts):
        current += "/" + part
        try:
            info = os.lstat(current)
        except OSError:
            return
        if stat.S_ISLNK(info.st_mode):
            target = os.readlink(current)
            links[current] = target
            resolved = os.path.normpath(os.path.join(os.path.dirname(current), target))
            _plan("/".join((resolved, *parts[index + 1:])), links, binds, depth + 1)
            return
    if current and current not in binds and not any(current.startswith(bound + "/") for bound in binds):
        binds[current] = os.open(current, os.O_PATH | os.O_CLOEXEC)


def _make_parents(path: str) -> None:
    parent = os.path.dirname(path)
    if not os.path.lexists(parent):
        _make_parents(parent)
        os.mkdir(parent, 0o755)


def _mkdir(path: str, mode: int) -> None:
    _make_parents(path)
    if not os.path.lexists(path):
        os.mkdir(path)
    os.chmod(path, mode)


def _bind(fd: int, target: str, device: bool, close: bool = False) -> None:
    """Bind the opened path `fd` on `target` (made as an empty file or directory), read-only unless it is a
    device (a device's writes go to the driver, never to the file system); `close`: close `fd` after."""
    source = f"/proc/self/fd/{fd}"
    try:
        if os.path.isdir(source):
            _mkdir(target, 0o755)
        elif not os.path.lexists(target):
            _make_parents(target)
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644))
        _libc.mount(source, target, None, _libc.MS_BIND)
    finally:
        if close:
            os.close(fd)
    flags = _libc.MS_NOSUID | _libc.MS_NOEXEC if device else _RO
    _libc.mount("none", target, None, _libc.MS_REMOUNT | _libc.MS_BIND | flags)


def private_tmp(stage: str, tree: str | None, disk_bytes: int, owner: tuple[int, int], root: Sequence[str],
                staging: str, hide: Sequence[str], in_template: bool, read_only: bool = False) -> str:
    """Mount the run's tmpfs and fill its working directory (see the module docstring); returns it. `stage`
    and `tree` are paths under STAGING. `in_template`: the namespace was copied from enter_template's, which
    made the root already. `read_only`: the working directory is mounted read-only (RunRequest.read_only_tree)."""
    if not in_template:
        enter_root(root, staging, hide)
    _libc.mount("tmpfs", "/tmp", "tmpfs", _libc.MS_NOSUID | _libc.MS_NODEV, f"size={disk_bytes},mode=1777")
    for target, name in _SHARED_TMP:
        inside = os.path.join("/tmp", name)
        os.mkdir(inside, 0o1777)
        os.chmod(inside, 0o1777)
        _libc.mount(inside, target, None, _libc.MS_BIND)
    _own_ptys()
    aside = _under_tmp(root)
    for index, path in enumerate(aside):
        _bind(os.open(f"{_ASIDE}/{index}", os.O_PATH | os.O_CLOEXEC), path, device=False, close=True)
    if aside:
        _hide(_under_tmp(hide))
    if tree is None:
        _copy_tree(stage, WORKDIR, owner)
    else:
        # The tree is shared by every run, read-only; the run's own files and changes go to its upper layer.
        os.mkdir(_OVERLAY, 0o700)
        upper, work = f"{_OVERLAY}/upper", f"{_OVERLAY}/work"
        _copy_tree(stage, upper, owner)
        os.mkdir(work, 0o700)
        os.mkdir(WORKDIR)
        _libc.mount("overlay", WORKDIR, "overlay", _libc.MS_NOSUID | _libc.MS_NODEV,
                    f"lowerdir={tree},upperdir={upper},workdir={work}")
    os.chown(WORKDIR, *owner)
    os.chmod(WORKDIR, 0o700)
    if read_only:
        _libc.mount(WORKDIR, WORKDIR, None, _libc.MS_BIND)
        _libc.mount("none", WORKDIR, None, _libc.MS_REMOUNT | _libc.MS_BIND | _RO)
    _libc.umount(STAGING, _libc.MNT_DETACH)  # no other run's directory, nor the shared tree, stays in reach
    return WORKDIR


def _own_ptys() -> None:
    """A devpts instance of the run's own on /dev/pts, in the run's namespace (never in a zygote's template:
    every run forked from it would share its ptys). Where the kernel refuses one, the run has no pseudo-terminal,
    and still none of the host's: /dev/pts stays the root's empty directory."""
    with contextlib.suppress(OSError):
        _libc.mount("devpts", "/dev/pts", "devpts", _libc.MS_NOSUID | _libc.MS_NOEXEC,
                    f"newinstance,ptmxmode=0666,mode=0600,max={PTYS}")


def _hide(hide: Sequence[str]) -> None:
    """An empty read-only tmpfs on each hidden directory, /dev/null on each hidden file, wherever one is
    inside a bound directory of the new root (anything else of the host is not there at all)."""
    for path in hide:
        if os.path.isdir(path):
            _libc.mount("tmpfs", path, "tmpfs", _RO, "size=4k,mode=0555")
        elif os.path.isfile(path):
            _libc.mount("/dev/null", path, None, _libc.MS_BIND)


def _copy_tree(source: str, target: str, owner: tuple[int, int]) -> None:
    """Copy directory `source` to a new `target`, owned by `owner`: files' contents (their mode from the
    umask, as shutil.copyfile would), symlinks as links, directories with their mode. Plain os calls, not
    shutil.copytree: this runs in every run's forked child, where each Python object it touches costs a
    copied page."""
    os.mkdir(target)
    with os.scandir(source) as entries:
        for entry in entries:
            inside = os.path.join(target, entry.name)
            if entry.is_symlink():
                os.symlink(os.readlink(entry.path), inside)
            elif entry.is_dir():
                _copy_tree(entry.path, inside, owner)
                os.chmod(inside, stat.S_IMODE(entry.stat().st_mode))
            elif entry.is_file():
                _copy_file(entry.path, inside)
            else:
                raise OSError(f"{entry.path}: not a file, directory or symlink")
            os.lchown(inside, *owner)


def _copy_file(source: str, target: str) -> None:
    """Copy a regular file's contents in the kernel (sendfile), as shutil.copyfile does on Linux."""
    source_fd = os.open(source, os.O_RDONLY | os.O_CLOEXEC)
    try:
        target_fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        try:
            offset = 0
            while sent := os.sendfile(target_fd, source_fd, offset, 1 << 30):
                offset += sent
        finally:
            os.close(target_fd)
    finally:
        os.close(source_fd)


def _probe(name: str) -> Probe:
    """Whether the probe's process (as root) can enter a namespace of the kind."""
    def probe(root: bool) -> dict[str, str]:
        if not root:
            return {name: "needs root"}
        try:
            _libc.unshare(NAMESPACES[name])
        except OSError as exc:
            return {name: exc.strerror or str(exc)}
        return {name: ""}
    return probe


def _probe_mountns(root: bool) -> dict[str, str]:
    """The mount namespace's probe, then in the new namespace: can a run's tree be an overlay ("overlay")?"""
    found = _probe("mountns")(root)
    found["overlay"] = found["mountns"]
    if not found["mountns"]:
        try:
            _libc.mount("none", "/", None, _libc.MS_REC | _libc.MS_PRIVATE)
            _libc.mount("tmpfs", "/tmp", "tmpfs", 0, "size=64k")
            for name in ("lower", "upper", "work", "merged"):
                os.mkdir("/tmp/" + name)
            _libc.mount("overlay", "/tmp/merged", "overlay", 0,
                        "lowerdir=/tmp/lower,upperdir=/tmp/upper,workdir=/tmp/work")
        except OSError as exc:
            found["overlay"] = exc.strerror or str(exc)
    return found


def shared(layers: Layers, staging: str) -> LayerSettings:
    """What every run of a sandbox over `layers` (its run directories in `staging`) has the same: the
    namespaces it enters and the allow-listed root's making, which a zygote does once for all its runs
    (zygote_server)."""
    return {"unshare": _unshared(layers), "hide": list(layers.hide), "root": list(layers.root), "staging": staging}


def before_root(on: Sequence[str]) -> LayerSettings:
    """`shared` as far as a zygote can make it before the sandbox that takes it opens, with the layers `on`: its
    network namespace (and the framework imported there: zygote_server.make_shared), not the mount template,
    whose root the sandbox's opening decides (`shared` then)."""
    return {"unshare": [name for name in NAMESPACES if name in on and name != "mountns"], "hide": [], "root": [],
            "staging": ""}


def _unshared(layers: Layers) -> list[str]:
    return [name for name in NAMESPACES if name in layers.on]


def _entered(setup: RunSetup) -> LayerSettings:
    return {"unshare": _unshared(setup.layers)}


def _network(setup: RunSetup) -> LayerSettings:
    # (With a mount namespace only, which brings the allow-listed root: on the host's file system a Unix socket
    # could reach a service's; and with a cgroup, which holds its socket buffers to its memory limit.)
    on = setup.layers.on
    return {"unshare": _unshared(setup.layers),
            "loopback": setup.request.loopback and {"netns", "mountns"} <= set(on) and bool(setup.cgroup_fds)}


def _enter_network(config: ChildConfig, run: Run) -> None:
    """netns: the namespace the runs share (a zygote's runs are in it already), or one of the run's own with
    its loopback device up."""
    if "netns" in config["unshare"] or config["loopback"]:
        _libc.unshare(NAMESPACES["netns"])
    if config["loopback"]:
        _loopback_up()


_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
# The names a CI runner resolves with no network, in the root's /etc: localhost, the loopback a suite's run has
# (the other runs have no socket); from the files alone, so that no name waits for a DNS server that is not there.
_NAMES = (("hosts", "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"),
          ("nsswitch.conf", "passwd: files\ngroup: files\nhosts: files\n"))
_IFREQ = struct.Struct("16sH22x")  # struct ifreq: the device's name, then its flags (ifr_flags)


def _loopback_up() -> None:
    """Bring the loopback device of this (new) network namespace up, as `ip link set lo up` does."""
    import socket  # (loaded already in a zygote)

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as device:
        _, flags = _IFREQ.unpack(fcntl.ioctl(device, _SIOCGIFFLAGS, _IFREQ.pack(b"lo", 0)))
        fcntl.ioctl(device, _SIOCSIFFLAGS, _IFREQ.pack(b"lo", flags | _IFF_UP))


def _enter(name: str) -> Callable[[ChildConfig, Run], None]:
    def enter(config: ChildConfig, run: Run) -> None:
        if name in config["unshare"]:
            _libc.unshare(NAMESPACES[name])
    return enter


def _describe_mountns(found: Found) -> str:
    overlay = found.probe.get("overlay", "")
    return switch(found.probe["mountns"], "on (tmpfs /tmp, /var/tmp, /dev/shm; own /proc and /dev/pts; " + (
        "a head tree staged once, read-only under each run's own layer)" if not overlay
        else f"a head tree copied for each run: no overlayfs here, {overlay})"))


def _describe_filesystem(found: Found) -> str:
    why = found.probe["mountns"]
    return switch(why and f"the run sees the host's files ({why})",
                  "allow-listed root: a tmpfs with read-only binds of the interpreter, its standard library and "
                  "shared libraries, the system data it reads (time zones, locales, MIME types, CA certificates), "
                  "the shell, ldconfig and the common POSIX tools (cat, sed, grep, find, diff, ...), /dev/null, "
                  "zero, full, random, urandom, its own /proc and ptys, a private /tmp, the run's own user (passwd "
                  "and group entries, HOME) and localhost in /etc/hosts; nothing else of the host")


def _filesystem(setup: RunSetup) -> LayerSettings:
    made = shared(setup.layers, setup.staging)
    return {
        "disk_bytes": setup.request.limits.disk_bytes,
        "hide": made["hide"],
        "root": made["root"],
        "staging": made["staging"],
        "in_template": False,  # a zygote sets it when it made the run's mount template (zygote_server)
        "tree": setup.tree,
        "read_only": setup.request.read_only_tree,
    }


def _enter_root(config: ChildConfig, run: Run) -> None:
    """filesystem: with a mount namespace, the run's allow-listed root and its own /tmp holding its working
    directory (private_tmp) and its user's entries (gate/sandbox/account.py); then, with one or not, the run's
    HOME and its working directory; for a Python program, the interpreter it names as `sys.executable`
    (gate/sandbox/interpreter.py). All written before the uid switch, so that the run cannot change them: in
    its /tmp, or beside its working directory without a namespace."""
    mountns = "mountns" in config["unshare"]
    uid, gid = config["uid"], config["gid"]
    owner = (os.getuid(), os.getgid()) if uid is None or gid is None else (uid, gid)
    if mountns:
        run.workdir = private_tmp(run.workdir, config["tree"], config["disk_bytes"], owner, config["root"],
                                  config["staging"], config["hide"], config["in_template"], config["read_only"])
        account.write_databases(*owner)
    account.make_home(account.home(config["stage"], mountns), owner)
    os.chdir(run.workdir)
    if config["script"] is None:
        return
    home = interpreter.home(config["stage"], mountns)
    if not mountns:
        interpreter.make_home(home, linked=False)
    interpreter.fill(home, config["python_path"], config["sites"], config["scripts"], run.workdir,
                     into=(interpreter.RUN_BIN, interpreter.RUN_SITE) if mountns else None,
                     programs=config["programs"])


NETNS = Layer("netns", lambda found: switch(found.probe["netns"], "on (no interface up; a suite's run: its own "
                                                                  "loopback)"),
              probe=_probe("netns"), settings=_network, apply=_enter_network)
MOUNTNS = Layer("mountns", _describe_mountns, probe=_probe_mountns, settings=_entered, apply=_enter("mountns"))
IPCNS = Layer("ipcns", lambda found: switch(found.probe["ipcns"], "on (System V IPC of its own per run)"),
              probe=_probe("ipcns"), settings=_entered, apply=_enter("ipcns"))
# The allow-listed root: made in the run's mount namespace, so on with mountns (it has no probe of its own).
FILESYSTEM = Layer("filesystem", _describe_filesystem, settings=_filesystem, apply=_enter_root)
