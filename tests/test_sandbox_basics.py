"""The sandbox runs honest programs faithfully, on every backend: stdout, stdin, exit codes, the separate
result channel, hash seeds, pairs, and `require:` failing closed."""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import msgspec
import pytest

from gate import memo
from gate.errors import BadInput, MissingLayers
from gate.sandbox import detect, layers_found_ahead, open_sandbox, registry
from gate.sandbox.base import LAYERS, PEER_FD_ENV, RESULT_FD_ENV, Limits, RunRequest, Sandbox
from gate.sandbox.runner import LayeredSandbox
from gate.sandbox.zygote import ZygoteLauncher
from tests.sandbox_support import SERVE

LIMITS = Limits(wall_s=60.0, cpu_s=30.0)


SANDBOX_BACKENDS = ("zygote", "fresh-interpreter")
# The programs the argv tests run are bound into the runs' root (the rest of /usr/bin is not there).
SANDBOX_READONLY = ("/bin/sh", "/usr/bin/env")


def program(code: str, stdin: bytes = b"", hash_seed: int = 0,
            env: dict[str, str] | None = None) -> RunRequest:
    return RunRequest(script="main.py", files={"main.py": code.encode()}, stdin=stdin, hash_seed=hash_seed,
                      env=env or {}, limits=LIMITS)


def test_honest_program_prints_and_exits_zero(sandbox: Sandbox) -> None:
    result = sandbox.run(program("print('hello', 6 * 7)"))
    assert (result.exit_code, result.stdout) == (0, b"hello 42\n")
    assert (result.timed_out, result.killed_reason, result.output_truncated) == (False, "", False)


def test_stdin_reaches_the_program(sandbox: Sandbox) -> None:
    result = sandbox.run(program("import sys\na, b = map(int, sys.stdin.read().split())\nprint(a + b)",
                                 stdin=b"2 3\n"))
    assert result.stdout == b"5\n"


def test_large_stdin_and_stdout_pass_whole(sandbox: Sandbox) -> None:
    data = b"x" * 200_000
    result = sandbox.run(program("import sys\nsys.stdout.write(str(len(sys.stdin.read())))", stdin=data))
    assert result.stdout == b"200000"


def test_stdin_is_empty_by_default(sandbox: Sandbox) -> None:
    assert sandbox.run(program("import sys\nprint(repr(sys.stdin.read()))")).stdout == b"''\n"


def test_exit_code_and_exception(sandbox: Sandbox) -> None:
    assert sandbox.run(program("raise SystemExit(7)")).exit_code == 7
    failed = sandbox.run(program("1 / 0"))
    assert failed.exit_code == 1
    assert b"ZeroDivisionError" in failed.stderr


def test_result_channel_is_separate_from_stdout(sandbox: Sandbox) -> None:
    code = f"import os\nprint('fake result')\nos.write(int(os.environ[{RESULT_FD_ENV!r}]), b'real')"
    result = sandbox.run(program(code))
    assert (result.stdout, result.result) == (b"fake result\n", b"real")


def test_no_result_when_the_program_writes_none(sandbox: Sandbox) -> None:
    assert sandbox.run(program("print('only stdout')")).result is None


def test_args_files_and_tree(sandbox: Sandbox, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / ".git").mkdir()
    (tree / "pkg" / "__init__.py").write_text("VALUE = 'from tree'\n")
    (tree / ".git" / "config").write_text("token\n")
    (tree / "link").symlink_to("pkg/__init__.py")
    code = ("import os, sys, pkg\nprint(pkg.VALUE, sys.argv[1:], os.path.exists('.git'), os.readlink('link'))\n"
            "open('pkg/made.txt', 'w').write('the run owns its copy')")
    result = sandbox.run(RunRequest(script="main.py", args=("a", "b"), files={"main.py": code.encode()},
                                    tree=tree, limits=LIMITS))
    assert result.stdout == b"from tree ['a', 'b'] False pkg/__init__.py\n"
    assert result.exit_code == 0


def test_environment_is_an_allow_list(sandbox: Sandbox) -> None:
    code = "import os, json\nprint(json.dumps(sorted(os.environ)))"
    result = sandbox.run(program(code, env={"EXTRA": "1"}))
    allowed = {"PATH", "HOME", "USER", "LOGNAME", "LANG", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE", RESULT_FD_ENV,
               "EXTRA"}
    assert set(json.loads(result.stdout)) <= allowed


def test_hash_seed_decides_set_order(sandbox: Sandbox) -> None:
    code = "print(hash('gate'))"
    first, again = (sandbox.run(program(code, hash_seed=1)).stdout for _ in range(2))
    other = sandbox.run(program(code, hash_seed=2)).stdout
    assert first == again
    assert first != other


def test_argv_program_runs_fresh(sandbox: Sandbox) -> None:
    result = sandbox.run(RunRequest(argv=("/bin/sh", "-c", "echo from-sh; exit 3"), limits=LIMITS))
    assert (result.stdout, result.exit_code) == (b"from-sh\n", 3)


def test_served_lead_talks_to_its_peer_over_the_socket(sandbox: Sandbox) -> None:
    lead = SERVE + ("def answer(channel):\n"
                    "    channel.sendall(b'21\\n')\n    return channel.makefile('rb').readline().strip()\n"
                    "serve(answer, retire=True)\n")
    peer = ("import os, socket\n"
            f"s = socket.socket(fileno=int(os.environ[{PEER_FD_ENV!r}]))\n"
            "n = int(s.makefile().readline())\ns.sendall(f'{n * 2}\\n'.encode())\n"
            "import time\ntime.sleep(1000)")
    lead_result, peer_result = sandbox.run_served(program(lead), b"", program(peer))
    assert (lead_result.exit_code, lead_result.result) == (0, b"42"), (lead_result, peer_result)
    assert peer_result.killed_reason == "peer finished"


def test_a_call_that_reached_its_server_is_never_sent_to_another(sandbox: Sandbox) -> None:
    # The server takes the call's channel, talks to the peer and dies before it has read the call's message
    # (longer than a socket's buffer, so that the gate is still sending it). The call failed with that server;
    # it must not go to a second server, which would talk to the same peer again.
    lead = textwrap.dedent(f"""
        import os, socket
        control = socket.socket(fileno=int(os.environ[{PEER_FD_ENV!r}]))
        _, fds, _, _ = socket.recv_fds(control, 8, 1)
        channel = socket.socket(fileno=fds[0])
        channel.sendall(b'hello from a server\\n')
        channel.recv(1)  # the peer has written it down
        os._exit(7)
    """)
    peer = (f"import os, sys\nchannel = open(int(os.environ[{PEER_FD_ENV!r}]), 'r+b', buffering=0)\n"
            "for line in iter(channel.readline, b''):\n"
            "    sys.stdout.buffer.write(line); sys.stdout.flush(); channel.write(b'.')\n")
    lead_result, peer_result = sandbox.run_served(program(lead), b"x" * (4 << 20), program(peer))
    assert (lead_result.killed_reason, lead_result.exit_code) == ("server ended", 7), lead_result
    assert peer_result.stdout == b"hello from a server\n"


def test_sandbox_reports_its_isolation(sandbox: Sandbox) -> None:
    isolation = sandbox.isolation
    assert set(isolation) >= {"zygote", "fresh-interpreter", "setsid", "rlimits", "uid", "no-new-privs",
                              "netns", "mountns", "filesystem", "ipcns", "seccomp", "cgroup"}
    assert tuple(isolation) == LAYERS  # a line for every layer `require:` may name, in that order
    assert isolation["setsid"] == "on"


def test_require_names_every_missing_layer() -> None:
    # Without root there is no uid switch; a sandbox that prefers fresh interpreters has no zygote.
    missing = ("zygote", *(() if os.geteuid() == 0 else ("uid",)))
    with pytest.raises(MissingLayers) as raised:
        open_sandbox(LIMITS, require=("setsid", *missing), prefer_zygote=False)
    assert tuple(name for name, _ in raised.value.layers) == missing


def test_require_rejects_unknown_layer() -> None:
    with pytest.raises(BadInput, match="unknown isolation layer"):
        open_sandbox(LIMITS, require=("firewall",))


def test_only_the_runs_descriptors_are_open(sandbox: Sandbox) -> None:
    code = "import os\nprint(sorted(int(fd) for fd in os.listdir('/proc/self/fd')))"
    result = sandbox.run(program(code))
    open_fds = json.loads(result.stdout)
    assert set(open_fds) - {0, 1, 2, 3} <= {max(open_fds)}  # the listing's own descriptor


def _inotify_instances() -> int:
    """The inotify instances the gate's own process has a descriptor of."""
    count = 0
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # (the listing's own descriptor, closed since)
            count += os.readlink(f"/proc/self/fd/{name}") == "anon_inode:inotify"
    return count


def test_a_runs_watch_works_held_by_the_gate_and_is_let_go_when_the_run_ends(sandbox: Sandbox) -> None:
    # As the cases' serving harness does: an inotify watch on the run's directory, made before the first result.
    # From that result on the gate (as root) holds the instance too, so that the run's end does not wait for the
    # kernel to free the watch; the watch still sees the run's changes, and the gate keeps nothing of it after.
    code = f"""\
import ctypes, os, time
libc = ctypes.CDLL(None)
watch = libc.inotify_init1(os.O_NONBLOCK)
assert libc.inotify_add_watch(watch, b".", 0x100) >= 0  # IN_CREATE
os.write(int(os.environ[{RESULT_FD_ENV!r}]), b"watching")
time.sleep(1)  # (the gate takes it as the result comes: before this process ends)
open("made", "w").close()
print(len(os.read(watch, 4096)) > 0)
"""
    before = _inotify_instances()
    held: list[int] = []
    request = msgspec.structs.replace(program(code), watches=True,
                                      on_result=lambda _: held.append(_inotify_instances()))
    result = sandbox.run(request)
    assert (result.exit_code, result.stdout, result.result) == (0, b"True\n", b"watching")
    assert held == [before + 1] if os.geteuid() == 0 else held[0] in (before, before + 1)
    deadline = time.monotonic() + 10
    while _inotify_instances() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _inotify_instances() == before


def test_a_runs_watch_held_by_the_gate_is_let_go_when_the_gate_fails_during_the_run(sandbox: Sandbox) -> None:
    code = f"""\
import ctypes, os, time
libc = ctypes.CDLL(None)
watch = libc.inotify_init1(os.O_NONBLOCK)
assert libc.inotify_add_watch(watch, b".", 0x100) >= 0
os.write(int(os.environ[{RESULT_FD_ENV!r}]), b"watching")
time.sleep(30)
"""
    before = _inotify_instances()

    def interrupted(_: bytes) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sandbox.run(msgspec.structs.replace(program(code), watches=True, on_result=interrupted))
    deadline = time.monotonic() + 10
    while _inotify_instances() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _inotify_instances() == before


def test_a_harness_runs_and_imports_as_usual(sandbox: Sandbox) -> None:
    main = b"import helper, sys\nprint(helper.twice(21), __name__, sys.argv[1:])\nraise SystemExit(3)\n"
    harness = {"main.py": main, "helper.py": b"def twice(n):\n    return 2 * n\n"}
    for warm in ((), ("helper.py",)):
        for _ in range(3):  # the first run compiles them in the zygote, the next ones reuse the code
            result = sandbox.run(RunRequest(script="main.py", args=("x",), harness=harness, warm=warm, limits=LIMITS))
            assert (result.stdout, result.exit_code) == (b"42 __main__ ['x']\n", 3), result.stderr
    changed = {**harness, "helper.py": b"def twice(n):\n    return -n\n"}
    result = sandbox.run(RunRequest(script="main.py", args=("x",), harness=changed, warm=("helper.py",),
                                    limits=LIMITS))
    assert result.stdout == b"-21 __main__ ['x']\n"
    failing = {"main.py": b"import helper\n", "helper.py": b"1 / 0\n"}
    request = RunRequest(script="main.py", harness=failing, warm=("helper.py",), limits=LIMITS)
    stderr = sandbox.run(request).stderr
    assert b'helper.py", line 1' in stderr
    assert b"ZeroDivisionError" in stderr


def test_a_harness_starts_on_the_standard_library_and_takes_the_trees_path_when_it_says(
        sandbox: Sandbox, tmp_path: Path) -> None:
    """No file of the tree or of the working directory is what a harness imports (a module named like the
    standard library's, like one of the harness's own, a package of that name, bytecode), until it takes the
    tree's path; then the tree's modules are found as `python main.py` would find them, `src` first."""
    from gate.sandbox import child
    from gate.sandbox import tree as tree_module

    assert tree_module.TREE_PATH_ENV == child.TREE_PATH_ENV
    tree = tmp_path / "tree"
    for path, text in {"tempfile.py": "raise SystemExit(7)\n", "helper.py": "raise SystemExit(8)\n",
                       "src/helper/__init__.py": "raise SystemExit(9)\n", "shlex/__init__.py": "raise SystemExit(10)\n",
                       "src/calc.py": "WHERE = 'src'\n", "calc.py": "WHERE = 'top'\n",
                       "lib.py": "WHERE = 'top'\n"}.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)
    main = (b"import json, os, sys, tempfile, shlex, helper\n"
            b"before = [p for p in sys.path if p.startswith(os.getcwd())]\n"
            b"sys.path[:] = json.loads(os.environ['GATE_TREE_PATH'])\n"
            b"import calc, lib\n"
            b"print(helper.NAME, tempfile.__name__, bool(shlex.split), before, calc.WHERE, lib.WHERE)\n")
    harness = {"main.py": main, "helper.py": b"NAME = 'the gate helper'\n"}
    for warm in ((), ("helper.py",)):
        result = sandbox.run(RunRequest(script="main.py", harness=harness, warm=warm, tree=tree,
                                        files={"helper.py": b"raise SystemExit(11)\n"}, python_path=("src",),
                                        limits=LIMITS))
        assert result.stdout == b"the gate helper tempfile True [] src top\n", result.stderr


def test_a_warm_module_is_imported_once_and_only_for_the_runs_that_name_it(sandbox: Sandbox) -> None:
    # A zygote imports a warm module once, before forking its runs (so its top level must not depend on the
    # run); a fresh interpreter imports it in each run.
    harness = {"main.py": b"import os, stamp\nprint(stamp.PID == os.getpid(), stamp.PID)\n",
               "stamp.py": b"import os\nPID = os.getpid()\n"}
    warm = ("stamp.py",)
    first, second = (sandbox.run(RunRequest(script="main.py", harness=harness, warm=warm, limits=LIMITS)).stdout
                     for _ in range(2))
    if sandbox.isolation["zygote"].startswith("on"):
        assert first.startswith(b"False ") and first == second
    else:
        assert first.startswith(b"True ") and second.startswith(b"True ") and first != second
    # A run that does not name it warm imports its own file of that name, not the zygote's module.
    own = {"main.py": b"import stamp\nprint(stamp.VALUE)\n", "stamp.py": b"VALUE = 'its own'\n"}
    assert sandbox.run(RunRequest(script="main.py", files=own, limits=LIMITS)).stdout == b"its own\n"
    assert sandbox.run(RunRequest(script="main.py", harness=own, limits=LIMITS)).stdout == b"its own\n"
    # A warm file named like a module the zygote holds never takes that module's place for later runs.
    clash = {"main.py": b"import json\nprint(json.dumps([1]))\n", "json.py": b"raise SystemExit(9)\n"}
    sandbox.run(RunRequest(script="main.py", harness=clash, warm=("json.py",), limits=LIMITS))
    plain = {"main.py": b"import json\nprint(json.dumps([2]))\n"}
    assert sandbox.run(RunRequest(script="main.py", files=plain, limits=LIMITS)).stdout == b"[2]\n"


@pytest.mark.parametrize("backend", ["zygote", "fresh-interpreter"])
def test_a_framework_is_imported_once_and_only_for_runs_that_ask_and_find_the_same_files(backend: str) -> None:
    """A zygote imports the sandbox's framework (open_sandbox's `framework`) once, from its folders alone, for
    the runs that ask for it; a run that does not ask, or whose import path finds one of its modules in
    another file first (a folder of the run's own named like it), imports its own; a fresh interpreter
    imports it in each run."""
    from tests import session_support

    folder = Path(tempfile.mkdtemp(dir=session_support.directory()))  # (readable by a run's uid)
    folder.chmod(0o755)
    framework, shadow = folder / "framework", folder / "shadow"
    for where, text in ((framework, "import os\nPID = os.getpid()\nWHERE = 'framework'\n"),
                        (shadow, "import os\nPID = os.getpid()\nWHERE = 'shadow'\n")):
        (where / "fwmod").mkdir(parents=True)
        (where / "fwmod" / "__init__.py").write_text(text)
        where.chmod(0o755)
        (where / "fwmod").chmod(0o755)
    main = (b"import json, os, sys\nsys.path[:] = json.loads(os.environ['GATE_TREE_PATH'])\nimport fwmod\n"
            b"print(fwmod.WHERE, fwmod.PID == os.getpid())\n")
    box = open_sandbox(LIMITS, prefer_zygote=backend == "zygote", readonly=[framework, shadow],
                       framework=(("fwmod",), (str(framework),)))
    try:
        def run(ask: bool, *path: Path) -> bytes:
            request = RunRequest(script="main.py", harness={"main.py": main}, framework=ask,
                                 python_path=tuple(str(p) for p in path), limits=LIMITS)
            return box.run(request).stdout

        imported = b"framework False\n" if backend == "zygote" else b"framework True\n"
        assert run(True, framework) == run(True, framework) == imported
        assert run(False, framework) == b"framework True\n"
        assert run(True, shadow, framework) == b"shadow True\n"
    finally:
        box.close()
        shutil.rmtree(folder)


def test_a_run_whose_output_is_discarded_writes_it_nowhere(sandbox: Sandbox) -> None:
    # A served peer's answers travel on its channel: what it prints is not read, kept, or capped.
    code = (f"import os, sys\nprint('x' * {2 * LIMITS.output_bytes})\nprint('oops', file=sys.stderr)\n"
            f"os.write(int(os.environ[{RESULT_FD_ENV!r}]), b'{{}}')\nprint(sys.stdin.read() == '')")
    request = RunRequest(script="main.py", files={"main.py": code.encode()}, limits=LIMITS, discard_output=True)
    result = sandbox.run(request)
    assert (result.exit_code, result.stdout, result.stderr, result.result) == (0, b"", b"", None)
    assert not result.output_truncated and not result.killed_reason


def test_argv_program_is_found_on_the_runs_path(sandbox: Sandbox) -> None:
    result = sandbox.run(RunRequest(argv=("env",), env={"MARK": "1"}, limits=LIMITS))
    assert result.exit_code == 0
    assert b"MARK=1\n" in result.stdout
    assert b"GATE_TEST" not in result.stdout


def test_a_bad_request_is_refused_and_leaves_nothing(sandbox: Sandbox) -> None:
    for request in (RunRequest(script="main.py", files={"../outside.py": b""}, limits=LIMITS),
                    RunRequest(limits=LIMITS),
                    RunRequest(script="main.py", harness={"main.py": b""}, warm=("other.py",), limits=LIMITS),
                    RunRequest(script="main.py", harness={"other.py": b""}, limits=LIMITS),
                    RunRequest(script="main.py", harness={"lib/main.py": b""}, limits=LIMITS)):
        with pytest.raises(ValueError):
            sandbox.run(request)
    assert isinstance(sandbox, LayeredSandbox)
    assert sandbox.leftovers() == []
    assert sandbox.run(program("print('fine')")).stdout == b"fine\n"


def test_a_sandbox_first_used_from_a_thread_outlives_that_thread() -> None:
    # gate eval runs cases from a thread pool: the zygote must not die with the thread that happened to start it
    # (PR_SET_PDEATHSIG fires when the parent *thread* exits).
    box = open_sandbox(LIMITS)
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            first = pool.submit(box.run, program("print(1)", hash_seed=7)).result()
        assert first.exit_code == 0
        again = box.run(program("print(2)", hash_seed=7))
        assert (again.exit_code, again.stdout) == (0, b"2\n")
    finally:
        box.close()


def test_what_is_started_ahead_runs_under_its_seed_and_stops_with_the_sandbox() -> None:
    # The engine starts the zygotes of the checks' hash seeds as the sandbox opens (Sandbox.prepare): a run
    # under a seed started ahead has that seed, and one started ahead and never used stops at close too.
    before = _children()
    box = open_sandbox(LIMITS)
    try:
        box.prepare((3, 4))
        result = box.run(program("print(hash('gate'))", hash_seed=3))
        plain = subprocess.run([sys.executable, "-c", "print(hash('gate'))"], env={"PYTHONHASHSEED": "3"},
                               capture_output=True, check=True)
        assert (result.exit_code, result.stdout) == (0, plain.stdout)
    finally:
        box.close()
    assert _children() <= before


# A harness program that says which of some modules it finds loaded as it starts.
_LOADED = b"import sys\nprint(sorted(n for n in ('statistics', 'subprocess', 'this') if n in sys.modules))\n"


@pytest.mark.parametrize("backend", ["zygote", "fresh-interpreter"])
def test_what_runs_share_made_ahead_is_what_they_would_have_made_and_no_more(backend: str) -> None:
    # Sandbox.warm has a zygote import a run's preload and compile its harness while the gate still reads the
    # code: a run after it finds them made (a fresh interpreter makes nothing ahead), and finds what a run that
    # asked for them itself finds; a name that is not safe to import outside every layer (`subprocess` reaches
    # out, `this` prints) is not imported ahead either.
    box = open_sandbox(LIMITS, prefer_zygote=backend == "zygote")
    request = RunRequest(script="_probe.py", harness={"_probe.py": _LOADED}, limits=LIMITS,
                         preload=("statistics", "subprocess", "this"), hash_seed=8)
    try:
        box.prepare((8,))
        box.warm(request, (8,))
        if backend == "zygote":
            assert isinstance(box, LayeredSandbox) and isinstance(box.launcher, ZygoteLauncher)
            made = box.run(msgspec.structs.replace(request, preload=()))  # (what the zygote made ahead)
            assert (made.exit_code, made.stdout, made.stderr) == (0, b"['statistics']\n", b"")
        ahead = box.run(request)
        asked = box.run(msgspec.structs.replace(request, hash_seed=9))
    finally:
        box.close()
    assert (ahead.exit_code, ahead.stderr) == (asked.exit_code, asked.stderr) == (0, b"")
    assert ahead.stdout == asked.stdout


_SEEN = """
import json, os
interfaces = [line.split(":")[0].strip() for line in open("/proc/net/dev").read().splitlines()[2:]]
print(json.dumps({"root": sorted(os.listdir("/")), "interfaces": interfaces,
                  "tmp": os.listdir("/tmp"),
                  "mounts": len(open("/proc/self/mountinfo").read().splitlines())}))
"""


def test_a_run_of_a_zygote_prepared_ahead_sees_what_any_run_sees() -> None:
    # A zygote started ahead (Sandbox.prepare) makes its runs' network namespace and mount template before the
    # first run asks; a run of it must see no more of the host, and no more network, than a run of a zygote
    # that made them on its first request.
    box = open_sandbox(LIMITS)
    assert isinstance(box, LayeredSandbox)
    if "mountns" not in box.layers.on or "netns" not in box.layers.on:
        box.close()
        pytest.skip("no mount or network namespace here")
    try:
        box.prepare((5,))
        ahead = box.run(program(_SEEN, hash_seed=5))
        asked = box.run(program(_SEEN, hash_seed=6))
    finally:
        box.close()
    assert (ahead.exit_code, asked.exit_code) == (0, 0), (ahead.stderr, asked.stderr)
    seen = json.loads(ahead.stdout)
    assert seen == json.loads(asked.stdout)
    assert seen["interfaces"] == ["lo"] and "root" not in seen["root"] and "work" not in seen["root"]

@pytest.mark.skipif(os.geteuid() != 0, reason="switching uid needs root")
@pytest.mark.parametrize("backend", ["zygote", "fresh-interpreter"])
def test_a_dropped_uid_without_a_mount_namespace_can_run_its_files(backend: str) -> None:
    # Root in a container without CAP_SYS_ADMIN: uids switch but no mount namespace copies the run's directory
    # out, so the directory itself must be reachable by the dropped uid (this machine's /dev/shm is mode 0700).
    full = detect.layers(prefer_zygote=True)
    if full.uids is None:
        pytest.skip("no dedicated uid here")
    kept = tuple(name for name in full.on if name not in ("netns", "mountns", "seccomp"))
    layers = msgspec.structs.replace(full, on=kept, cgroups=None)
    box = LayeredSandbox(registry.BACKENDS[backend](layers), layers)
    try:
        result = box.run(RunRequest(script="main.py", limits=LIMITS, files={
            "main.py": b"import os, helper\nprint(os.getuid() != 0, helper.VALUE)",
            "helper.py": b"VALUE = 7"}))
        assert (result.exit_code, result.stdout) == (0, b"True 7\n"), result.stderr
    finally:
        box.close()


def _children() -> set[int]:
    """The processes this one started that are still there (zombies too)."""
    found: set[int] = set()
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as listed:
                found.update(int(pid) for pid in listed.read().split())
        except FileNotFoundError:  # a thread that has just ended (its children went to another of ours)
            continue
    return found


def test_layers_found_ahead_are_the_same_and_nothing_of_the_search_outlives_its_block(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    box = open_sandbox(LIMITS)
    plain = dict(box.isolation)
    box.close()
    with layers_found_ahead():  # as gate check does: the probes run while it reads the range
        box = open_sandbox(LIMITS)
        ahead = dict(box.isolation)
        result = box.run(program("print(6 * 7)"))
        box.close()
    assert ahead == plain and (result.exit_code, result.stdout) == (0, b"42\n")
    # Nothing remembered (a state directory of its own): the probes really run, and the block waits for them.
    monkeypatch.setattr(memo, "STATE_DIR", str(tmp_path / "state"))
    before = _children()
    with layers_found_ahead():
        pass  # a gate that had no code to run
    assert not any(thread.name.startswith("gate-layers") for thread in threading.enumerate())
    assert _children() <= before


def _zygotes() -> set[int]:
    """This process's children that are zygotes (not the layer probes, which may run beside them)."""
    found = set()
    for pid in _children():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                if b"zygote_server" in cmdline.read():
                    found.add(pid)
        except FileNotFoundError:
            continue
    return found


def test_zygotes_started_ahead_serve_the_runs_and_none_outlives_the_block() -> None:
    before = _zygotes()
    with layers_found_ahead() as ahead:
        ahead.zygotes((5, 6))
        deadline = time.monotonic() + 60
        while len(_zygotes() - before) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)  # (they start once the layers are found, while the caller reads its input)
        started = _zygotes() - before
        box = open_sandbox(LIMITS)
        assert isinstance(box, LayeredSandbox)
        box.prepare((5,))
        result = box.run(program("print(hash('gate'))", hash_seed=5))
        serving = _zygotes() - before
        box.close()
    expected = subprocess.run([box.layers.interpreter, "-c", "print(hash('gate'))"], env={"PYTHONHASHSEED": "5"},
                              capture_output=True, check=True).stdout
    assert (result.exit_code, result.stdout) == (0, expected)  # the zygote of its seed served it
    assert len(started) == 2 and serving == started  # it started no interpreter of its own
    assert _zygotes() <= before  # the one for seed 6, which nothing took, ended with the block


def test_a_zygote_started_ahead_imports_the_framework_before_the_sandbox_opens_in_its_runs_network() -> None:
    """The suite's zygote imports pytest as soon as the gate knows where from, not as the sandbox opens: its
    import is most of the zygote's start, which the suite's first runs would wait for. It is imported there
    once, in the network namespace the runs share, and the runs that ask take it."""
    from tests import session_support

    folder = Path(tempfile.mkdtemp(dir=session_support.directory()))  # (readable by a run's uid)
    folder.chmod(0o777)
    framework, marker = folder / "framework", folder / "imported"
    (framework / "fwmod").mkdir(parents=True)
    (framework / "fwmod" / "__init__.py").write_text(
        "import os\nPID = os.getpid()\n"
        f"with open({str(marker)!r}, 'a') as f:\n    f.write(f\"{{PID}} {{os.readlink('/proc/self/ns/net')}}\\n\")\n")
    for each in (framework, framework / "fwmod"):
        each.chmod(0o755)
    main = (b"import json, os, sys\nsys.path[:] = json.loads(os.environ['GATE_TREE_PATH'])\nimport fwmod\n"
            b"print(fwmod.PID, os.readlink('/proc/self/ns/net'))\n")
    try:
        with layers_found_ahead() as ahead:
            ahead.zygotes((0,))
            ahead.framework(("fwmod",), (str(framework),))
            deadline = time.monotonic() + 60
            # (the file exists as soon as the import opens it, its line a moment later)
            while not (marker.exists() and marker.read_text().endswith("\n")) and time.monotonic() < deadline:
                time.sleep(0.01)
            imported_ahead = marker.read_text()  # before any sandbox opens
            box = open_sandbox(LIMITS, readonly=[framework], framework=(("fwmod",), (str(framework),)))
            assert isinstance(box, LayeredSandbox)
            try:
                box.prepare((0,))
                said = box.run(RunRequest(script="main.py", harness={"main.py": main}, framework=True,
                                          python_path=(str(framework),), limits=LIMITS)).stdout.decode()
            finally:
                box.close()
        [(pid, network)] = [line.split() for line in imported_ahead.splitlines()]
        assert said.split() == [pid, network]  # the run took the zygote's import, in the network it runs in
        assert marker.read_text() == imported_ahead  # and the sandbox's opening imported nothing again
        assert network != os.readlink("/proc/self/ns/net") or "netns" not in box.layers.on
    finally:
        shutil.rmtree(folder)


def test_a_sandbox_opened_in_a_forked_gate_process_starts_its_own_zygotes(sandbox: Sandbox) -> None:
    # This process has run sandboxes (its zygotes' spawner thread is up); a fork of it has no such thread.
    assert sandbox.run(program("print(1)")).exit_code == 0
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            box = open_sandbox(LIMITS)
            code = 0 if box.run(program("print(6 * 7)")).stdout == b"42\n" else 1
            box.close()
        finally:
            os.write(write, bytes([code]))
            os._exit(code)
    os.close(write)
    try:
        ready = select.select([read], [], [], 60)[0]
        said = os.read(read, 1) if ready else b""
    finally:
        os.close(read)
        if not said:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert said == b"\0", "the forked process's sandbox never ran its program"


def test_the_zygotes_started_ahead_are_for_the_seeds_the_policys_runs_use() -> None:
    from gate.engine import likely_hash_seeds
    from gate.policy_file import load_policy

    suite = load_policy(None, text="tests: {paths: [tests]}\n", source="gate.yml")
    cases = load_policy(None, text="runs: 3\ncases:\n  - {kind: call, function: 'm:f', args: [1], expect: 1}\n",
                        source="gate.yml")
    assert likely_hash_seeds(suite) == (0,)  # a build and the suite: no zygote for cases it does not have
    assert likely_hash_seeds(cases) == (1, 2, 3)  # the cases' three runs, and no suite to run under seed 0
    both = load_policy(None, text="tests: {paths: [tests]}\ncases:\n  - {kind: call, function: 'm:f', args: [1], "
                       "expect: 1}\n", source="gate.yml")
    assert likely_hash_seeds(both) == (1, 2, 0)  # in the pipeline's order: the cases run first
    assert likely_hash_seeds(load_policy(None, text="{}\n", source="gate.yml")) == ()  # nothing to run
