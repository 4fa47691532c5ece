"""The few Linux system calls the standard library lacks in 3.11 (prctl, unshare, mount, umount2,
pivot_root, pidfd_getfd), through ctypes.

Standard library only: it is imported inside sandboxed children before they drop privileges.
"""

from __future__ import annotations

import ctypes
import os

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
# glibc has no pivot_root wrapper: the system call's number on each architecture the gate runs on.
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "arm64": 41}
_SYS_PIDFD_GETFD = 438  # (one number on every architecture: calls from 424 on share one table)

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> int:
    if result == -1:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def prctl(option: int, arg: int = 0, arg3: int = 0) -> int:
    """prctl(2) with up to two arguments; raises OSError on failure."""
    return _check(_libc.prctl(option, ctypes.c_ulong(arg), ctypes.c_ulong(arg3), 0, 0), "prctl")


def unshare(flags: int) -> None:
    """unshare(2); raises OSError on failure."""
    _check(_libc.unshare(flags), "unshare")


def mount(source: str, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    """mount(2); raises OSError on failure."""
    _check(_libc.mount(source.encode(), target.encode(), fstype.encode() if fstype else None,
                       ctypes.c_ulong(flags), data.encode() if data else None), f"mount {target}")


def umount(target: str, flags: int = 0) -> None:
    """umount2(2); raises OSError on failure."""
    _check(_libc.umount2(target.encode(), flags), f"umount {target}")


def pivot_root(new_root: str, put_old: str) -> None:
    """pivot_root(2); raises OSError on failure (or on an architecture whose call number is not known)."""
    number = _SYS_PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise OSError(f"pivot_root: unknown system call number on {os.uname().machine}")
    _check(_libc.syscall(number, new_root.encode(), put_old.encode()), "pivot_root")


def pidfd_getfd(pidfd: int, target: int) -> int:
    """pidfd_getfd(2): a descriptor (close-on-exec) of what the process of `pidfd` has open as `target`; raises
    OSError (ENOSYS before Linux 5.6, EPERM without the right to trace that process)."""
    return _check(_libc.syscall(_SYS_PIDFD_GETFD, pidfd, target, 0), "pidfd_getfd")
