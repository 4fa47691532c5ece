"""Canaries: programs that try to get past the sandbox (reach the network, read a token, leave something behind
for the next run) and whether it stopped them. `gate doctor` runs every one on this machine; the sandbox's tests
run them on the sandbox they test. Each runs as a case's code would, and reports on the run's result channel.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec

from gate.sandbox.base import RESULT_FD_ENV, Limits, RunRequest, Sandbox

LIMITS = Limits(wall_s=20.0, cpu_s=10.0, processes=16)
FORK_FLOOD = 200  # forks a canary attempts; a sandbox without a process limit lets them all through
REPORT = ("import os, sys\ndef report(text):\n"
           f"    os.write(int(os.environ[{RESULT_FD_ENV!r}]), str(text).encode())\n")
NETWORK = """import socket
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5).sendall(b"canary")
    report("connected")
except OSError as exc:
    report(f"{type(exc).__name__}: {exc.strerror or exc}")
"""
# Look for a token in every environment a run can read: its own, and /proc/<pid>/environ of any process.
SECRET = """found = [repr(dict(os.environ))]
for pid in ["self", str(os.getppid()), "1", *sys.argv[1:], *(p for p in os.listdir("/proc") if p.isdigit())]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            found.append(environ.read().decode(errors="replace"))
    except OSError:
        pass
report("\\n".join(found))
"""
READ = """try:
    report(open(sys.argv[1]).read())
except OSError as exc:
    report(f"{type(exc).__name__}: {exc.strerror}")
"""
WRITE = """try:
    with open(sys.argv[1], "w") as planted:
        planted.write("canary")
    report("written")
except OSError as exc:
    report(f"{type(exc).__name__}: {exc.strerror}")
"""
SHARED_MEMORY = """import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
segment = libc.shmget(int(sys.argv[1]), 4096, 0o1666 if sys.argv[2] == "make" else 0)
if segment < 0:
    report(f"no segment: {os.strerror(ctypes.get_errno())}")
elif sys.argv[2] == "make":
    ctypes.memmove(libc.shmat(segment, None, 0), b"canary", 6)
    report("made")
else:
    report(ctypes.string_at(libc.shmat(segment, None, 0), 6).decode(errors="replace"))
"""
DAEMON = """import signal, time
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        os.write(w, str(os.getpid()).encode())
        os.close(w)
        while True:
            time.sleep(1)
    os._exit(0)
os.close(w)
report(os.read(r, 32).decode())
"""
FORKS = """import time
made = 0
for _ in range(int(sys.argv[1])):
    try:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        made += 1
    except OSError:
        break
report(made)
"""

# Store a key (argv[1]: "store") in the session, user and user-session keyrings, or look for it ("read").
KEYRING = """import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
number = {"x86_64": (248, 250), "aarch64": (217, 219)}.get(os.uname().machine)
if number is None:
    report("unknown architecture")
    sys.exit()
add_key, keyctl = number
said = []
for ring in (-3, -4, -5):
    if sys.argv[1] == "store":
        data = sys.argv[3].encode()
        key = libc.syscall(add_key, b"user", sys.argv[2].encode(), data, len(data), ctypes.c_long(ring))
    else:
        key = libc.syscall(keyctl, 10, ctypes.c_long(ring), b"user", sys.argv[2].encode(), 0)  # KEYCTL_SEARCH
        if key >= 0:
            buffer = ctypes.create_string_buffer(256)
            size = libc.syscall(keyctl, 11, ctypes.c_long(key), buffer, 256)  # KEYCTL_READ
            said.append(buffer.raw[:max(size, 0)].decode(errors="replace"))
            continue
    said.append("stored" if key >= 0 else os.strerror(ctypes.get_errno()))
report(", ".join(said))
"""


class Canary(msgspec.Struct, frozen=True):
    """One attempt and its outcome; `tried` is False when the program could not even make the attempt (no
    daemon started, no segment made), which leaves nothing to block."""

    name: str
    blocked: bool
    detail: str
    tried: bool = True


def _run(sandbox: Sandbox, code: str, *args: str, loopback: bool = False) -> str:
    files = {"canary.py": (REPORT + code).encode()}
    result = sandbox.run(RunRequest(script="canary.py", args=args, files=files, limits=LIMITS, loopback=loopback))
    return (result.result or b"").decode(errors="replace")


@contextlib.contextmanager
def _planted() -> Iterator[tuple[Path, str]]:
    """A world-readable fake checkout with a token in .git/config, and a world-writable directory beside it.
    """
    token = "ghp_" + secrets.token_hex(16)
    root = Path(tempfile.mkdtemp(prefix="gate-doctor-"))
    try:
        (root / ".git").mkdir()
        (root / ".git" / "config").write_text(f'[http]\n\textraheader = "AUTHORIZATION: basic {token}"\n')
        (root / "open").mkdir()
        root.chmod(0o755)
        (root / ".git").chmod(0o755)
        (root / ".git" / "config").chmod(0o644)
        (root / "open").chmod(0o777)
        yield root, token
    finally:
        shutil.rmtree(root)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def network(sandbox: Sandbox, loopback: bool = False) -> Canary:
    """Connect to a port the gate listens on, on 127.0.0.1 (from a suite's run, with its own loopback)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.setblocking(False)
        said = _run(sandbox, NETWORK, str(listener.getsockname()[1]), loopback=loopback)
        try:
            listener.accept()[0].close()
            reached = True
        except BlockingIOError:
            reached = False
    return Canary("suite network" if loopback else "network", not reached and said != "connected",
                  f"connect to the gate's 127.0.0.1: {said}")


@contextlib.contextmanager
def _token_holder(token: str) -> Iterator[int]:
    """A process of the gate's user that got the token in its environment when it started, as the gate gets
    GITHUB_TOKEN (a variable set later, with os.environ, never shows in /proc/<pid>/environ)."""
    holder = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE,
                              env={**os.environ, "GATE_DOCTOR_SECRET": token})
    try:
        yield holder.pid
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait()


def secret(sandbox: Sandbox, token: str) -> Canary:
    """Find the token: the run's own environment (inherited?), /proc/<pid>/environ of its parent, of pid 1, of
    the gate, of a process of the gate's user started with it, and of every process."""
    with _token_holder(token) as holder:
        found = token in _run(sandbox, SECRET, str(os.getpid()), str(holder))
    return Canary("secret", not found, "token seen in an environment" if found
                  else "not in its environment, nor in any /proc/*/environ it can read")


def planted_file(sandbox: Sandbox) -> list[Canary]:
    """Read a token from a world-readable .git/config outside the working directory; write beside it."""
    with _planted() as (root, token):
        said = _run(sandbox, READ, str(root / ".git" / "config"))
        read = Canary("read outside", token not in said, "read the token" if token in said else said)
        said = _run(sandbox, WRITE, str(root / "open" / "planted"))
        wrote = (root / "open" / "planted").exists()
        write = Canary("write outside", not wrote, "wrote into a world-writable directory" if wrote else said)
    return [read, write]


@contextlib.contextmanager
def _home_file() -> Iterator[tuple[Path, str]]:
    """A world-readable file in a home directory (a runner's notes, a tool's settings, its diagnostics)."""
    token = "ghp_" + secrets.token_hex(16)
    homes = Path("/home")
    home = Path(tempfile.mkdtemp(prefix="gate-doctor-", dir=homes if os.access(homes, os.W_OK) else None))
    try:
        home.chmod(0o755)
        planted = home / ".gate-doctor-notes"
        planted.write_text(f"token={token}\n")
        planted.chmod(0o644)
        yield planted, token
    finally:
        shutil.rmtree(home)


def home_file(sandbox: Sandbox) -> Canary:
    """Read a world-readable file planted in a home directory (the host's files beyond the run's allow-list).
    """
    with _home_file() as (planted, token):
        said = _run(sandbox, READ, str(planted))
    return Canary("home file", token not in said, f"read {planted}" if token in said else said)


def shared_memory(sandbox: Sandbox) -> Canary:
    """Leave a System V shared memory segment behind, then look for it from the next run."""
    key = str(secrets.randbelow(1 << 30) + 1)
    made = _run(sandbox, SHARED_MEMORY, key, "make")
    seen = _run(sandbox, SHARED_MEMORY, key, "read")
    left = any(line.split()[0] == key for line in _sysv_segments())
    if left:
        subprocess.run(["ipcrm", "-M", key], capture_output=True, check=False)
    blocked = seen != "canary" and not left
    detail = (f"the next run read it ({made})" if seen == "canary" else "it outlived its run" if left
              else f"gone after its run ({seen})")
    return Canary("shared memory", blocked, detail, tried=made == "made")


def _sysv_segments() -> list[str]:
    try:
        return Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    except OSError:
        return []


def daemon(sandbox: Sandbox) -> Canary:
    """Leave a double-forked, setsid() daemon behind."""
    said = _run(sandbox, DAEMON)
    if not said.isdigit():
        return Canary("daemon", True, f"could not start one ({said or 'no report'})", tried=False)
    pid = int(said)
    for _ in range(100):  # a killed process may take a moment to be gone
        if not _alive(pid):
            return Canary("daemon", True, f"pid {pid} is gone after the run")
        time.sleep(0.05)
    return Canary("daemon", False, f"pid {pid} outlived its run")


def fork_flood(sandbox: Sandbox) -> Canary:
    """Fork up to FORK_FLOOD processes."""
    said = _run(sandbox, FORKS, str(FORK_FLOOD))
    made = int(said) if said.isdigit() else 0
    return Canary("fork flood", made < FORK_FLOOD, f"{made} of {FORK_FLOOD} forks succeeded "
                  f"(process limit {LIMITS.processes})")


def keyring(sandbox: Sandbox) -> Canary:
    """Store a key in the kernel keyrings a run can name (session, user, user session), then look for it from
    the next run: a uid's keyring outlives its runs and the gate."""
    name, token = f"gate-doctor-{secrets.token_hex(8)}", secrets.token_hex(16)
    stored = _run(sandbox, KEYRING, "store", name, token)
    seen = _run(sandbox, KEYRING, "read", name)
    kept = "stored" in stored.split(", ")
    detail = (f"the next run read it ({stored})" if token in seen else f"a key outlived its run ({stored})" if kept
              else f"no key stored ({stored})")
    return Canary("keyring", token not in seen and not kept, detail)


def canaries(sandbox: Sandbox, token: str) -> list[Canary]:
    """Every canary, in order."""
    checks: list[Callable[[], Canary | list[Canary]]] = [
        lambda: network(sandbox), lambda: network(sandbox, loopback=True), lambda: secret(sandbox, token),
        lambda: planted_file(sandbox), lambda: home_file(sandbox), lambda: shared_memory(sandbox),
        lambda: keyring(sandbox), lambda: daemon(sandbox), lambda: fork_flood(sandbox)]
    found: list[Canary] = []
    for check in checks:
        outcome = check()
        found.extend(outcome if isinstance(outcome, list) else [outcome])
    return found
