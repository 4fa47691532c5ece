"""`call` cases served many to a run: the verdict is the one a run per case gives, whatever the cases do."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace

from gate.cases import KINDS
from gate.cases.base import Program, ServedTogether
from gate.cases.harness import wire
from gate.checks.extract import Extract
from gate.checks.nondeterminism import Nondeterminism
from gate.checks.parse import Parse
from gate.checks.smoke import Smoke
from gate.engine import run_checks
from gate.policy.model import CaseSpec, Policy, RunLimits
from gate.sandbox.base import Sandbox
from gate.subject import Subject
from gate.verdict import Verdict
from tests.cases_support import LIMITS, Counted, case, serving_lines, without_times
from tests.runner_support import has_sudo, run_as_runner

# Modules of the tree under test. The harness imports them in the order of their names: apex's import leaves a
# file, amend's patches the standard library, and calc's cases would see either in a run that went on.
MODULES = {
    "apex": """\
open("early-was-here", "w").close()


def saw(n):
    import os
    return os.path.exists("early-was-here")
""",
    "calc": """\
import json
import os
import subprocess
import sys
import time

SEEN = []
CORES = sorted(os.sched_getaffinity(0))


def double(n):
    return 2 * n


def off_by_one(n):
    return 2 * n + 1


def spin(n):
    while True:
        n += 1


def nap(n):
    time.sleep(60)


def fruit(n):
    return list({"apple", "banana", "cherry", "damson", "elder", "fig", "grape", "huckleberry"})[:n]


def refuse(n):
    raise ValueError(f"no {n}")


def shout(n):
    sys.stdout.write("x" * n)
    sys.stdout.flush()
    return n


def quit_early(n):
    os._exit(n)


def remember(n):
    SEEN.append(n)
    return len(SEEN)


def leave_a_note(n):
    existed = os.path.exists("note.txt")
    with open("note.txt", "a") as note:
        note.write(str(n))
    return existed


def in_tmp(n):
    existed = os.path.exists("/tmp/left")
    open("/tmp/left", "w").close()
    return existed


def leave_a_process(n):
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    return n


def others(n):
    # this uid's living processes that are not this one or its ancestors
    line, pid = set(), os.getpid()
    while pid > 1:
        line.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as stat:
                pid = int(stat.read().rsplit(")", 1)[1].split()[1])
        except OSError:  # another uid's, not shown
            break
    return sorted(int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in line
                  and os.stat(f"/proc/{p}").st_uid == os.getuid() and _alive(p))


def _alive(pid):
    # (a killed process of an earlier run of this uid may wait a moment to be reaped, whatever the runs do)
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


def hog(n):
    return len(bytearray(n * 1024 * 1024))


def dumps(n):
    return json.dumps([n])


def saw_early(n):
    return os.path.exists("early-was-here")


def cores(n):
    # the cores the import and the call may run on (a served run keeps its own processes on one)
    return [CORES, sorted(os.sched_getaffinity(0))]
""",
    "amend": """\
import json

json.dumps = lambda *args, **kwargs: "patched"


def dumps(n):
    return json.dumps([n])


def double(n):
    return 2 * n
""",
    "broken": "raise ImportError('this module never loads')\n",
    "stall": "import time\n\ntime.sleep(60)\n\n\ndef double(n):\n    return 2 * n\n",
}

# (function, argument, expected): every kind of outcome, and cases that would see each other's traces.
CASES: tuple[tuple[str, Any, Any], ...] = (
    ("calc:double", 4, 8), ("calc:off_by_one", 4, 8), ("calc:remember", 1, 1), ("calc:remember", 2, 1),
    ("calc:fruit", 8, []), ("calc:refuse", 3, 0), ("calc:leave_a_note", 1, False),
    ("calc:leave_a_note", 2, False), ("calc:in_tmp", 1, False), ("calc:in_tmp", 2, False),
    ("calc:dumps", 1, "[1]"), ("calc:saw_early", 0, False), ("calc:spin", 1, 0), ("calc:shout", 300_000, 300_000),
    ("calc:shout", 10, 10), ("calc:quit_early", 3, 0), ("calc:leave_a_process", 1, 1), ("calc:others", 0, []),
    ("calc:hog", 2000, 0), ("calc:nap", 1, 0), ("calc:double", 5, 10), ("apex:saw", 0, True),
    ("amend:dumps", 1, "patched"), ("broken:double", 1, 2), ("calc:missing", 1, 2), ("calc:double", 6, 12),
    ("calc:cores", 0, [sorted(os.sched_getaffinity(0))] * 2),
    ("stall:double", 1, 2), ("stall:double", 2, 4),
)


def _cases() -> tuple[tuple[CaseSpec, ...], tuple[CaseSpec, ...]]:
    public = tuple(case("call", f"{target} {arg}", function=f"pkg.{target}", args=[arg], expect=expect)
                   for target, arg, expect in CASES)
    hidden = tuple(replace(spec, name=f"h{n}", hidden=True) for n, spec in enumerate(reversed(public)))
    return public, hidden


def _verdict(sandbox: Sandbox, tree: Path, together: bool) -> tuple[Verdict, int]:
    public, hidden = _cases()
    subject = Subject(kind="range", label="base..head", tree=tree, cases=public, hidden_cases=hidden)
    policy = Policy(limits=RunLimits(timeout=2.0, cpu=3.0, memory_mb=512, output_kb=256), runs=2)
    counted = Counted(sandbox)
    verdict = run_checks(subject, policy, counted,
                    checks=(Extract(), Parse(), Smoke(together=together), Nondeterminism()))
    return verdict, counted.runs


def _both_ways(sandbox: Sandbox, tree: Path, cases: tuple[CaseSpec, ...],
               policy: Policy) -> tuple[dict[str, Any], dict[str, Any]]:
    """The verdict (less its times) of `cases` on `tree`, each case in a run of its own, then served together."""
    found = []
    for together in (False, True):
        subject = Subject(kind="range", label="base..head", tree=tree, cases=cases)
        found.append(without_times(run_checks(subject, policy, sandbox, checks=(
            Extract(), Parse(), Smoke(together=together), Nondeterminism()))))
    return found[0], found[1]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    for name, source in MODULES.items():
        (tmp_path / "pkg" / f"{name}.py").write_text(source)
    return tmp_path


@pytest.mark.slow
def test_cases_served_together_get_the_verdict_of_a_run_each(sandbox: Sandbox, tree: Path) -> None:
    alone, alone_runs = _verdict(sandbox, tree, together=False)
    together, _ = _verdict(sandbox, tree, together=True)
    assert without_times(together) == without_times(alone)
    # ... and that verdict is what each case did, read as it would be from a run of its own.
    public = [(c.name, c.status) for c in together.cases if not c.hidden]
    assert public == [
        ("calc:double 4", "passed"), ("calc:off_by_one 4", "failed"), ("calc:remember 1", "passed"),
        ("calc:remember 2", "passed"), ("calc:fruit 8", "failed"), ("calc:refuse 3", "failed"),
        ("calc:leave_a_note 1", "passed"), ("calc:leave_a_note 2", "passed"), ("calc:in_tmp 1", "passed"),
        ("calc:in_tmp 2", "passed"), ("calc:dumps 1", "passed"), ("calc:saw_early 0", "passed"),
        ("calc:spin 1", "timeout"), ("calc:shout 300000", "failed"), ("calc:shout 10", "passed"),
        ("calc:quit_early 3", "failed"), ("calc:leave_a_process 1", "passed"), ("calc:others 0", "passed"),
        ("calc:hog 2000", "failed"), ("calc:nap 1", "timeout"), ("calc:double 5", "passed"),
        ("apex:saw 0", "passed"), ("amend:dumps 1", "passed"), ("broken:double 1", "failed"),
        ("calc:missing 1", "failed"), ("calc:double 6", "passed"), ("calc:cores 0", "passed"),
        ("stall:double 1", "timeout"), ("stall:double 2", "timeout")]
    details = {c.name: c.detail for c in together.cases}
    assert "killed: output limit" in details["calc:shout 300000"]
    assert "exited with status 3" in details["calc:quit_early 3"]
    assert "MemoryError" in details["calc:hog 2000"]
    assert "this module never loads" in details["broken:double 1"]
    assert next(p.message for p in together.penalties if p.check == "nondeterminism").startswith(
        "case 5 (calc:fruit 8)")
    # Two hash seeds of 58 cases, a run each: 116 runs less those not run again after a timeout.
    assert alone_runs == 2 * 58 - 8


def test_a_served_runs_processes_stay_on_its_core_and_each_case_sees_every_core(sandbox: Sandbox,
                                                                               tmp_path: Path) -> None:
    # The case's parent (its module's process) stays on the run's core; the case itself may use every core, as
    # in a run of its own.
    (tmp_path / "where.py").write_text(
        "import os\n\n\ndef parent(n):\n    return sorted(os.sched_getaffinity(os.getppid()))\n\n\n"
        "def mine(n):\n    return sorted(os.sched_getaffinity(0))\n")
    core = max(os.sched_getaffinity(0))
    cases = [case("call", "parent", function="where:parent", args=[0], expect=[core]),
             case("call", "mine", function="where:mine", args=[0], expect=sorted(os.sched_getaffinity(0)))]
    kind = KINDS["call"]
    assert isinstance(kind, ServedTogether)
    served = kind.run_many(cases, Program(tree=tmp_path), sandbox, LIMITS, 0, 1.0, core)
    assert {at: (o.status, o.detail) for at, o in served.outcomes.items()} == {0: ("passed", ""), 1: ("passed", "")}


@pytest.mark.slow
def test_a_modules_last_case_made_in_its_process_gets_the_verdict_of_a_run_of_its_own(sandbox: Sandbox,
                                                                                     tree: Path) -> None:
    # Each module of one case: that case is its module's last, made in the process that imported it (no fork
    # for it), whatever it does: hang, spin, exit, print too much, run out of memory, raise, leave a process or
    # a file, see its cores and maps.
    last = ("spin", "nap", "quit_early", "shout", "hog", "refuse", "double", "leave_a_process", "in_tmp",
            "cores", "leave_a_note")
    for name in last:
        (tree / "pkg" / f"last_{name}.py").write_text(f"from pkg.calc import {name}\n")
    (tree / "pkg" / "last_maps.py").write_text(LEAVES["counter"])
    args = {"quit_early": 3, "shout": 300_000, "hog": 2000}
    cases = (*(case("call", f"last {name}", function=f"pkg.last_{name}:{name}", args=[args.get(name, 1)],
                    expect=2) for name in last),
             case("call", "last maps", function="pkg.last_maps:notes", args=[1], expect=[]))
    policy = Policy(limits=RunLimits(timeout=2.0, cpu=3.0, memory_mb=512, output_kb=256), runs=2)
    alone, served = _both_ways(sandbox, tree, cases, policy)
    assert served == alone
    assert {entry["name"]: entry["status"] for entry in served["cases"]} == {
        "last spin": "timeout", "last nap": "timeout", "last quit_early": "failed", "last shout": "failed",
        "last hog": "failed", "last refuse": "failed", "last double": "passed", "last leave_a_process": "failed",
        "last in_tmp": "failed", "last cores": "failed", "last leave_a_note": "failed", "last maps": "passed"}


def _served_calls(sandbox: Sandbox, tree: Path, target: str, count: int, cpu: float,
                  cut: float) -> list[tuple[int, Any]]:
    """(index, value returned) of each line of the serving harness, run as the gate runs it but without the
    tripwires (one could be a module's last call), for `count` calls of `target` (module:function) with 0, 1, ..."""
    return [(line["i"], wire.loads(line["record"]["ok"]))
            for line in serving_lines(sandbox, tree, target, count, cpu=cpu, cut=cut)]


def test_a_modules_last_case_is_made_in_the_process_that_imported_it(sandbox: Sandbox, tmp_path: Path) -> None:
    # The one thing that process shows its last case that a fork of it would not: what the cases before spent
    # (a fork has no children yet).
    (tmp_path / "spent.py").write_text("import resource\n\n\ndef children(n):\n"
                                       "    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt > 0\n")
    assert _served_calls(sandbox, tmp_path, "spent:children", 3, cpu=5.0, cut=1.0) == [
        (0, False), (1, False), (2, True)]


@pytest.mark.slow
def test_a_modules_last_case_is_charged_its_own_cpu_not_the_cases_before_it(sandbox: Sandbox,
                                                                           tmp_path: Path) -> None:
    # Four calls of 0.6 s of CPU each, a case's limit 3 s: each under the half of it that a served case may use,
    # the last (made in its module's process, which collected the forks before it) as much as the others.
    (tmp_path / "burn.py").write_text("import time\n\n\ndef burn(n):\n    end = time.process_time() + 0.6\n"
                                      "    while time.process_time() < end:\n        pass\n    return n\n")
    assert _served_calls(sandbox, tmp_path, "burn:burn", 4, cpu=3.0, cut=2.0) == [(n, n) for n in range(4)]


def test_ordinary_cases_share_a_few_runs(sandbox: Sandbox, tree: Path) -> None:
    cases = tuple(case("call", f"double {n}", function=f"pkg.{module}:double", args=[n], expect=2 * n)
                  for n in range(40) for module in ("calc", "amend"))
    subject = Subject(kind="range", label="base..head", tree=tree, cases=cases[:60],
                      hidden_cases=tuple(replace(spec, hidden=True) for spec in cases[60:]))
    counted = Counted(sandbox)
    verdict = run_checks(subject, Policy(runs=2), counted,
                    checks=(Extract(), Parse(), Smoke(), Nondeterminism()))
    assert verdict.accepted and [c.status for c in verdict.cases] == ["passed"] * 80
    # Per hash seed: the public cases in a run per core the seed has, and the hidden ones likewise (a case that
    # the machine's load holds past the cut adds a few runs).
    assert 2 * 2 <= counted.runs < 20


# Modules whose import leaves something every case of theirs would share in a run that served them all (a
# folder, a shared memory map even read-only, a process even ended or cloned, a descriptor) or would not have (a
# timer, a pending signal), the harness's own shared map, or an outcome that depends on how deep the harness
# imports the module or calls the function; and a message queue, which the run's cases would share whoever made
# it (the sandbox refuses one). Before each of these was seen, served and alone differed.
LEAVES = {
    "madedir": """\
import os
import tempfile

PLACE = tempfile.mkdtemp(dir=".")


def first(n):
    mark = os.path.join(PLACE, "mark")
    seen = os.path.exists(mark)
    open(mark, "w").close()
    return seen
""",
    "mapped": """\
import mmap

SHARED = mmap.mmap(-1, 8)


def bump(n):
    SHARED[0] += 1
    return SHARED[0]
""",
    "helper": """\
import os
import signal
import time

HELPER = os.fork()
if HELPER == 0:
    time.sleep(30)
    os._exit(0)


def kill(n):
    try:
        os.kill(HELPER, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True
""",
    "fdzero": """\
import os

os.dup2(os.memfd_create("count"), 0)


def bump(n):
    count = int.from_bytes(os.pread(0, 8, 0) or b"\\0", "little") + 1
    os.pwrite(0, count.to_bytes(8, "little"), 0)
    return count
""",
    "romap": """\
import ctypes
import mmap

SHARED = mmap.mmap(-1, 4096, prot=mmap.PROT_READ)  # shared, read-only until a case makes it writable


def bump(n):
    with open("/proc/self/maps") as maps:
        at = next(int(line.split("-")[0], 16) for line in maps if line.split()[1] == "r--s" and "zero" in line)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    libc.mprotect(at, 4096, mmap.PROT_READ | mmap.PROT_WRITE)
    cell = ctypes.c_ubyte.from_address(at)
    cell.value += 1
    return cell.value
""",
    "ended": """\
import subprocess
import sys
import time

ENDED = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
time.sleep(0.5)


def code(n):
    return ENDED.wait()
""",
    "timer": """\
import signal
import time

RANG = []
signal.signal(signal.SIGALRM, lambda *_: RANG.append(1))
signal.setitimer(signal.ITIMER_REAL, 0.05)


def rang(n):
    time.sleep(0.08)
    return bool(RANG)
""",
    "counter": """\
def notes(n):
    with open("/proc/self/maps") as maps:
        return [line.split()[1] for line in maps if line.split()[1] == "rw-s"]
""",
    "pending": """\
import os
import signal

signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
os.kill(os.getpid(), signal.SIGUSR1)


def waiting(n):
    return sorted(int(each) for each in signal.sigpending())
""",
    "cloned": """\
import ctypes
import os
import time

LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long
HELPER = LIBC.syscall(56, 0, 0, 0, 0, 0)  # clone(2) with no exit signal (x86_64's SYS_clone)
if HELPER == 0:
    time.sleep(30)
    os._exit(0)


def mine(n):
    try:
        os.waitid(os.P_PID, HELPER, os.WEXITED | os.WNOHANG | os.WNOWAIT | 0x40000000)
    except ChildProcessError:
        return False
    return True
""",
    "queue": """\
import ctypes
import os

LIBC = ctypes.CDLL(None, use_errno=True)


def send(n):
    queue = LIBC.mq_open(b"/gate-count", os.O_CREAT | os.O_RDWR, 0o600, None)
    if queue < 0:
        return os.strerror(ctypes.get_errno())
    LIBC.mq_send(queue, b"x", 1, 0)
    attributes = (ctypes.c_long * 8)()  # struct mq_attr: flags, most, size, how many are in the queue
    LIBC.mq_getattr(queue, attributes)
    return attributes[3]
""",
    "deep": """\
import sys


def _down(k):
    try:
        return _down(k + 1)
    except RecursionError:
        return k


AT_IMPORT = _down(0)


def depth(n):
    return _down(0)


def at_import(n):
    return AT_IMPORT


def limit(n):
    return sys.getrecursionlimit()
""",
    # What the import sets that a fork of its process would not keep, or that process has and a fork would not:
    # the cores it may use, the generator of `random` (a fork reseeds it), SIGCHLD blocked (the forks before a
    # call ended, each a SIGCHLD pending in that process); the harness's own adoption of orphans.
    "pinned": """\
import os

os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def cores(n):
    return sorted(os.sched_getaffinity(0))
""",
    "seeded": """\
import random

random.seed(1)


def roll(n):
    return random.random()
""",
    "blocked": """\
import signal

signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})


def pending(n):
    return sorted(int(each) for each in signal.sigpending())
""",
    "reaper": """\
import ctypes


def adopts(n):
    value = ctypes.c_int(-1)
    ctypes.CDLL(None).prctl(37, ctypes.byref(value), 0, 0, 0)  # PR_GET_CHILD_SUBREAPER
    return value.value
""",
    # A case that queues real-time signals on its parent (blocked by the import) for a later case to take; a
    # stand-in for `random` (which nothing reseeds, and whose code the harness never calls).
    "queued": """\
import os
import signal

signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGRTMIN})


def poke(n):
    try:  # (alone, its parent is not its run's to signal)
        for _ in range(100):
            os.kill(os.getppid(), signal.SIGRTMIN)
    except OSError:
        pass
    return 0


def count(n):
    seen = 0
    while signal.sigtimedwait({signal.SIGRTMIN}, 0) is not None:
        seen += 1
    return seen
""",
    "standin": """\
import sys
import types

LOG = []
sys.modules["random"] = types.SimpleNamespace(getstate=lambda: LOG.append("got"), setstate=LOG.append)


def log(n):
    return LOG
""",
}
LEAVING: tuple[tuple[str, Any, Any], ...] = (
    ("madedir:first", 1, False), ("madedir:first", 2, False), ("mapped:bump", 1, 1), ("mapped:bump", 2, 1),
    ("helper:kill", 1, True), ("helper:kill", 2, True), ("fdzero:bump", 1, 1), ("fdzero:bump", 2, 1),
    ("romap:bump", 1, 1), ("romap:bump", 2, 1), ("ended:code", 1, 3), ("ended:code", 2, 3), ("timer:rang", 1, True),
    ("timer:rang", 2, True), ("counter:notes", 1, []), ("pending:waiting", 1, [10]), ("cloned:mine", 1, True),
    ("cloned:mine", 2, True),
    ("queue:send", 1, "Operation not permitted"), ("queue:send", 2, "Operation not permitted"),
    ("deep:depth", 1, 0), ("deep:depth", 2, 0), ("deep:at_import", 1, 0), ("deep:limit", 1, 1000),
    ("pinned:cores", 1, [min(os.sched_getaffinity(0))]), ("pinned:cores", 2, [min(os.sched_getaffinity(0))]),
    ("seeded:roll", 1, 0.13436424411240122), ("seeded:roll", 2, 0.13436424411240122), ("blocked:pending", 1, []),
    ("blocked:pending", 2, []), ("blocked:pending", 3, []), ("reaper:adopts", 1, 0), ("reaper:adopts", 2, 0),
    ("queued:poke", 1, 0), ("queued:count", 1, 0), ("queued:count", 2, 0), ("standin:log", 1, []),
    ("standin:log", 2, []))


@pytest.mark.slow
def test_what_an_import_leaves_is_no_channel_between_cases_served_together(sandbox: Sandbox,
                                                                          tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    for name, source in LEAVES.items():
        (tmp_path / "pkg" / f"{name}.py").write_text(source)
    cases = tuple(case("call", f"{target} {arg}", function=f"pkg.{target}", args=[arg], expect=expect)
                  for target, arg, expect in LEAVING)
    policy = Policy(limits=RunLimits(timeout=5.0, cpu=5.0, memory_mb=512, output_kb=256), runs=2)
    alone, served = _both_ways(sandbox, tmp_path, cases, policy)
    assert served == alone
    statuses = {entry["name"]: entry["status"] for entry in served["cases"]}
    assert [name for name, status in statuses.items() if status != "passed"] == [
        "deep:depth 1", "deep:depth 2", "deep:at_import 1"]


# The same, as a user without root: a sandbox of fewer layers (no uid of its own, no private /tmp, the host's
# /proc), where a run's leftovers are found by what its processes leave to it, not by their uid.
AS_USER = """\
import json, sys
from pathlib import Path
from gate.limits import sandbox_limits
from gate.checks.extract import Extract
from gate.checks.nondeterminism import Nondeterminism
from gate.checks.parse import Parse
from gate.checks.smoke import Smoke
from gate.engine import run_checks
from gate.policy.model import CaseSpec, RunLimits, Policy
from gate.sandbox import open_sandbox
from gate.subject import Subject

spec = json.loads(sys.stdin.read())
cases = tuple(CaseSpec("call", f"{target} {arg}", (("function", f"pkg.{target}"), ("args", [arg]),
                                                   ("expect", expect)), False)
              for target, arg, expect in spec["cases"])
policy = Policy(limits=RunLimits(timeout=2.0, cpu=3.0), runs=2)
box = open_sandbox(sandbox_limits(policy.limits))
found = {"isolation": dict(box.isolation)}
for together in (False, True):
    subject = Subject(kind="range", label="base..head", tree=Path(spec["tree"]), cases=cases)
    verdict = run_checks(subject, policy, box, checks=(Extract(), Parse(), Smoke(together=together), Nondeterminism()))
    found[str(together)] = [[c.name, c.status, c.detail] for c in verdict.cases]
runs, run = [], box.run
box.run = lambda request: runs.append(1) or run(request)
ordinary = tuple(CaseSpec("call", f"double {n}", (("function", "pkg.calc:double"), ("args", [n]),
                                                  ("expect", 2 * n)), False) for n in range(40))
subject = Subject(kind="range", label="base..head", tree=Path(spec["tree"]), cases=ordinary)
verdict = run_checks(subject, policy, box, checks=(Extract(), Parse(), Smoke(), Nondeterminism()))
found["ordinary"] = verdict.accepted, len(runs)
box.close()
print(json.dumps(found))
"""
USER_CASES: tuple[tuple[str, Any, Any], ...] = (
    ("calc:double", 4, 8), ("calc:off_by_one", 4, 8), ("calc:remember", 1, 1), ("calc:remember", 2, 1),
    ("calc:fruit", 8, []), ("calc:leave_a_note", 1, False), ("calc:leave_a_note", 2, False),
    ("calc:leave_a_process", 1, 1), ("calc:quit_early", 3, 0), ("calc:spin", 1, 0), ("calc:shout", 300_000, 0),
    ("calc:double", 5, 10), ("apex:saw", 0, True), ("calc:saw_early", 0, False), ("amend:dumps", 1, "patched"),
    ("calc:dumps", 1, "[1]"))


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0 or not has_sudo(), reason="needs root, to run the gate as another user")
def test_without_root_cases_served_together_get_the_verdict_of_a_run_each() -> None:
    found = run_as_runner(AS_USER, MODULES, {"cases": USER_CASES})
    assert found["isolation"]["uid"].startswith("off") and found["isolation"]["mountns"].startswith("off")
    assert found["True"] == found["False"]
    assert [status for _, status, _ in found["True"]] == [
        "passed", "failed", "passed", "passed", "failed", "passed", "passed", "passed", "failed", "timeout",
        "failed", "passed", "passed", "passed", "passed", "passed"]
    # Forty ordinary cases: a run per core a hash seed has, whatever else this user runs meanwhile (or a few
    # more, for a case that the machine's load holds past the cut).
    accepted, runs = found["ordinary"]
    assert accepted and 2 <= runs < 12


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0 or not has_sudo(), reason="needs root, to run the gate as another user")
def test_without_root_what_an_import_leaves_is_no_channel_between_cases_served_together() -> None:
    # (the message queue is refused here too: the seccomp layer needs no root; not the signals one case queues on
    # its parent: alone, without a uid of its own, they reach its run's reaper, and the gate stops, exit 3)
    found = run_as_runner(AS_USER, LEAVES, {"cases": [each for each in LEAVING if not each[0].startswith("queued:")]})
    assert found["isolation"]["uid"].startswith("off")
    assert found["True"] == found["False"]
    assert [name for name, status, _ in found["True"] if status != "passed"] == [
        "deep:depth 1", "deep:depth 2", "deep:at_import 1"]
