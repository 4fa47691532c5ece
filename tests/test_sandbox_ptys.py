"""A run's pseudo-terminals (gate/sandbox/namespaces.py, `_own_ptys`): test suites drive programs through one
(`pty`, util-linux's `script`, pexpect), so each run has a devpts instance of its own. Attacked as a run would:
it must see no pty of the host's nor of a run going beside it, hold no more than `PTYS` of them, and leave none
behind."""

from __future__ import annotations

import concurrent.futures
import os
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gate.sandbox.base import Limits, RunRequest
from gate.sandbox.canaries import REPORT
from gate.sandbox.namespaces import PTYS
from gate.sandbox.runner import LayeredSandbox

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: a mount namespace of the run's own")

SANDBOX_BACKENDS = ("zygote", "fresh-interpreter")
LIMITS = Limits(wall_s=20.0, cpu_s=10.0, memory_bytes=256 * 1024 * 1024, output_bytes=64 * 1024, processes=16,
                open_files=64, file_size_bytes=1024 * 1024, disk_bytes=8 * 1024 * 1024)
_IN_USE = Path("/proc/sys/kernel/pty/nr")  # the ptys every devpts instance of the machine holds


def run(code: str) -> RunRequest:
    return RunRequest(script="main.py", files={"main.py": (REPORT + textwrap.dedent(code)).encode()}, limits=LIMITS)


@pytest.fixture
def host_pty() -> Iterator[str]:
    """A pty of the host's, open while the test runs (a developer's terminal, a runner's job): its name."""
    main, secondary = os.openpty()
    try:
        yield os.ttyname(secondary)
    finally:
        os.close(main)
        os.close(secondary)


def test_a_run_drives_a_program_through_a_pty_of_its_own(sandbox: LayeredSandbox) -> None:
    done = sandbox.run(run("""
        import pty
        pid, terminal = pty.fork()
        if pid == 0:
            os.execv(sys.executable, [sys.executable, "-c", "import sys; print(sys.stdout.isatty(), input())"])
        os.write(terminal, b"typed\\n")
        seen = b""
        while b"True typed" not in seen:
            try:
                seen += os.read(terminal, 1024)
            except OSError:
                break
        os.waitpid(pid, 0)
        report(seen.decode().splitlines()[-1])  # (after the terminal's echo of what was typed)
    """))
    assert done.exit_code == 0, done.stderr
    assert done.result == b"True typed"


def test_a_run_starts_a_command_under_script_as_a_suite_does(sandbox: LayeredSandbox) -> None:
    # util-linux's `script` gives the command a terminal: coloredlogs' tests start their CLI this way.
    done = sandbox.run(run("""
        import subprocess
        shown = subprocess.run(["script", "-qec", "test -t 1 && echo on a terminal", "/dev/null"],
                               capture_output=True, text=True)
        report(f"{shown.returncode} {shown.stdout.strip()}")
    """))
    assert done.result == b"0 on a terminal", done.stderr


def test_a_run_sees_no_pty_of_the_hosts(sandbox: LayeredSandbox, host_pty: str) -> None:
    done = sandbox.run(run(f"""
        listed = sorted(os.listdir("/dev/pts"))
        try:
            os.open({host_pty!r}, os.O_RDWR)
            opened = "opened"
        except OSError as exc:
            opened = type(exc).__name__
        report(f"{{listed}} {{opened}}")
    """))
    assert done.result == b"['ptmx'] FileNotFoundError", done.stderr


def test_two_runs_never_see_each_others_ptys(sandbox: LayeredSandbox) -> None:
    # One run opens a pty and writes a line on it for three seconds; another, started while it does, looks for it.
    holding = run("""
        import time
        main, secondary = os.openpty()
        os.write(secondary, b"hidden-args=[42]\\n")
        report(os.ttyname(secondary))
        time.sleep(3)
    """)
    looking = run("""
        import time
        time.sleep(1)
        found = []
        for name in sorted(os.listdir("/dev/pts")):
            try:
                handle = os.open("/dev/pts/" + name, os.O_RDWR | os.O_NONBLOCK)
                found.append(name + ":" + os.read(handle, 100).decode())
            except OSError as exc:
                found.append(name + ":" + type(exc).__name__)
        report(" ".join(found))
    """)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        first, second = pool.submit(sandbox.run, holding), pool.submit(sandbox.run, looking)
        assert first.result().result == b"/dev/pts/0", first.result().stderr
        # /dev/pts/ptmx opens a new pty of the looking run's own, which has nothing to read.
        assert second.result().result == b"ptmx:BlockingIOError", second.result().stderr


def test_a_run_holds_at_most_its_share_of_ptys_and_leaves_none(sandbox: LayeredSandbox) -> None:
    before = int(_IN_USE.read_text())
    done = sandbox.run(run("""
        held = []
        try:
            while len(held) < 10_000:
                held.append(os.openpty())
        except OSError as exc:
            report(f"{len(held)} {type(exc).__name__}")
    """))
    assert done.result == f"{PTYS} OSError".encode(), done.stderr
    for _ in range(200):  # (a killed run's ptys close as its processes finish dying: not a timing check)
        if int(_IN_USE.read_text()) <= before:
            break
        time.sleep(0.05)
    assert int(_IN_USE.read_text()) <= before
