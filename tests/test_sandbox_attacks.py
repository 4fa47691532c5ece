"""Hostile programs against the sandbox. After each one: the gate (this process) is unharmed, nothing of the
run
is left (process, directory, cgroup, mount), and the next honest run works. No timing assertions: walls are
generous and only decide how long a hostile program may last, never whether a test passes."""

from __future__ import annotations

import ast
import concurrent.futures
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec
import pytest

from gate.sandbox import canaries, detect, open_sandbox, registry, served
from gate.sandbox.base import Limits, RunRequest
from gate.sandbox.canaries import DAEMON, REPORT
from gate.sandbox.runner import LayeredSandbox
from tests.sandbox_support import SERVE

LIMITS = Limits(wall_s=20.0, cpu_s=10.0, memory_bytes=256 * 1024 * 1024, output_bytes=64 * 1024, processes=16,
                open_files=32, file_size_bytes=1024 * 1024, disk_bytes=8 * 1024 * 1024)
SECRET = "ghp_sandboxCanaryToken0123456789"
ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="needs root: uid switch and mount namespace")

SANDBOX_BACKENDS = ("zygote", "fresh-interpreter")
# A secret in the gate's own environment before the sandbox starts: no run may be able to read it.
SANDBOX_ENVIRON = {"GATE_TEST_SECRET": SECRET}


@pytest.fixture(autouse=True)
def gate_stays_healthy(sandbox: LayeredSandbox) -> Iterator[None]:
    mounts_before = Path("/proc/self/mountinfo").read_text()
    yield
    assert settled(lambda: not sandbox.leftovers()), sandbox.leftovers()
    assert Path("/proc/self/mountinfo").read_text() == mounts_before
    honest = sandbox.run(hostile("print('still fine')"))
    assert (honest.exit_code, honest.stdout) == (0, b"still fine\n")


def hostile(code: str, *args: str, limits: Limits = LIMITS) -> RunRequest:
    """A run of `code` (dedented; `os`, `sys` and `report` are there already)."""
    files = {"main.py": (REPORT + textwrap.dedent(code)).encode()}
    return RunRequest(script="main.py", args=args, files=files, limits=limits)


def settled(condition: Callable[[], bool]) -> bool:
    """Whether `condition` holds, allowing a SIGKILLed process a while to finish dying (not a timing check:
    the bound is only there so that a real leak fails instead of hanging)."""
    for _ in range(200):
        if condition():
            return True
        time.sleep(0.05)
    return False


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie waiting for its reaper counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_exit_zero_early_reports_nothing(sandbox: LayeredSandbox) -> None:
    result = sandbox.run(hostile("os._exit(0)\nreport('never')"))
    assert (result.exit_code, result.result) == (0, None)


def test_ignoring_sigterm_in_an_endless_loop_hits_the_wall(sandbox: LayeredSandbox) -> None:
    code = "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True:\n    pass"
    result = sandbox.run(hostile(code, limits=Limits(wall_s=2.0, cpu_s=60.0)))
    assert result.timed_out
    assert result.killed_reason == "wall timeout"
    assert result.exit_code is None


def test_sleeping_forever_hits_the_wall(sandbox: LayeredSandbox) -> None:
    result = sandbox.run(hostile("import time\ntime.sleep(10_000)", limits=Limits(wall_s=1.0)))
    assert result.timed_out


def test_busy_loop_hits_the_cpu_limit(sandbox: LayeredSandbox) -> None:
    result = sandbox.run(hostile("while True:\n    pass", limits=Limits(wall_s=120.0, cpu_s=1.0)))
    assert not result.timed_out
    assert result.killed_reason == "cpu limit"
    assert result.signal in (signal.SIGXCPU, signal.SIGKILL)


def test_fork_bomb_is_contained(sandbox: LayeredSandbox) -> None:
    code = ("import time\nn = 0\nwhile True:\n    try:\n        os.fork()\n        n += 1\n"
            "    except OSError:\n        time.sleep(0.01)\n")
    result = sandbox.run(hostile(code, limits=Limits(wall_s=3.0, processes=16)))
    assert result.timed_out


def test_double_fork_daemon_does_not_outlive_its_run(sandbox: LayeredSandbox) -> None:
    daemon = canaries.daemon(sandbox)
    assert (daemon.blocked, daemon.tried) == (True, True), daemon


def test_daemon_holding_stdout_open_does_not_hang_the_run(sandbox: LayeredSandbox) -> None:
    code = "import time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(10_000)\nprint('leader done')\n"
    result = sandbox.run(hostile(code))
    assert (result.exit_code, result.stdout, result.timed_out) == (0, b"leader done\n", False)


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_output_flood_is_cut_and_killed(sandbox: LayeredSandbox, stream: str) -> None:
    result = sandbox.run(hostile(f"while True:\n    sys.{stream}.write('x' * 4096)"))
    assert result.output_truncated
    assert result.killed_reason == "output limit"
    assert len(result.stdout) + len(result.stderr) <= LIMITS.output_bytes


def test_result_channel_flood_is_cut_and_killed(sandbox: LayeredSandbox) -> None:
    result = sandbox.run(hostile("while True:\n    report('r' * 4096)"))
    assert result.killed_reason == "output limit"
    assert result.result is not None
    assert len(result.result) <= LIMITS.output_bytes


def test_memory_hog_fails(sandbox: LayeredSandbox) -> None:
    result = sandbox.run(hostile("data = bytearray(1024 * 1024 * 1024)\nreport('allocated')"))
    assert result.exit_code != 0
    assert result.result is None


def test_shared_anonymous_mmap_hog_fails(sandbox: LayeredSandbox) -> None:
    code = ("import mmap\nm = mmap.mmap(-1, 1024 * 1024 * 1024, flags=mmap.MAP_SHARED)\n"
            "for i in range(0, len(m), 4096):\n    m[i] = 1\nreport('touched')")
    result = sandbox.run(hostile(code))
    assert result.result is None


def test_big_file_is_refused(sandbox: LayeredSandbox) -> None:
    code = "with open('big', 'wb') as f:\n    f.write(b'x' * (4 * 1024 * 1024))\nreport('written')"
    result = sandbox.run(hostile(code))
    assert result.result is None
    assert b"File too large" in result.stderr


@needs_root
def test_disk_filler_is_bounded_and_leaves_nothing(sandbox: LayeredSandbox) -> None:
    marker = f"gate-fill-{os.getpid()}-{id(sandbox)}"
    code = """
        written = 0
        try:
            for i in range(10_000):
                for where in ('.', '/tmp', '/var/tmp', '/dev/shm'):
                    with open(f'{where}/{sys.argv[1]}-{i}', 'wb') as f:
                        f.write(b'x' * 512 * 1024)
                    written += 1
        except OSError as exc:
            report(f'{written} {exc.errno}')
    """
    result = sandbox.run(hostile(code, marker))
    assert result.result is not None
    written = int(result.result.split()[0])
    assert written * 512 * 1024 <= LIMITS.disk_bytes
    for where in ("/tmp", "/var/tmp", "/dev/shm"):
        assert not [name for name in os.listdir(where) if name.startswith(marker)]


def test_too_many_open_files_fails_in_the_program_only(sandbox: LayeredSandbox) -> None:
    code = """
        files = []
        try:
            while True:
                files.append(open('main.py'))
        except OSError:
            report(len(files))
    """
    result = sandbox.run(hostile(code))
    assert result.result is not None
    assert int(result.result) < LIMITS.open_files


def test_network_cannot_reach_a_loopback_listener(sandbox: LayeredSandbox) -> None:
    network = canaries.network(sandbox)
    assert network.blocked, network


def test_secret_in_the_gate_environment_is_unreachable(sandbox: LayeredSandbox) -> None:
    # The secret is in this process's environment from before the sandbox started (SANDBOX_ENVIRON) and in a
    # process of the gate's user started with it: /proc/<pid>/environ shows only what a process started with.
    secret = canaries.secret(sandbox, SECRET)
    assert secret.blocked, secret


def test_peer_cannot_read_the_served_lead(sandbox: LayeredSandbox) -> None:
    # The served lead holds the expected value in its memory and a file; the peer (the candidate) knows the
    # lead's pid and tries every way in.
    lead = SERVE + textwrap.dedent("""
        expected = 'EXPECTED-' + 'VALUE-7f3a'
        open('expected.txt', 'w').write(expected)
        def answer(peer):
            peer.sendall(f'{os.getpid()}\\n'.encode())
            return peer.makefile('rb').readline().strip() or b'nothing'
        serve(answer, retire=True)
    """)
    peer = """
        import ctypes, socket
        channel = socket.socket(fileno=int(os.environ['GATE_PEER_FD']))
        pid = channel.makefile().readline().strip()
        seen = []
        for path in ('environ', 'cmdline', 'cwd/expected.txt', 'root/tmp/work/expected.txt', 'mem', 'maps'):
            try:
                with open(f'/proc/{pid}/{path}', 'rb') as f:
                    seen.append(f.read(100000).decode(errors='replace'))
            except OSError as exc:
                seen.append(type(exc).__name__)
        libc = ctypes.CDLL(None, use_errno=True)
        seen.append(f'ptrace={libc.ptrace(16, int(pid), 0, 0)}')  # PTRACE_ATTACH
        channel.sendall(('|'.join(seen).replace('\\n', ' ') + '\\n').encode())
    """
    lead_result, peer_result = sandbox.run_served(RunRequest(script="main.py", files={"main.py": lead.encode()},
                                                             limits=LIMITS), b"", hostile(peer))
    assert lead_result.result is not None, (lead_result, peer_result)
    assert b"EXPECTED-VALUE" not in lead_result.result
    assert b"ptrace=-1" in lead_result.result, lead_result.result


@needs_root
def test_a_process_that_got_the_pid_of_a_collected_run_is_never_signalled(sandbox: LayeredSandbox) -> None:
    # A served lead answers, says it keeps serving, and dies while idle; the next call finds it dead and ends
    # it. Its reaper collected it long before, so its pid is free: here a process of root's, in a session of
    # its own (as the runner's agent would be), has it by then. Ending the dead run must not touch it.
    lead = textwrap.dedent(f"""
        import os, signal, socket, struct
        length = struct.Struct("!Q")
        control = socket.socket(fileno=int(os.environ['GATE_PEER_FD']))
        _, fds, _, _ = socket.recv_fds(control, length.size, 1)
        with socket.socket(fileno=fds[0]) as peer:
            idle = peer.makefile('rb').readline().strip() == b'idle'
        reply = ({served.KEEP!r} if idle else {served.RETIRE!r}) + str(os.getpid()).encode()
        control.sendall(length.pack(len(reply)) + reply)
        if idle:  # says it keeps serving, then SIGALRM ends it while it is idle
            signal.setitimer(signal.ITIMER_REAL, 0.1)
            signal.pause()
    """)
    request = RunRequest(script="main.py", files={"main.py": lead.encode()}, limits=LIMITS)

    def call(word: str) -> int:
        peer = f"import socket\nsocket.socket(fileno=int(os.environ['GATE_PEER_FD'])).sendall(b'{word}\\n')"
        result, _ = sandbox.run_served(request, b"", hostile(peer))
        assert result.result is not None, result
        return int(result.result)

    pid = call("idle")
    assert settled(lambda: not os.path.exists(f"/proc/{pid}"))
    bystander = _started_at(pid)
    try:
        assert call("retire") != pid  # (the dead one ended, another answered and retired)
        assert bystander.poll() is None, "the gate killed a process that was never its run's"
    finally:
        bystander.kill()
        bystander.wait()


def _started_at(pid: int) -> subprocess.Popen[bytes]:
    """A process of this uid in a session of its own, started at `pid` (free) by setting the last pid the
    kernel gave out; skips when other processes keep taking it first."""
    for _ in range(100):
        Path("/proc/sys/kernel/ns_last_pid").write_text(str(pid - 1))
        process = subprocess.Popen(["sleep", "60"], start_new_session=True)
        if process.pid == pid:
            return process
        process.kill()
        process.wait()
    pytest.skip(f"pid {pid} kept going to other processes")


@pytest.mark.parametrize("backend", ["zygote", "fresh-interpreter"])
def test_daemon_dies_without_uid_or_cgroup(backend: str) -> None:
    """What a gate without root has (no uid switch, no cgroup): the run's own reaper still finds a
    double-forked, setsid() daemon, as an orphan, and kills it."""
    full = detect.layers(prefer_zygote=True)
    if full.cgroups:
        full.cgroups.close()
    layers = msgspec.structs.replace(full, uids=None, cgroups=None)
    box = LayeredSandbox(registry.BACKENDS[backend](layers), layers)
    try:
        daemon = canaries.daemon(box)
        assert (daemon.blocked, daemon.tried) == (True, True), daemon
        assert box.run(hostile("print('next')")).stdout == b"next\n"
    finally:
        box.close()


def test_memory_spread_over_processes_hits_the_cgroup(sandbox: LayeredSandbox) -> None:
    # Each process stays under RLIMIT_AS; together they pass the run's memory limit, which only a cgroup sees.
    code = """
        import select, time
        r, w = os.pipe()  # a child writes one byte once its memory is touched
        for _ in range(4):
            if os.fork() == 0:
                block = bytearray(160 * 1024 * 1024)
                for i in range(0, len(block), 4096):
                    block[i] = 1
                os.write(w, b'1')
                time.sleep(60)
                os._exit(0)
        os.close(w)
        touched = killed = 0
        while touched + killed < 4:  # each child either reports or dies, whichever comes first
            if os.waitpid(-1, os.WNOHANG)[0]:
                killed += 1
            elif select.select([r], [], [], 0.05)[0]:
                touched += len(os.read(r, 4))
        report(killed)
        sys.exit(1 if killed else 0)
    """
    result = sandbox.run(hostile(code))
    if not sandbox.isolation["cgroup"].startswith("on"):
        pytest.skip("no cgroup here: " + sandbox.isolation["cgroup"])
    assert result.exit_code == 1
    assert result.killed_reason == "memory limit"


def test_every_thread_and_process_of_a_run_is_in_its_cgroups(sandbox: LayeredSandbox) -> None:
    # The leader joins by moving its one thread (gate/sandbox/cgroups.py): the threads it starts and what they
    # fork are in the same cgroup of each hierarchy, none left where the zygote is.
    code = """
        import json, threading
        def cgroups(path):
            with open(path) as listed:
                return sorted(line.split(":", 2)[1:] for line in listed.read().splitlines())
        seen = {"leader": cgroups("/proc/thread-self/cgroup")}
        def work(name):
            seen[name] = cgroups("/proc/thread-self/cgroup")
            r, w = os.pipe()
            if os.fork() == 0:
                os.write(w, json.dumps(cgroups("/proc/self/cgroup")).encode())
                os._exit(0)
            os.close(w)
            seen[name + "'s child"] = json.loads(os.read(r, 65536))
            os.wait()
        threads = [threading.Thread(target=work, args=(f"thread {n}",)) for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        report(json.dumps(seen))
    """
    result = sandbox.run(hostile(code))
    if not sandbox.isolation["cgroup"].startswith("on"):
        pytest.skip("no cgroup here: " + sandbox.isolation["cgroup"])
    seen = json.loads(result.result or b"{}")
    assert len(seen) == 5 and all(where == seen["leader"] for where in seen.values()), seen
    # Each hierarchy the layer uses ("on (v1 memory+pids, v2 kill)") puts the run in a uid's cgroup of its own.
    used = sandbox.isolation["cgroup"].removeprefix("on (").removesuffix(")").split(", ")
    wanted = {c for part in used if part.startswith("v1 ") for c in part[3:].split("+")}
    wanted |= {""} if any(part.startswith("v2") for part in used) else set()
    placed = {c: path for controllers, path in seen["leader"] for c in controllers.split(",")}  # ("" for v2)
    assert wanted and all("/gate-sandbox-" in placed[c] and "/uid-" in placed[c] for c in wanted), placed


@needs_root
@pytest.mark.parametrize("backend", ["zygote", "fresh-interpreter"])
def test_network_namespace_alone_blocks_loopback(backend: str) -> None:
    """Without the seccomp layer (a machine without the library), the network namespace still keeps a run
    from a listener on the gate's 127.0.0.1."""
    full = detect.layers(prefer_zygote=True)
    layers = msgspec.structs.replace(full, on=tuple(name for name in full.on if name != "seccomp"))
    box = LayeredSandbox(registry.BACKENDS[backend](layers), layers)
    try:
        network = canaries.network(box)
        assert network.blocked, network
    finally:
        box.close()


GATE_THAT_DIES = """
import sys
from gate.sandbox import open_sandbox
from gate.sandbox.base import Limits, RunRequest
box = open_sandbox(Limits(wall_s=600, cpu_s=600), prefer_zygote=sys.argv[1] == "zygote")
print("open", flush=True)
box.run(RunRequest(script="main.py", files={"main.py": sys.argv[2].encode()}, limits=Limits(wall_s=600)))
"""


@needs_root
@pytest.mark.parametrize("backend", ["zygote", "fresh-interpreter"])
def test_a_killed_gate_leaves_no_run_behind(backend: str) -> None:
    """SIGKILL the gate in the middle of a run (a cancelled CI job): the run's processes, the daemon among
    them, die with it, and the next gate removes the directories and cgroups it left."""
    program = textwrap.dedent(DAEMON).replace("report(", "print(") + "import time\ntime.sleep(600)\n"
    gate = subprocess.Popen([sys.executable, "-c", GATE_THAT_DIES, backend, REPORT + program],
                            stdout=subprocess.PIPE, text=True)
    assert gate.stdout is not None
    assert gate.stdout.readline() == "open\n"
    if not Path("/sys/fs/cgroup/pids").is_dir():
        gate.kill()
        gate.wait()
        pytest.skip("no pids cgroup to watch the run through")

    def run_pids() -> list[int]:
        procs = Path("/sys/fs/cgroup/pids").glob(f"gate-sandbox-{gate.pid}-*/uid-*/cgroup.procs")
        return [int(pid) for path in procs for pid in path.read_text().split()]

    assert settled(lambda: len(run_pids()) >= 2)  # the leader and the daemon
    run = run_pids()
    gate.kill()
    gate.wait()
    assert settled(lambda: not any(alive(pid) for pid in run))
    open_sandbox(LIMITS).close()  # the next gate cleans up after the dead one
    assert not list(Path("/sys/fs/cgroup/pids").glob(f"gate-sandbox-{gate.pid}-*"))
    assert not list(Path("/dev/shm").glob(f"gate-sandbox-{gate.pid}-*"))


@needs_root
def test_the_gates_checkout_is_hidden(sandbox: LayeredSandbox) -> None:
    """The gate's working directory (on GitHub, the checkout whose .git/config may hold a token) is not in a
    run's root, even where its files are world-readable (and even where it holds the gate's own package)."""
    readable = next(p for p in (Path.cwd() / name for name in ("pyproject.toml", "README.md")) if p.is_file())
    if readable.stat().st_mode & 0o004 == 0 or not sandbox.layers.mountns:
        pytest.skip("the working directory here is not world-readable, or there is no mount namespace")
    code = """
        try:
            report(open(sys.argv[1]).read()[:20])
        except OSError as exc:
            report(type(exc).__name__)
    """
    result = sandbox.run(hostile(code, str(readable)))
    assert result.result == b"FileNotFoundError"


def test_links_in_the_tree_never_redirect_the_gates_own_files(sandbox: LayeredSandbox, tmp_path: Path) -> None:
    # The tree under test is the candidate's: a committed link named like a file the gate adds (a harness
    # file, its __pycache__ directory) must not make the gate, writing as root, write through it.
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    outside = tmp_path / "outside"
    outside.mkdir()
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "main.py").symlink_to(victim)
    (tree / "__pycache__").symlink_to(outside)
    (tree / "lib").write_text("a file where the gate needs a directory")
    (tree / "data.txt").mkdir()  # a directory where the gate writes a file
    (tree / "data.txt" / "inner").write_text("")
    files = {"main.py": b"print(open('data.txt').read(), open('lib/x.txt').read())",
             "__pycache__/helper.pyc": b"not python", "lib/x.txt": b"own", "data.txt": b"the gate's"}
    result = sandbox.run(RunRequest(script="main.py", files=files, tree=tree, limits=LIMITS))
    assert result.stdout == b"the gate's own\n", result.stderr
    assert victim.read_text() == "untouched"
    assert list(outside.iterdir()) == []
    assert (tree / "main.py").is_symlink()  # the gate works on a copy of the tree


def test_a_program_that_signals_itself_sigxcpu_did_not_hit_the_cpu_limit(sandbox: LayeredSandbox) -> None:
    result = sandbox.run(hostile("import signal\nos.kill(os.getpid(), signal.SIGXCPU)"))
    assert result.signal == signal.SIGXCPU
    assert result.killed_reason != "cpu limit"


@needs_root
def test_names_planted_in_a_shared_temporary_directory_are_left_alone(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # Opening a sandbox removes what a killed gate left (gate-sandbox-<dead pid>-...) in /dev/shm and $TMPDIR,
    # which anyone can write: what another user planted there under that name is neither followed, nor
    # removed, nor a reason to change the directory's mode or to fail.
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    dead = subprocess.Popen([sys.executable, "-c", ""])
    dead.wait()
    prefix = f"gate-sandbox-{dead.pid}-"
    target = tmp_path / "target"
    target.mkdir()
    (shared / f"{prefix}link").symlink_to(target)
    (shared / f"{prefix}file").write_text("planted")
    theirs = shared / f"{prefix}theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    ours = shared / f"{prefix}ours"  # what a killed gate of ours left, a locked directory inside
    (ours / "locked").mkdir(parents=True)
    (ours / "locked" / "x").write_text("")
    (ours / "locked").chmod(0)
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    box = open_sandbox(LIMITS)
    box.close()
    assert sorted(p.name for p in shared.iterdir()) == [f"{prefix}file", f"{prefix}link", f"{prefix}theirs"]
    assert shared.stat().st_mode & 0o7777 == 0o1777
    assert target.stat().st_mode & 0o777 == 0o755 and list(target.iterdir()) == []


# A repository's suite runs with its own loopback (RunRequest.loopback): its tests serve and connect on 127.0.0.1
# as in CI, inside the run and nowhere else: not the gate's 127.0.0.1, not another run's, not beyond.
SERVES_ITSELF = """
    import socket, threading
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        threading.Thread(target=lambda: server.accept()[0].sendall(b"hello"), daemon=True).start()
        with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
            report(client.recv(5).decode())
"""


def _loopback(code: str, *args: str) -> RunRequest:
    return msgspec.structs.replace(hostile(code, *args), loopback=True)


@needs_root
def test_a_suites_run_serves_and_connects_on_its_own_loopback(sandbox: LayeredSandbox) -> None:
    if not sandbox.isolation["cgroup"].startswith("on"):  # (no loopback without a cgroup to hold its buffers)
        pytest.skip("no cgroup here: " + sandbox.isolation["cgroup"])
    assert sandbox.run(_loopback(SERVES_ITSELF)).result == b"hello"
    # Any other run still has no socket at all.
    assert b"PermissionError" in (sandbox.run(hostile(SERVES_ITSELF)).stderr or b"")


@needs_root
def test_a_suites_run_reaches_neither_the_gates_loopback_nor_beyond(sandbox: LayeredSandbox) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.setblocking(False)
        result = sandbox.run(_loopback("""
            import socket
            said = []
            for where in [("127.0.0.1", int(sys.argv[1])), ("192.0.2.1", 80), ("::1", int(sys.argv[1]))]:
                try:
                    socket.create_connection(where, timeout=2).close()
                    said.append("connected")
                except OSError as exc:
                    said.append(type(exc).__name__)
            report(" ".join(said))
        """, str(listener.getsockname()[1])))
        with pytest.raises(BlockingIOError):
            listener.accept()
    assert result.result is not None and b"connected" not in result.result, result.result


@needs_root
def test_a_suites_run_opens_no_socket_beyond_unix_and_internet_ones(sandbox: LayeredSandbox) -> None:
    result = sandbox.run(_loopback("""
        import socket
        said = {}
        for name in ("AF_NETLINK", "AF_PACKET", "AF_UNSPEC", "AF_VSOCK", "AF_ALG"):
            try:
                kind = socket.SOCK_RAW if name == "AF_PACKET" else socket.SOCK_DGRAM
                socket.socket(getattr(socket, name), kind).close()
                said[name] = "opened"
            except OSError as exc:
                said[name] = type(exc).__name__
        # The family in the low 32 bits, a bit above them (the kernel reads an int): refused all the same.
        import ctypes, platform
        number = {"x86_64": 41, "aarch64": 198}.get(platform.machine())  # socket(2)
        if number is not None:  # AF_NETLINK, SOCK_RAW
            fd = ctypes.CDLL(None, use_errno=True).syscall(number, ctypes.c_long((1 << 32) | 16), 3, 0)
            said["high bits"] = "opened" if fd >= 0 else "refused"
        report(repr(said))
    """))
    said = ast.literal_eval((result.result or b"{}").decode())
    assert said and "opened" not in said.values(), said


@needs_root
def test_two_suite_runs_never_reach_each_other(sandbox: LayeredSandbox) -> None:
    # One run listens on a port of its loopback, and on an abstract Unix name, for three seconds; another,
    # started while it does, tries both.
    listening = _loopback("""
        import socket, time
        server = socket.socket()
        server.bind(("127.0.0.1", 47123))
        server.listen(1)
        named = socket.socket(socket.AF_UNIX)
        named.bind("\\0gate-loopback-test")
        named.listen(1)
        report("listening")
        time.sleep(3)
    """)
    trying = _loopback("""
        import socket, time
        time.sleep(1)
        said = []
        for family, where in [(socket.AF_INET, ("127.0.0.1", 47123)), (socket.AF_UNIX, "\\0gate-loopback-test")]:
            with socket.socket(family) as client:
                try:
                    client.connect(where)
                    said.append("connected")
                except OSError as exc:
                    said.append(type(exc).__name__)
        report(" ".join(said))
    """)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        first = pool.submit(sandbox.run, listening)
        second = pool.submit(sandbox.run, trying)
        assert first.result().result == b"listening"
        assert second.result().result == b"ConnectionRefusedError ConnectionRefusedError"


# Two runs of one zygote share its network namespace, and with it the abstract Unix names: a datagram socket made
# by socketpair() (no socket() needed), disconnected from its pair, could bind one or send to one, and a hidden
# case's run hand its arguments to a public case's run going at the same time. Only stream pairs are made.
FREE_DGRAM = """
    import ctypes, socket
    def free_dgram():
        mine, pair = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        unspec = (ctypes.c_ushort * 1)(0)  # struct sockaddr {AF_UNSPEC}
        ctypes.CDLL(None, use_errno=True).connect(mine.fileno(), unspec, 2)
        return mine, pair
"""
DROP_BOX = FREE_DGRAM + """
    try:
        box, keep = free_dgram()
        box.bind("\\0gate-drop-box")
        box.settimeout(6)
        report("got " + box.recv(200).decode())
    except OSError as exc:
        report(type(exc).__name__)
"""
SENDER = FREE_DGRAM + """
    import time
    time.sleep(1.5)
    try:
        out, keep = free_dgram()
        out.sendto(b"hidden-args=[42]", "\\0gate-drop-box")
        report("sent")
    except OSError as exc:
        report(type(exc).__name__)
"""


# An end of a stream pair takes an abstract name (its peer needs none), which another run finds in /proc/net/unix.
NAMED_PAIR = """
    import socket, time
    one, two = socket.socketpair()
    try:
        one.bind("\\0gate-named-pair")
        report("bound")
    except OSError as exc:
        report(type(exc).__name__)
    time.sleep(3)
"""
NAMES_SEEN = """
    import time
    time.sleep(1.5)
    report(" ".join(line.split()[-1] for line in open("/proc/net/unix").read().splitlines()[1:]
                    if line.split()[-1].startswith("@")))
"""


@pytest.mark.slow
def test_two_socketless_runs_never_reach_each_other(sandbox: LayeredSandbox) -> None:
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        box = pool.submit(sandbox.run, hostile(DROP_BOX))
        sender = pool.submit(sandbox.run, hostile(SENDER))
        received, sent = box.result().result, sender.result().result
    assert received is not None and not received.startswith(b"got"), (received, sent)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        named = pool.submit(sandbox.run, hostile(NAMED_PAIR))
        seen = pool.submit(sandbox.run, hostile(NAMES_SEEN))
        assert b"gate-named-pair" not in (seen.result().result or b""), (named.result().result, seen.result().result)
    # A stream pair, which asyncio and multiprocessing make, still works.
    assert sandbox.run(hostile("""
        import socket
        one, two = socket.socketpair()
        one.sendall(b"pair")
        report(two.recv(4).decode())
    """)).result == b"pair"


# A suite's run holds sockets on its loopback, buffers full: their memory is its own (a cgroup v1 charges it only
# once its TCP limit is set), never the machine's TCP memory, which every process shares.
TCP_HOG = """
    import os, socket, time
    for _ in range(int(sys.argv[1])):
        if os.fork() == 0:
            keep = []
            try:
                server = socket.socket()
                server.bind(("127.0.0.1", 0))
                server.listen(64)
                while True:
                    client = socket.socket()
                    client.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 26)
                    client.connect(server.getsockname())
                    accepted, _ = server.accept()
                    accepted.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 26)
                    client.setblocking(False)
                    keep += [client, accepted]
                    for _ in range(64):
                        try:
                            client.send(b"x" * (1 << 20))
                        except BlockingIOError:
                            break
            except OSError:
                pass
            time.sleep(8)
            os._exit(0)
    time.sleep(6)
    report("done")
"""


def _tcp_pages() -> int:
    """The kernel's TCP memory, every network namespace's (pages)."""
    line = next(line for line in Path("/proc/net/sockstat").read_text().splitlines() if line.startswith("TCP:"))
    return int(line.split()[-1])


@pytest.mark.slow
@pytest.mark.xdist_group("machine-tcp-memory")  # (one at a time: what is measured is every process's)
@needs_root
def test_a_suites_tcp_buffers_stay_within_its_memory_limit(sandbox: LayeredSandbox) -> None:
    if not sandbox.isolation["cgroup"].startswith("on"):
        pytest.skip("no cgroup here: " + sandbox.isolation["cgroup"])
    limit = 128 << 20
    limits = msgspec.structs.replace(LIMITS, memory_bytes=limit, processes=32, open_files=64, wall_s=30, cpu_s=20)
    before, peak = _tcp_pages(), [0]
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _tcp_pages())
            time.sleep(0.1)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        sandbox.run(msgspec.structs.replace(hostile(TCP_HOG, "16", limits=limits), loopback=True))
    finally:
        stop.set()
        watcher.join()
    held = (peak[0] - before) * os.sysconf("SC_PAGE_SIZE")
    slack = 16 << 20  # (the rest of the machine's sockets move meanwhile)
    assert held <= limit + slack, f"{held >> 20} MiB of TCP buffers in a run limited to {limit >> 20} MiB"
    assert settled(lambda: _tcp_pages() - before < 1024)
