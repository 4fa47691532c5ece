"""Bot commits that fight the limits through `gate check`: ignore signals, leave daemons behind, flood output,
exhaust memory (a shared mmap too), disk and processes, or reach the network (TCP and UDP to a loopback
listener, a Unix socket on the filesystem, an abstract Unix socket). Each add(a, b) returns the right answer
only if the attack worked, so a pass would mean a hole; the gate survives, leaves nothing, and scores the next
change."""

from __future__ import annotations

import contextlib
import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.redteam_support import (
    POLICY,
    ROOT,
    assert_not_passed,
    bot_repo,
    check,
    healthy_after,
    needs_root,
    new_marker,
)

# Short walls: a run that hangs costs this long, once per case.
FAST_POLICY = POLICY + "limits: {timeout: 2.0, cpu: 2.0, processes: 16, disk_mb: 16, file_size_mb: 4}\n"

# Start a process that outlives its parent and carries MARKER in its command line (for the leftover check).
SPAWN = """
import os, signal

def _spawn():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
            os.execv("/usr/bin/python3", ["python3", "-c", "import time\\nwhile True: time.sleep(1)", "MARKER"])
        os._exit(0)
"""
ATTACKS = {
    "daemon left behind": SPAWN + "\ndef add(a, b):\n    _spawn()\n    return a - b\n",
    "daemon, then exit 0": SPAWN + "\ndef add(a, b):\n    _spawn()\n    os._exit(0)\n",
    "ignores every signal it can and spins": (
        "import signal\n\ndef add(a, b):\n"
        "    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU, signal.SIGALRM):\n"
        "        signal.signal(sig, signal.SIG_IGN)\n    while True:\n        pass\n"),
    "sleeps forever": "import time\n\ndef add(a, b):\n    time.sleep(3600)\n    return a + b\n",
    "stdout flood": "import sys\n\ndef add(a, b):\n    sys.stdout.write('x' * (64 << 20))\n    return a + b\n",
    "stderr flood": "import sys\n\ndef add(a, b):\n    sys.stderr.write('x' * (64 << 20))\n    return a + b\n",
    "memory hog": (
        "def add(a, b):\n    hog = bytearray(4 << 30)\n    hog[::4096] = b'x' * len(hog[::4096])\n    return a + b\n"),
    "shared anonymous mmap": (
        "import mmap\n\ndef add(a, b):\n    m = mmap.mmap(-1, 2 << 30, flags=mmap.MAP_SHARED)\n"
        "    for i in range(0, len(m), 4096):\n        m[i] = 1\n    return a + b\n"),
    "disk filler": (
        "import os\n\ndef add(a, b):\n    for where in ('.', '/tmp', '/var/tmp', '/dev/shm'):\n"
        "        for n in range(8):\n"
        "            with open(os.path.join(where, f'fill{n}'), 'wb') as f:\n"
        "                for _ in range(64):\n                    f.write(b'x' * (1 << 20))\n    return a + b\n"),
    "fork flood": SPAWN + (
        "\ndef add(a, b):\n    for _ in range(64):\n        if os.fork() == 0:\n"
        "            os.execv('/usr/bin/python3', ['python3', '-c', 'import time; time.sleep(600)', 'MARKER'])\n"
        "    return a + b\n"),
    "file descriptor hog": (
        "def add(a, b):\n    held = [open('/dev/null') for _ in range(100000)]\n    return a + b\n"),
}


@pytest.mark.slow
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_resource_attack_fails_and_leaves_nothing(tmp_path: Path, attack: str) -> None:
    marker = new_marker()
    repo = bot_repo(tmp_path / "repo", ATTACKS[attack].replace("MARKER", marker), policy=FAST_POLICY)
    run = check(repo, tmp_path)
    assert_not_passed(run, "adds", "hidden case 1")
    healthy_after(run, repo, tmp_path, marker)


@contextlib.contextmanager
def listeners(tmp_path: Path) -> Iterator[dict[str, socket.socket]]:
    """Open listeners the code could reach if it had a network or a way out: TCP and UDP on loopback, a
    world-writable Unix socket on the filesystem (under /run when root can put one there), and an abstract
    Unix socket."""
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    folder = Path("/run") if ROOT and os.access("/run", os.W_OK) else tmp_path
    path = folder / f"gate-redteam-{uuid.uuid4().hex}.sock"
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(str(path))
    path.chmod(0o777)
    unix.listen(8)
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind(f"\0gate-redteam-{uuid.uuid4().hex}")
    abstract.listen(8)
    found = {"tcp": tcp, "udp": udp, "unix": unix, "abstract": abstract}
    try:
        yield found
    finally:
        for sock in found.values():
            sock.close()
        path.unlink()


NETWORK = '''
import socket

def _reach():
    reached = []
    attempts = [(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", {tcp})),
                (socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", {udp})),
                (socket.AF_UNIX, socket.SOCK_STREAM, {unix!r}),
                (socket.AF_UNIX, socket.SOCK_STREAM, {abstract!r}),
                (socket.AF_INET, socket.SOCK_STREAM, ("1.1.1.1", 53))]
    for family, kind, address in attempts:
        try:
            with socket.socket(family, kind) as s:
                s.settimeout(1)
                s.connect(address)
                s.send(b"stolen")
                reached.append(str(address))
        except OSError:
            pass
    return reached


def add(a, b):
    reached = _reach()
    if reached:
        raise ValueError(" ".join(reached)[:70])
    return a - b
'''


@needs_root
@pytest.mark.slow
def test_the_network_and_local_sockets_are_out_of_reach(tmp_path: Path) -> None:
    with listeners(tmp_path) as open_:
        code = NETWORK.format(tcp=open_["tcp"].getsockname()[1], udp=open_["udp"].getsockname()[1],
                              unix=open_["unix"].getsockname(), abstract=open_["abstract"].getsockname())
        repo = bot_repo(tmp_path / "repo", code)
        run = check(repo, tmp_path)
        assert_not_passed(run, "adds", "hidden case 1")
        assert run.case("adds")["detail"] == "expected int 5, got int -1", run.case("adds")
        for name, sock in open_.items():
            sock.setblocking(False)
            with pytest.raises(BlockingIOError):
                sock.recv(16) if name == "udp" else sock.accept()
    healthy_after(run, repo, tmp_path)
