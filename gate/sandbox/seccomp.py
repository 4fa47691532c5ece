"""Layer "seccomp": a system-call filter installed in the child right before the program runs.

Policy (allow by default, deny a short list): `socket()` fails with EACCES for every family, so no
IPv4/IPv6/packet/netlink socket can be made even without a network namespace, and no Unix socket either: a
network namespace does not block Unix sockets on the filesystem, and a world-writable one (a D-Bus bus, a
service's socket under /run) would be reachable. `socketpair()` stays (asyncio's self-pipe uses it), and the
pair channel arrives already connected. `ptrace`, `process_vm_readv`/`writev` fail with EPERM so one sandboxed
process cannot read another's memory; `io_uring_setup` fails with EPERM because io_uring can open sockets
without the `socket` system call.

Uses `pyseccomp` (PyPI, ctypes over libseccomp) or Debian's `seccomp` module, whichever imports, to build the
filter and export it as a BPF program once; a child loads that program itself (prctl), without the binding.
Standard library otherwise: this module is imported inside the child.
"""

from __future__ import annotations

import ctypes
import errno
import importlib
import os

from gate.sandbox import _libc

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: a fresh sandboxed interpreter imports this module
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any

MODULES = ("pyseccomp", "seccomp")  # the bindings tried, in order
_DENIED = ("ptrace", "process_vm_readv", "process_vm_writev", "io_uring_setup")
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
_BPF_INSTRUCTION = 8  # bytes of one struct sock_filter


class _Program(ctypes.Structure):
    """struct sock_fprog: the BPF program prctl(PR_SET_SECCOMP) loads."""

    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


_loaded: list[Any] = []  # [instructions buffer, _Program] once prepared (the buffer must stay alive)


def library() -> ModuleType | None:
    """The seccomp binding that imports here, or None."""
    for name in MODULES:
        try:
            return importlib.import_module(name)
        except (ImportError, OSError):  # OSError: the module imports but libseccomp.so is missing
            continue
    return None


def program() -> bytes:
    """Build the filter with the binding and export it as a BPF program (raw struct sock_filter array)."""
    lib = library()
    if lib is None:
        raise RuntimeError("no seccomp library (pyseccomp or python3-seccomp) is importable")
    built = lib.SyscallFilter(defaction=lib.ALLOW)
    built.add_rule(lib.ERRNO(errno.EACCES), "socket")
    for name in _DENIED:
        built.add_rule(lib.ERRNO(errno.EPERM), name)
    read_fd, write_fd = os.pipe()  # a program of a few dozen instructions fits in the pipe's buffer
    with os.fdopen(read_fd, "rb") as exported:
        with os.fdopen(write_fd, "wb") as sink:
            built.export_bpf(sink)
        return exported.read()


def prepare(bpf: bytes | None = None) -> None:
    """Hold the program to load (built here unless given): in the zygote, before it forks; in a fresh child,
    right away."""
    if bpf is None:
        bpf = program()
    if not bpf or len(bpf) % _BPF_INSTRUCTION:
        raise RuntimeError(f"not a BPF program ({len(bpf)} bytes)")
    buffer = ctypes.create_string_buffer(bpf, len(bpf))
    _loaded[:] = [buffer, _Program(len(bpf) // _BPF_INSTRUCTION, ctypes.addressof(buffer))]


def install() -> None:
    """Load the prepared program into the calling process (irrevocable; inherited by its children). Sets
    no_new_privs first, as libseccomp does: an unprivileged process may only load a filter with it."""
    if not _loaded:
        prepare()
    _libc.prctl(_libc.PR_SET_NO_NEW_PRIVS, 1)
    _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(_loaded[1]))
