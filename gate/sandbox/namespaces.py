"""Layers "netns" and "mountns": a run without network and with its own size-limited temporary space.

Child side, as root before the uid switch. A new network namespace has only a loopback device, left down, so
nothing (not even 127.0.0.1) is reachable. In a new mount namespace one tmpfs of `disk_bytes` is mounted on
/tmp, and /var/tmp and /dev/shm are bound to directories inside it, so every world-writable place a run can
fill shares that one bound and disappears with the namespace; the run's files are copied from the staging
directory into /tmp/work on it. `hide` directories (the gate's own workspace) get an empty read-only tmpfs on
top and `hide` files /dev/null; /proc is mounted again with `hidepid=invisible`, so that a run sees no other
user's process.
A zygote does the part every run shares (all but the tmpfs) once, in a template its runs' namespaces copy.
Standard library only: imported inside the child.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence

from gate.sandbox import _libc

WORKDIR = "/tmp/work"
_SHARED_TMP = (("/var/tmp", ".var-tmp"), ("/dev/shm", ".shm"))


def unshare(net: bool, mount: bool) -> None:
    """Enter new network and/or mount namespaces."""
    flags = (_libc.CLONE_NEWNET if net else 0) | (_libc.CLONE_NEWNS if mount else 0)
    if flags:
        _libc.unshare(flags)


def enter_template(hide: Sequence[str]) -> None:
    """Enter a mount namespace that holds what every run's namespace shares, once for all the runs forked
    from this process (a zygote): nothing propagates back to the host, `hide` is hidden, and /proc is its own.
    Each run's namespace is then a copy of it with only its tmpfs added (see private_tmp)."""
    unshare(net=False, mount=True)
    _private_root()
    _hide(hide)
    _own_proc()


def private_tmp(stage: str, disk_bytes: int, owner: tuple[int, int], hide: Sequence[str],
                in_template: bool) -> str:
    """Mount the run's tmpfs (see the module docstring), copy `stage` into it; returns the working directory.
    `in_template`: the namespace was copied from enter_template's, which did the rest already."""
    stage_fd = os.open(stage, os.O_RDONLY | os.O_DIRECTORY)  # the tmpfs may hide `stage` once mounted
    if not in_template:
        _private_root()
    _libc.mount("tmpfs", "/tmp", "tmpfs", _libc.MS_NOSUID | _libc.MS_NODEV, f"size={disk_bytes},mode=1777")
    for target, name in _SHARED_TMP:
        if os.path.isdir(target):
            inside = os.path.join("/tmp", name)
            os.mkdir(inside, 0o1777)
            os.chmod(inside, 0o1777)
            _libc.mount(inside, target, None, _libc.MS_BIND)
    if not in_template:
        _hide(hide)
    _copy_tree(f"/proc/self/fd/{stage_fd}", WORKDIR, owner)
    os.close(stage_fd)
    os.chown(WORKDIR, *owner)
    os.chmod(WORKDIR, 0o700)
    if not in_template:
        _own_proc()
    return WORKDIR


def hidden(path: str, hide: Sequence[str]) -> bool:
    """Whether `path` is, or is inside, one of the `hide` places."""
    return any(path == place or path.startswith(place.rstrip("/") + "/") for place in hide)


def _private_root() -> None:
    """Nothing mounted here may propagate back to the host's namespace."""
    _libc.mount("none", "/", None, _libc.MS_REC | _libc.MS_PRIVATE)


def _hide(hide: Sequence[str]) -> None:
    """An empty read-only tmpfs on each hidden directory, /dev/null on each hidden file. (A path under a tmpfs
    already mounted on /tmp, or inside a hidden directory, is gone already and is skipped.)"""
    for path in hide:
        if os.path.isdir(path):
            flags = _libc.MS_RDONLY | _libc.MS_NOSUID | _libc.MS_NODEV
            _libc.mount("tmpfs", path, "tmpfs", flags, "size=4k,mode=0555")
        elif os.path.isfile(path):
            _libc.mount("/dev/null", path, None, _libc.MS_BIND)


def _own_proc() -> None:
    """A /proc of its own that shows a process only to its uid (and root): without it a run reads the command
    line of every process on the machine, the gate's included, whose arguments may hold a secret."""
    _libc.mount("proc", "/proc", "proc", _libc.MS_NOSUID | _libc.MS_NODEV | _libc.MS_NOEXEC,
                "hidepid=invisible")


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
