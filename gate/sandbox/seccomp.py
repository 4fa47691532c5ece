"""Layer "seccomp": a system-call filter installed in the child right before the program runs.

Policy (allow by default, deny a short list): `socket()` fails with EACCES for every family, so no
IPv4/IPv6/packet/netlink socket can be made even without a network namespace, and no Unix socket either: a
network namespace does not block Unix sockets on the filesystem, and a world-writable one (a D-Bus bus, a
service's socket under /run) would be reachable. `socketpair()` stays (asyncio's self-pipe uses it), and the
pair channel arrives already connected. `ptrace`, `process_vm_readv`/`writev` fail with EPERM so one sandboxed
process cannot read another's memory; `io_uring_setup` fails with EPERM because io_uring can open sockets
without the `socket` system call.

Uses `pyseccomp` (PyPI, ctypes over libseccomp) or Debian's `seccomp` module, whichever imports. Standard
library otherwise: this module is imported inside the child.
"""

from __future__ import annotations

import errno
import importlib

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: a fresh sandboxed interpreter imports this module
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any

_MODULES = ("pyseccomp", "seccomp")
_DENIED = ("ptrace", "process_vm_readv", "process_vm_writev", "io_uring_setup")
_filter: Any = None


def library() -> ModuleType | None:
    """The seccomp binding that imports here, or None."""
    for name in _MODULES:
        try:
            return importlib.import_module(name)
        except (ImportError, OSError):  # OSError: the module imports but libseccomp.so is missing
            continue
    return None


def prepare() -> None:
    """Build the filter once (in the zygote, before it forks; in a fresh child, right away)."""
    global _filter
    lib = library()
    if lib is None:
        raise RuntimeError("no seccomp library (pyseccomp or python3-seccomp) is importable")
    built = lib.SyscallFilter(defaction=lib.ALLOW)
    built.add_rule(lib.ERRNO(errno.EACCES), "socket")
    for name in _DENIED:
        built.add_rule(lib.ERRNO(errno.EPERM), name)
    _filter = built


def install() -> None:
    """Load the prepared filter into the calling process (irrevocable; inherited by its children)."""
    if _filter is None:
        prepare()
    _filter.load()
