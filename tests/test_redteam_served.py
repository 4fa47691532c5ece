"""Red team: `call` cases served many to a run (gate/cases/harness/calls.py). The candidate's import runs in a
process that holds every case of its run in memory and the run's result channel: what it writes there says
only what its function could have returned, never a hidden case's arguments, and never stops the gate."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gate.checks.base import Check
from gate.checks.extract import Extract
from gate.checks.parse import Parse
from gate.checks.smoke import Smoke
from gate.engine import run_checks
from gate.policy.model import Policy, RunLimits
from gate.sandbox.base import Sandbox
from gate.subject import Subject
from tests.cases_support import Counted, case
from tests.redteam_support import (
    POLICY,
    assert_hidden_values_absent,
    assert_not_passed,
    bot_repo,
    check,
    healthy_after,
    new_marker,
)
from tests.runner_support import has_sudo, run_as_runner

# Lines on the served run's result channel, written by the candidate's import (it runs in the module's
# process, which holds the channel: the pipe among its descriptors).
LINES = """
import os, sys

def _lines(*texts):
    if "_gate_calls_main" not in sys.modules:
        return
    for fd in range(3, 64):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
                for text in texts:
                    os.write(fd, ("\\n" + text + "\\n").encode())
        except OSError:
            pass
"""


def running(together: bool) -> tuple[Check, ...]:
    """The checks that run a change's cases: extract and parse make its code whole, smoke runs it."""
    return Extract(), Parse(), Smoke(together=together)


@pytest.mark.slow
def test_a_record_nested_to_the_edge_of_the_recursion_limit_gives_a_verdict(tmp_path: Path) -> None:
    # One line per depth, deepest first: the first that the gate can parse counts, and its texts are then
    # read one level deeper than they were parsed.
    deep = "; ".join(
        f"_lines('{{\"i\": 0, \"record\": {{\"raised\": {'[' * depth}{']' * depth}}}, \"seconds\": 0}}')"
        for depth in range(1000, 960, -1))
    code = LINES + deep + "\n\ndef add(a, b):\n    return a + b\n"
    repo = bot_repo(tmp_path / "repo", code)
    run = check(repo, tmp_path)
    assert run.code in (0, 1), run.reports
    healthy_after(run, repo, tmp_path)


@pytest.mark.slow
def test_a_malformed_result_names_nothing_of_a_hidden_case(tmp_path: Path) -> None:
    # The function writes its own record, whose wire text has a tag the gate does not know: the tag spells
    # the arguments.
    code = ("import json, os\n\ndef add(a, b):\n"
            "    record = json.dumps({'ok': json.dumps({'t': f'{a} {b}', 'v': 0})}).encode()\n"
            "    for fd in range(3, 64):\n        try:\n            os.write(fd, record)\n"
            "        except OSError:\n            pass\n    os._exit(0)\n")
    repo = bot_repo(tmp_path / "repo", code)
    run = check(repo, tmp_path)
    assert_not_passed(run, "hidden case 1")
    assert_hidden_values_absent(run)
    healthy_after(run, repo, tmp_path)


@pytest.mark.parametrize("parts", ["[]", f"[{10 ** 400}, 0]"], ids=["no parts", "too big for a float"])
@pytest.mark.slow
def test_a_record_the_gate_cannot_decode_is_the_candidates_failure(tmp_path: Path, parts: str) -> None:
    # A complex number of no parts, or of a part no float holds, stopped the gate with IndexError or
    # OverflowError (exit 3, no verdict).
    code = ("import json, os\n\ndef add(a, b):\n"
            f"    record = json.dumps({{'ok': json.dumps({{'t': 'complex', 'v': {parts}}})}}).encode()\n"
            "    for fd in range(3, 64):\n        try:\n            os.write(fd, record)\n"
            "        except OSError:\n            pass\n    os._exit(0)\n")
    repo = bot_repo(tmp_path / "repo", code)
    run = check(repo, tmp_path)
    assert_not_passed(run, "adds", "hidden case 1")
    assert "malformed result" in run.case("adds")["detail"], run.case("adds")
    healthy_after(run, repo, tmp_path)


@pytest.mark.slow
def test_forged_seconds_keep_the_verdict_a_valid_one(tmp_path: Path) -> None:
    code = LINES + ("_lines('{\"i\": 0, \"record\": {\"ok\": \"5\"}, \"seconds\": NaN}')\n\n"
                    "def add(a, b):\n    return a + b\n")
    repo = bot_repo(tmp_path / "repo", code)
    run = check(repo, tmp_path)
    seconds = [case["seconds"] for case in run.verdict["cases"]]
    assert all(0 <= s < 1e6 for s in seconds), seconds
    healthy_after(run, repo, tmp_path)


# On its import in the served harness, the module stops the harness's main process (its parent) and itself,
# so that the run says nothing until its wall limit kills it; alone, it is honest.
STOPPER = """\
import os, signal, sys

if "_gate_calls_main" in sys.modules:
    os.kill(os.getppid(), signal.SIGSTOP)
    os.kill(os.getpid(), signal.SIGSTOP)


def double(n):
    return 2 * n
"""


def test_a_serving_stopped_by_the_import_waits_its_limit_once(sandbox: Sandbox, tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "calc.py").write_text(STOPPER)
    hidden = tuple(case("call", f"h{n}", function="pkg.calc:double", args=[n], expect=2 * n, hidden=True)
                   for n in range(6))
    subject = Subject(kind="range", label="base..head", tree=tmp_path, hidden_cases=hidden)
    policy = Policy(limits=RunLimits(timeout=1.0, cpu=1.0), runs=1)
    verdicts, runs = [], []
    for together in (False, True):
        counted = Counted(sandbox)
        verdicts.append(run_checks(subject, policy, counted, checks=running(together)))
        runs.append(counted.runs)
    assert [c.status for c in verdicts[1].cases] == [c.status for c in verdicts[0].cases] == ["passed"] * 6
    # The one run per seed that served them (side by side), each killed at its limit, then a run each: not a
    # stopped run per case.
    assert runs == [12, 14], runs


@pytest.mark.slow
def test_a_public_case_never_reports_what_its_run_holds_of_a_hidden_case(tmp_path: Path) -> None:
    # The import finds the request the harness holds (every case of its run, with its arguments) and the
    # function returns how many cases that is and the numbers in the other cases' arguments: the public
    # case's report quotes what came back.
    code = ("import re, sys\n\nFOUND = []\nframe = sys._getframe()\nwhile frame is not None:\n"
            "    request = frame.f_locals.get('request')\n"
            "    if isinstance(request, dict):\n"
            "        FOUND = [call.get('args') for call in request.get('calls', [request])]\n"
            "    frame = frame.f_back\n\n\ndef add(a, b):\n"
            "    others = [text for text in FOUND if f'[{a},{b}]' not in text]\n"
            "    return ' '.join([str(len(FOUND))] + re.findall('[0-9]+', ' '.join(others)))\n")
    repo = bot_repo(tmp_path / "repo", code)
    run = check(repo, tmp_path)
    assert_not_passed(run, "adds", "hidden case 1")
    # It found its run's request: one case, and the gate's two tripwires (calls of the case's function again).
    assert run.case("adds")["detail"] == "expected int 5, got str '3'"
    assert_hidden_values_absent(run)
    healthy_after(run, repo, tmp_path)


JUNK = [
    "[1, 2]", '"i"', "null", "{", '{"i": true, "record": {"ok": "5"}, "seconds": 0}',
    '{"i": false, "record": {"ok": "5"}, "seconds": 0}',
    '{"i": -1, "record": {"ok": "5"}, "seconds": 0}', '{"i": 1, "record": {"ok": "5"}, "seconds": 0}',
    '{"i": 0.0, "record": {"ok": "5"}, "seconds": 0}', '{"i": 0, "record": [1], "seconds": 0}',
    '{"i": 0, "record": {"ok": "5"}, "seconds": -1}', '{"i": 0, "record": {"ok": "5"}, "seconds": 1e308}',
    '{"i": 0, "record": {"ok": "5"}, "seconds": "0"}', '{"i": 0, "alone": 1, "cut": true}',
    '{"i": 0, "passed": true}',
    # The one line for case 0 that counts: a forged result of the wrong type.
    '{"i": 0, "record": {"ok": "true"}, "seconds": 0}',
    '{"i": 0, "record": {"ok": "5"}, "seconds": 0}', '{"i": 0, "record": {"ok": "777780"}, "seconds": 0}',
]


@pytest.mark.slow
def test_a_public_case_never_reports_what_a_hidden_cases_run_beside_it_shows(tmp_path: Path) -> None:
    # Each call locks the byte range of its arguments in its own file and looks in /proc/locks, which is the
    # machine's, for another process's lock: the public and the hidden cases' runs went side by side, and the
    # public case's report quoted the hidden case's arguments.
    code = """\
import fcntl
import os
import time


def add(a, b):
    handle = os.open(__file__, os.O_RDONLY)
    fcntl.lockf(handle, fcntl.LOCK_SH | fcntl.LOCK_NB, b, a, os.SEEK_SET)
    mine = (str(a), str(a + b - 1))  # (the public case's run under the other seed takes the same range)
    began = time.monotonic()
    while time.monotonic() - began < 1.5:
        with open("/proc/locks") as locks:
            for line in locks:
                seen = line.split()
                if len(seen) >= 8 and seen[1] == "POSIX" and (seen[6], seen[7]) != mine:
                    return f"{seen[6]} {seen[7]}"
        time.sleep(0.005)
    return a + b
"""
    repo = bot_repo(tmp_path / "repo", code)
    run = check(repo, tmp_path)
    assert_hidden_values_absent(run)
    healthy_after(run, repo, tmp_path)


# What a determined forger in its module's process can still do (docs/cases.md): find the run's request up the
# stack, where the gate's tripwires are marked for the harness to carry out, write the line the harness would
# for each of them and a forged one for every other call, and end the process as the harness ends it.
PLAN_READER = """\
import json, os, sys

if "_gate_calls_main" in sys.modules:
    wire = sys.modules["_gate_wire"]
    frame = sys._getframe()
    while "request" not in frame.f_locals:
        frame = frame.f_back
    for at, call in enumerate(frame.f_locals["request"]["calls"]):
        trip = call.get("tripwire")
        if trip is None:
            (a, b), _ = wire.loads(call["args"])
            record = {"ok": wire.dumps(a + b)}
        elif trip["trip"] == "fail":
            record = {"raised": "AssertionError", "message": ""}
        else:
            record = {"ok": wire.dumps(str(trip["token"]))}
        line = json.dumps({"i": at, "record": record, "seconds": 0.001})
        os.write(frame.f_locals["result"], f"\\n{line}\\n".encode())
    os._exit(0)


def add(a, b):
    return a - b
"""


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="open: code in the module's process that reads the run's request answers the tripwires "
                          "as the harness would (docs/cases.md, what a determined forger could still do)")
def test_a_forgery_that_reads_the_runs_request_is_caught(tmp_path: Path) -> None:
    repo = bot_repo(tmp_path / "repo", PLAN_READER)
    run = check(repo, tmp_path)
    if run.code not in (0, 1):  # (pytest.fail raises no AssertionError: a crash is no expected failure)
        pytest.fail(f"no verdict: {run.code}")
    assert_not_passed(run, "adds")


@pytest.mark.slow
def test_forged_lines_on_the_result_channel_are_no_result(tmp_path: Path) -> None:
    # The harness writes one line a call, and the gate's tripwires' lines are what it knows: a forged line is a
    # second one, or a tripwire's wrong one. Junk is ignored.
    code = LINES + f"_lines(*{JUNK!r})\n\n\ndef add(a, b):\n    return a + b\n"
    repo = bot_repo(tmp_path / "repo", code)
    run = check(repo, tmp_path)
    assert_not_passed(run, "adds", "hidden case 1")
    for name in ("adds", "hidden case 1"):
        found = run.case(name)
        assert found["status"] == "error" and found["detail"].startswith("no result: "), found
    assert {tamper["check"] for tamper in run.verdict["tampered"]} == {"smoke"}
    assert not [p for p in run.verdict["penalties"] if p["check"] in ("smoke", "timeout", "nondeterminism")]
    assert all(0 <= case["seconds"] < 60 for case in run.verdict["cases"])
    assert_hidden_values_absent(run)
    healthy_after(run, repo, tmp_path)


# The import replaces the harness's `_serve_case` (its module's process runs the harness's code after the
# import): each call then runs in that process, under none of a case's limits, and its record is sent as
# the harness would. Alone, `slow` runs out of time, and `burn` out of CPU; served, the gate's tripwire that
# must fail reads the function's value: no result.
UNLIMITED = """\
import sys
import time

harness = sys.modules.get("_gate_calls_main")
if harness is not None:
    wire = sys.modules["_gate_wire"]
    harness._serve_case = lambda request, function, call, spent, result: (wire.call(function, call["args"]), 0.0)


def slow(n):
    time.sleep(1.5)
    return 2 * n


def burn(n):
    began = time.process_time()
    while time.process_time() - began < 1.5:
        pass
    return 2 * n
"""


@pytest.mark.parametrize(("function", "timeout"), [("slow", 1.0), ("burn", 4.0)])
def test_a_served_case_has_no_more_time_than_a_run_of_its_own(sandbox: Sandbox, tmp_path: Path, function: str,
                                                              timeout: float) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "calc.py").write_text(UNLIMITED)
    hidden = (case("call", "h", function=f"pkg.calc:{function}", args=[3], expect=6, hidden=True),)
    subject = Subject(kind="range", label="base..head", tree=tmp_path, hidden_cases=hidden)
    policy = Policy(limits=RunLimits(timeout=timeout, cpu=1.0), runs=1)
    statuses = [[c.status for c in run_checks(subject, policy, sandbox, checks=running(together)).cases]
                for together in (False, True)]
    # Served, the module's process runs out of its run's time (the case then runs alone), or, should a
    # tripwire come first and fast, reads the function's value there: no result.
    assert statuses[0] == ["timeout"] and statuses[1] in (["timeout"], ["error"]), statuses


# The import replaces the harness's `_serve_case` with one that answers every call with the value the
# public case expects, at once (what a lookup of the policy's cases gives): the gate's tripwires among the
# calls get the same answer.
CANNED = """\
import sys

harness = sys.modules.get("_gate_calls_main")
if harness is not None:
    wire = sys.modules["_gate_wire"]
    harness._serve_case = lambda *_: ({"ok": wire.dumps(6)}, 0.0)


def double(n):
    return None
"""


def test_canned_answers_from_the_harness_are_no_result(sandbox: Sandbox, tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "calc.py").write_text(CANNED)
    cases = (case("call", "six", function="pkg.calc:double", args=[3], expect=6),
             case("call", "eight", function="pkg.calc:double", args=[4], expect=8))
    subject = Subject(kind="range", label="base..head", tree=tmp_path, cases=cases)
    policy = Policy(limits=RunLimits(timeout=2.0, cpu=2.0), runs=1)

    alone, served = (run_checks(subject, policy, sandbox, checks=running(together)) for together in (False, True))

    assert [c.status for c in alone.cases] == ["failed", "failed"] and not alone.tampered
    assert [c.status for c in served.cases] == ["error", "error"] and not served.accepted
    [tamper] = {t.seen.split(": ", 1)[1] for t in served.tampered}
    assert "the gate's tripwire" in tamper and "read another outcome" in tamper, served.tampered
    assert not [p for p in served.penalties if p.check in ("smoke", "timeout", "nondeterminism")]


# The import forks a process that stops the harness and the module's process, takes its time over the
# answer, writes it on the result channel, and lets both go on: each would still see its own clock run out,
# but what it waited for is on the channel.
HOLDER = LINES + """
import json, signal, time

harness = sys.modules.get("_gate_calls_main")
if harness is not None:
    frame = sys._getframe()
    while "request" not in frame.f_locals:
        frame = frame.f_back
    request, main, module = frame.f_locals["request"], os.getppid(), os.getpid()
    if os.fork() == 0:
        for pid in (main, module):
            os.kill(pid, signal.SIGSTOP)
        wire = sys.modules["_gate_wire"]
        (n,), _ = wire.loads(request["calls"][0]["args"])
        time.sleep(1.5)
        _lines(json.dumps({"i": 0, "record": {"ok": wire.dumps(2 * n)}, "seconds": 0}))
        for pid in (main, module):
            os.kill(pid, signal.SIGCONT)
        os._exit(0)


def slow(n):
    time.sleep(1.5)
    return 2 * n
"""


def test_a_harness_held_while_the_answer_is_worked_out_serves_nothing(sandbox: Sandbox, tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "calc.py").write_text(HOLDER)
    hidden = (case("call", "h", function="pkg.calc:slow", args=[3], expect=6, hidden=True),)
    subject = Subject(kind="range", label="base..head", tree=tmp_path, hidden_cases=hidden)
    policy = Policy(limits=RunLimits(timeout=1.0, cpu=1.0), runs=1)
    statuses = [[c.status for c in run_checks(subject, policy, sandbox, checks=running(together)).cases]
                for together in (False, True)]
    # Served, its forged line is either the second for its call or a tripwire's wrong one (no result), or, when
    # the harness never wrote its own, the run was held, and the case ran alone (out of time).
    assert statuses[0] == ["timeout"] and statuses[1] in (["timeout"], ["error"]), statuses


@pytest.mark.slow
def test_a_module_whose_cases_take_longer_than_a_run_is_served_in_turns(sandbox: Sandbox, tmp_path: Path
                                                                        ) -> None:
    # Each module's process has a run's time in all: forty honest cases of 60 ms go to a new import of their
    # module each half second, in the same runs, rather than to runs of their own.
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "calc.py").write_text("import time\n\n\ndef double(n):\n    time.sleep(0.06)\n"
                                              "    return 2 * n\n")
    cases = tuple(case("call", f"double {n}", function="pkg.calc:double", args=[n], expect=2 * n)
                  for n in range(40))
    subject = Subject(kind="range", label="base..head", tree=tmp_path, cases=cases)
    counted = Counted(sandbox)
    verdict = run_checks(subject, Policy(limits=RunLimits(timeout=1.0, cpu=1.0), runs=2), counted, checks=running(True))
    assert [c.status for c in verdict.cases] == ["passed"] * 40
    # A share per core a hash seed has, each in one run (or a few runs more, for a case that the machine's load
    # holds past the cut).
    assert 2 <= counted.runs < 16


@pytest.mark.slow
def test_a_held_harness_and_a_daemon_of_the_import_leave_nothing_behind(tmp_path: Path) -> None:
    marker = new_marker()
    code = ("import os, signal, subprocess, sys\n\n"
            "if '_gate_calls_main' in sys.modules:\n"
            f"    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)', {marker!r}],\n"
            "                     start_new_session=True)\n"
            "    os.kill(os.getppid(), signal.SIGSTOP)\n"
            "    os.kill(os.getpid(), signal.SIGSTOP)\n\n\n"
            "def add(a, b):\n    return a + b\n")
    # (held, the served run ends at its wall limit: a run's 2 s rather than the default 5 keeps the test short)
    repo = bot_repo(tmp_path / "repo", code, policy=POLICY + "limits: {timeout: 2}\n")
    run = check(repo, tmp_path)
    # Each case then ran alone, where the import does none of it.
    assert run.code == 0 and [c["status"] for c in run.verdict["cases"]] == ["passed", "passed"], run.reports
    healthy_after(run, repo, tmp_path, marker)


# The same attacks on the time a served case has, as a user without root (no uid of its own, the host's /proc).
AS_USER = """\
import json, sys
from pathlib import Path
from gate.limits import sandbox_limits
from gate.checks.extract import Extract
from gate.checks.parse import Parse
from gate.checks.smoke import Smoke
from gate.engine import run_checks
from gate.policy.model import CaseSpec, RunLimits, Policy
from gate.sandbox import open_sandbox
from gate.subject import Subject

spec = json.loads(sys.stdin.read())
found = {}
for target, timeout in spec["cases"]:
    hidden = (CaseSpec("call", "h", (("function", f"pkg.{target}"), ("args", [3]), ("expect", 6)), True),)
    policy = Policy(limits=RunLimits(timeout=timeout, cpu=1.0), runs=1)
    box = open_sandbox(sandbox_limits(policy.limits))
    subject = Subject(kind="range", label="base..head", tree=Path(spec["tree"]), hidden_cases=hidden)
    found[target] = [[c.status for c in run_checks(subject, policy, box, checks=(Extract(), Parse(), Smoke(together=t)))
                      .cases] for t in (False, True)]
    found["uid"] = box.isolation["uid"]
    box.close()
print(json.dumps(found))
"""


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0 or not has_sudo(), reason="needs root, to run the gate as another user")
def test_without_root_a_served_case_has_no_more_time_than_a_run_of_its_own() -> None:
    cases = [["unlimited:slow", 1.0], ["unlimited:burn", 4.0], ["holder:slow", 1.0]]
    found = run_as_runner(AS_USER, {"unlimited": UNLIMITED, "holder": HOLDER}, {"cases": cases})
    assert found.pop("uid").startswith("off")
    # Alone, out of time; served, out of time or no result (a tripwire, a second line), never passed.
    assert all(statuses[0] == ["timeout"] and statuses[1] in (["timeout"], ["error"])
               for statuses in found.values()), found
