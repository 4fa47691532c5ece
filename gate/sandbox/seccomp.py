"""Layer "seccomp": a system-call filter installed in the child right before the program runs.

Policy (allow by default, deny a list): `socket()` fails with EACCES for every family, so no
IPv4/IPv6/packet/netlink socket can be made even without a network namespace, and no Unix socket either: a
network namespace does not block Unix sockets on the filesystem, and a world-writable one (a D-Bus bus, a
service's socket under /run) would be reachable; and the runs a zygote starts share one network namespace,
whose abstract Unix sockets would join them. `socketpair()` stays for stream sockets (asyncio's self-pipe,
multiprocessing's pipes), and the pair channel arrives already connected; a datagram pair is refused, and so are
`bind`, `connect` and `listen` (an end of a pair, disconnected or not, could take an abstract name).
A run in a network namespace of its own with only its loopback up (RunRequest.loopback,
gate/sandbox/namespaces.py) loads a second program, which lets `socket()` make Unix, IPv4 and IPv6 sockets (its
own loopback, its own abstract names, the files of its own root) and no other family.
The rest of the list fails with EPERM, as in Docker's default profile
(which allows a list instead and denies what it leaves out), each family because it is state that outlives a
run or reaches past it, and nothing a Python program, a harness or pytest needs:

- the kernel keyring (`add_key`, `keyctl`, `request_key`): a uid's keyring outlives its runs and the gate, so a
  hidden case's run could leave its arguments there for the next run (a public case, a later gate) to report;
- other processes' memory (`ptrace`, `process_vm_readv`/`writev`, `pidfd_getfd`, `kcmp`);
- POSIX message queues (`mq_*`): every process of an IPC namespace shares them, and no file or listing shows
  them, so the cases a run serves together could pass state through one unseen (System V IPC is listed in
  /proc, and the harness checks it);
- io_uring (`io_uring_*`), which can open sockets and files without those system calls;
- namespaces and mounts (`unshare`, `setns`, `clone` with a namespace flag, the mount calls, `chroot`,
  `pivot_root`): a run's namespaces and root are the gate's to make; `clone3`, whose flags sit in memory a filter
  cannot read, fails with ENOSYS so that the C library falls back to `clone` (as Docker does);
- the kernel itself and the machine (modules, `kexec_*`, `reboot`, swap, the clock, `acct`, quotas, `bpf`,
  `perf_event_open`, `userfaultfd`, `syslog`, I/O ports, file handles, the host and domain names).

Uses `pyseccomp` (PyPI, ctypes over libseccomp) or Debian's `seccomp` module, whichever imports, to build the
filter and export it as a BPF program once; a child loads that program itself (prctl), without the binding.
Standard library otherwise: this module is imported inside the child.
"""

from __future__ import annotations

import ctypes
import errno
import importlib
import os
import struct
import sys

from gate.sandbox import _libc
from gate.sandbox.layer import Layer, Run, switch

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: a fresh sandboxed interpreter imports this module
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any

    from gate.sandbox.child import ChildConfig
    from gate.sandbox.runner import RunSetup
    from gate.sandbox.stack import LayerSettings

MODULES = ("pyseccomp", "seccomp")  # the bindings tried, in order
# The families a run with its own loopback may open (socket(2)'s first argument): AF_UNIX, AF_INET, AF_INET6.
LOOPBACK_FAMILIES = (1, 2, 10)
_PAIR = struct.Struct("<I")  # program() gives both programs as one: the first one's length, then each
_SOCK_STREAM = 1
# Denied with EPERM, by family (see the module's docstring); names this machine's kernel does not know are skipped.
DENIED = {
    "keyring": ("add_key", "keyctl", "request_key"),
    "memory of other processes": ("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp"),
    "io_uring": ("io_uring_setup", "io_uring_enter", "io_uring_register"),
    "POSIX message queues": ("mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify",
                             "mq_getsetattr"),
    "namespaces and mounts": ("unshare", "setns", "mount", "umount2", "mount_setattr", "move_mount", "open_tree",
                              "fsopen", "fsconfig", "fsmount", "fspick", "pivot_root", "chroot"),
    "the kernel and the machine": (
        "init_module", "finit_module", "delete_module", "create_module", "query_module", "get_kernel_syms",
        "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff", "acct", "settimeofday", "clock_settime",
        "clock_adjtime", "quotactl", "quotactl_fd", "nfsservctl", "bpf", "perf_event_open", "userfaultfd",
        "lookup_dcookie", "syslog", "iopl", "ioperm", "name_to_handle_at", "open_by_handle_at", "sethostname",
        "setdomainname", "vhangup", "uselib", "ustat", "sysfs", "_sysctl"),
}
# clone(2)'s flags that make a namespace (its first argument on every architecture the gate runs on).
NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
_BPF_INSTRUCTION = 8  # bytes of one struct sock_filter


class _Program(ctypes.Structure):
    """struct sock_fprog: the BPF program prctl(PR_SET_SECCOMP) loads."""

    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


# [instructions, _Program] of the runs' program, then of the loopback runs', once prepared (the buffers must stay
# alive).
_loaded: list[Any] = []


def library() -> ModuleType:
    """The seccomp binding that imports here. Raises ImportError saying what each import raised (the module is
    not on the path; it is, but libseccomp.so is not) and how to get one."""
    failures = []
    for name in MODULES:
        try:
            return importlib.import_module(name)
        except (ImportError, OSError) as exc:  # OSError: the module imports but libseccomp.so is missing
            failures.append(f"{name}: {type(exc).__name__}: {exc}")
    raise ImportError(f"no seccomp binding imports under {sys.executable} ({'; '.join(failures)}): pip install "
                      "pyseccomp (with libseccomp2), or apt install python3-seccomp")


def program() -> bytes:
    """Build the filter with the binding and export it as BPF programs (raw struct sock_filter arrays): the
    runs' and the loopback runs', as one (`_PAIR`)."""
    strict, loopback = _program(loopback=False), _program(loopback=True)
    return _PAIR.pack(len(strict)) + strict + loopback


def _program(loopback: bool) -> bytes:
    lib = library()
    built = lib.SyscallFilter(defaction=lib.ALLOW)
    if loopback:  # every family but LOOPBACK_FAMILIES, whatever the upper bits of the register hold
        allowed = sorted(LOOPBACK_FAMILIES)
        for domain in (family for family in range(allowed[-1]) if family not in allowed):
            built.add_rule(lib.ERRNO(errno.EACCES), "socket", lib.Arg(0, lib.EQ, domain))
        built.add_rule(lib.ERRNO(errno.EACCES), "socket", lib.Arg(0, lib.GT, allowed[-1]))
    else:
        built.add_rule(lib.ERRNO(errno.EACCES), "socket")
        # A pair of stream sockets only (the type's low four bits; the flags above them pass), and no address
        # for any socket: a datagram pair's end can be disconnected and bound to an abstract name, and a stream
        # pair's end bound to one, which every run of a zygote shares (/proc/net/unix lists them). Nothing
        # without socket() needs bind, connect or listen: the pairs come connected.
        for kind in (kind for kind in range(16) if kind != _SOCK_STREAM):
            built.add_rule(lib.ERRNO(errno.EACCES), "socketpair", lib.Arg(1, lib.MASKED_EQ, 0xF, kind))
        for name in ("bind", "connect", "listen"):
            built.add_rule(lib.ERRNO(errno.EACCES), name)
    for names in DENIED.values():
        for name in filter(lambda name: _known(lib, name), names):
            built.add_rule(lib.ERRNO(errno.EPERM), name)
    for flag in NAMESPACE_FLAGS:
        built.add_rule(lib.ERRNO(errno.EPERM), "clone", lib.Arg(0, lib.MASKED_EQ, flag, flag))
    built.add_rule(lib.ERRNO(errno.ENOSYS), "clone3")
    read_fd, write_fd = os.pipe()  # a program of a few dozen instructions fits in the pipe's buffer
    with os.fdopen(read_fd, "rb") as exported:
        with os.fdopen(write_fd, "wb") as sink:
            built.export_bpf(sink)
        return exported.read()


def _known(lib: ModuleType, name: str) -> bool:
    """Whether the binding's libseccomp knows the system call (an older one lacks the newest calls; one that
    does not exist on this architecture is known and never matches)."""
    try:
        return bool(lib.resolve_syscall(lib.Arch.NATIVE, name) != -1)  # -1: __NR_SCMP_ERROR
    except (ValueError, RuntimeError, OSError):
        return False


def prepare(bpf: bytes | None = None) -> None:
    """Hold the programs to load (`program()`'s, built here unless given): in the zygote, before it forks; in a
    fresh child, right away."""
    if bpf is None:
        bpf = program()
    (size,) = _PAIR.unpack_from(bpf) if len(bpf) >= _PAIR.size else (0,)
    programs = (bpf[_PAIR.size:_PAIR.size + size], bpf[_PAIR.size + size:])
    loaded: list[Any] = []
    for code in programs:
        if not code or len(code) % _BPF_INSTRUCTION:
            raise RuntimeError(f"not a pair of BPF programs ({len(bpf)} bytes)")
        buffer = ctypes.create_string_buffer(code, len(code))
        loaded += [buffer, _Program(len(code) // _BPF_INSTRUCTION, ctypes.addressof(buffer))]
    _loaded[:] = loaded


def install(loopback: bool = False) -> None:
    """Load the prepared program (the loopback runs' with `loopback`) into the calling process (irrevocable;
    inherited by its children). Sets no_new_privs first, as libseccomp does: an unprivileged process may only
    load a filter with it."""
    if not _loaded:
        prepare()
    _libc.prctl(_libc.PR_SET_NO_NEW_PRIVS, 1)
    _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(_loaded[3 if loopback else 1]))


def _probe(root: bool) -> dict[str, str]:
    """Build and hold the filter here; its program ("bpf", in hex) is what the runs load (runner.Layers)."""
    try:
        bpf = program()
        prepare(bpf)
    except Exception as exc:
        return {"seccomp": f"{type(exc).__name__}: {exc}"}
    return {"seccomp": "", "bpf": bpf.hex()}


def _settings(setup: RunSetup) -> LayerSettings:
    return {"seccomp": "seccomp" in setup.layers.on}


def _apply(config: ChildConfig, run: Run) -> None:
    if config["seccomp"]:
        install(config["loopback"])  # (only a run in a network namespace of its own: gate/sandbox/namespaces.py)


SECCOMP = Layer("seccomp", lambda found: switch(found.probe["seccomp"], "on (no socket but a suite's on its own "
                                                                      "loopback; no ptrace, keyring, message "
                                                                      "queue, namespace, mount or kernel calls)"),
                probe=_probe, settings=_settings, apply=_apply)
