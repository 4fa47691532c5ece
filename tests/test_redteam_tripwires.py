"""Red-team attacks on the suite's outcomes at run time (README invariant 17): library code that forges what
pytest reports in the tests' own process, with names decided at run time that no static reading follows. Each
head breaks `mul` (test_mul fails) and forges; the tripwires and the counts see it: the verdict is blocked for a
human, "the suite's results were tampered with", naming what was seen in which run, and the suite costs no
points. Honest suites of every shape read no tamper.
"""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest

from gate.engine import score
from gate.progress import progress_for
from gate.sources import gitcli
from gate.sources.gitrange import subject_from_commits
from gate.suite import run, tripwire
from gate.suite.harness import FAIL, PASS
from gate.suite.tripwire import Trip
from gate.verdict import Verdict
from tests.git_support import Repo
from tests.projects import gate_cache, gate_cache_root, offline_pip, wheelhouse  # noqa: F401
from tests.redteam_support import ROOT, check, leftovers, needs_root
from tests.runner_support import has_sudo, run_as_runner
from tests.suite_support import (
    BASE_TESTS,
    BROKEN_MUL,
    CALC,
    CONFTEST,
    POLICY,
    TESTS,
    calc_project,
    score_repo,
    suite_runs,
    suite_statuses,
)

pytestmark = pytest.mark.slow  # each builds a project's environment and runs its suite in the sandbox

# Flips a failed call's report to passed: the body each forgery that rewrites reports shares.
_FLIP = '''
def _flipped(record):
    if record.get("status") in ("failed", "error"):
        return {**record, "status": "passed", "detail": ""}
    return record
'''
FORGERIES = {
    # sys reached as another module's attribute: the test function never runs, every test passes.
    "runtest-via-typing": '''
import typing

typing.sys.modules["_pytest.python"].Function.runtest = lambda self: None
''',
    # pytest's report class patched: a failed call's report reads passed.
    "report-via-collections": '''
import collections

_reports = collections._sys.modules["_pytest.reports"]
_made = _reports.TestReport.from_item_and_call


def _passed(item, call):
    report = _made(item, call)
    if report.when == "call" and report.failed:
        report.outcome, report.longrepr = "passed", None
    return report


_reports.TestReport.from_item_and_call = _passed
''',
    # The gate's own plugin, found among every object of the process: its records rewritten as it writes them.
    "plugin-via-gc": '''
import gc
''' + _FLIP + '''

for _found in gc.get_objects():
    if type(_found).__name__ == "GatePlugin":
        _found.write = lambda record, _write=_found.write: _write(_flipped(record))
''',
    # The same plugin's class, through builtins' __import__ of the harness's module.
    "plugin-via-builtins": '''
import builtins
''' + _FLIP + '''
_harness = builtins.__import__("_gate_suite_main")
_write = _harness.GatePlugin.write
_harness.GatePlugin.write = lambda self, record: _write(self, _flipped(record))
''',
    # The plugin's writer called for every test, with the key it holds: "passed" before anything ran.
    "writer-for-every-test": '''
import gc

for _found in gc.get_objects():
    if type(_found).__name__ == "GatePlugin":
        for _name in ("test_add", "test_div", "test_div_by_zero", "test_mul"):
            _found.write({"test": f"tests/test_calc.py::{_name}", "status": "passed", "detail": ""})
''',
    # From a thread, while the tests run.
    "writer-from-a-thread": '''
import gc
import threading
import time


def _forge():
    # Polls until the gate's plugin exists (not a fixed sleep, which a fast suite outruns).
    while True:
        for _found in gc.get_objects():
            if type(_found).__name__ == "GatePlugin":
                _found.write({"test": "tests/test_calc.py::test_mul", "status": "passed", "detail": ""})
                return
        time.sleep(0.001)


threading.Thread(target=_forge, daemon=True).start()
''',
    # From an atexit hook, after the last test (the process ends with os._exit: that is made an exit that
    # runs the hooks).
    "writer-at-exit": '''
import atexit
import gc
import os
import sys


def _forge():
    for _found in gc.get_objects():
        if type(_found).__name__ == "GatePlugin":
            _found.write({"test": "tests/test_calc.py::test_mul", "status": "passed", "detail": ""})
            _found.flush()  # (the plugin holds a test's outcome back for the next record: out now)


atexit.register(_forge)
os._exit = sys.exit
''',
}
# Heads that try to tell the gate's tripwires from the suite's tests and forge only the suite's.
SPARING = {
    # Forges the tests the base's files define, runs anything else as it is: a tripwire has a test's name.
    "by-name-in-the-base-files": '''
import ast
import pathlib
import typing

_python = typing.sys.modules["_pytest.python"]
_run = _python.Function.runtest
_names = {node.name for path in pathlib.Path("tests").rglob("test_*.py")
          for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.FunctionDef)}


def _runtest(self):
    if self.originalname not in _names:
        _run(self)


_python.Function.runtest = _runtest
''',
    # Forges a test whose function is one its module defines: a tripwire calls that very function.
    "by-code-object": '''
import types
import typing

_python = typing.sys.modules["_pytest.python"]
_run = _python.Function.runtest


def _runtest(self):
    mine = {value.__code__ for value in vars(self.module).values() if isinstance(value, types.FunctionType)}
    if getattr(self.obj, "__code__", None) not in mine:
        _run(self)


_python.Function.runtest = _runtest
''',
    # Forges a test the first time it comes, runs it as it is when it comes again: a tripwire before its test
    # is forged.
    "by-order": '''
import typing

_python = typing.sys.modules["_pytest.python"]
_run = _python.Function.runtest
_seen = set()


def _runtest(self):
    if self.nodeid in _seen:
        _run(self)
    _seen.add(self.nodeid)


_python.Function.runtest = _runtest
''',
    # Forges the items pytest collected, runs anything else (an item it did not collect) as it is: a tripwire
    # is one of the collected items, the very object.
    "unknown-items-run-as-they-are": '''
import typing

_python = typing.sys.modules["_pytest.python"]
_run = _python.Function.runtest


def _runtest(self):
    if not any(self is item for item in self.session.items):
        _run(self)


_python.Function.runtest = _runtest
''',
}


# Heads that leave pytest alone and change what a test runs instead: the test's code, or a helper's. Each breaks
# what the changed test checks, with names decided at run time.
REPLACED = {
    # test_add (first to run) calls add, which replaces test_mul's code with code that checks nothing.
    "a-test-s-code-while-the-suite-runs": ("the code of test_calc.test_mul was replaced", BROKEN_MUL.replace(
        "def add(a, b):\n", "def add(a, b):\n    _spare()\n") + '''

import typing


def _spare():
    for module in list(typing.sys.modules.values()):
        if (getattr(module, "__file__", None) or "").endswith("test_calc.py"):
            setattr(module.test_mul, "__co" + "de__", (lambda two: None).__code__)
'''),
    # add (which test_add calls first) rebinds the name `same` of test_calc.py, the helper it imported, to one
    # that finds anything equal: seen before the next test of that module runs.
    "a-test-module-s-name-while-the-suite-runs": ("the name same of ", BROKEN_MUL.replace(
        "def add(a, b):\n", "def add(a, b):\n    _spare()\n") + '''

import typing


def _spare():
    for module in list(typing.sys.modules.values()):
        if (getattr(module, "__file__", None) or "").endswith("test_calc.py"):
            setattr(module, "sa" + "me", lambda a, b: True)
'''),
    # An installed test library's helper (checkhelp.same, which test_add calls) made to find anything equal,
    # at import, while pytest collects: before the gate can note it as it was.
    "an-installed-helper-s-code-at-import": ("the code of checkhelp.same was replaced (by code of ", '''\
import typing

setattr(typing.sys.modules["checkhelp"].same, "__co" + "de__", (lambda a, b: True).__code__)


''' + CALC.replace("return a + b", "return a - b")),
}


@pytest.mark.usefixtures("offline_pip")
@pytest.mark.parametrize("name", sorted(REPLACED))
def test_code_a_test_runs_replaced_is_a_tamper_and_costs_no_points(tmp_path: Path, name: str) -> None:
    seen, head = REPLACED[name]
    repo = calc_project(tmp_path / "repo")
    repo.commit("bot: calc", {"calc.py": head})

    verdict = score_repo(repo)

    assert_tampered(verdict, seen)


# An honest suite that patches as tests do: monkeypatch on its own module's names and the code under test's,
# unittest.mock, a decorated helper, a helper module of its own, a fixture that swaps a name for the module.
PATCHING = '''\
import functools
import sys
from unittest import mock

import pytest

import calc
from calc import add


def twice(check):
    @functools.wraps(check)
    def wrapper(*args):
        check(*args)
        check(*args)
    return wrapper


def helper(value):
    return value + 1


@pytest.fixture(scope="module")
def swapped():
    module = sys.modules[__name__]
    saved = module.helper
    module.helper = lambda value: value + 1
    yield
    module.helper = saved


@twice
def test_wrapped():
    assert add(1, 1) == 2


def test_monkeypatched_here(monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "helper", lambda value: value + 2)
    assert helper(1) == 3


def test_monkeypatched_there(monkeypatch):
    monkeypatch.setattr(calc, "mul", lambda a, b: 0)
    assert calc.mul(2, 3) == 0


def test_mocked():
    with mock.patch.object(calc, "div", return_value=7):
        assert calc.div(1, 1) == 7


def test_after_the_patches():
    assert helper(1) == 2 and calc.mul(2, 3) == 6


def test_in_a_swapped_module(swapped):
    assert helper(1) == 2
'''


@pytest.mark.usefixtures("offline_pip")
def test_an_honest_suite_that_patches_as_tests_do_reads_no_tamper(tmp_path: Path) -> None:
    repo = calc_project(tmp_path / "repo", extra_files={"tests/test_patching.py": PATCHING})
    repo.commit("bot: doc", {"calc.py": '"""A calculator."""\n\n' + CALC})

    verdict = score_repo(repo)

    assert verdict.accepted and not verdict.tampered, (verdict.blocked_reasons, verdict.penalties)
    assert set(suite_statuses(verdict).values()) == {"passed"} and len(suite_statuses(verdict)) == 4 + 6


# An honest suite whose tests patch for good, as wrapt's monkey patching tests do: a test rebinds a name of its
# module and replaces the code of a helper module's function, and leaves them so for the tests after it (in its
# file and in another). The base's own tests do the same: the base runs them before the test the change was
# seen before, as the head's run did, and shows it too.
HELPERS = "def double(value):\n    return value * 2\n"
FOR_GOOD = '''\
import sys

import helpers


def target():
    return 1


def test_a_patches_for_good():
    module = sys.modules[__name__]
    original = module.target
    module.target = lambda: original()
    helpers.double.__code__ = (lambda value: value + value).__code__
    assert target() == 1


def test_b_after_it():
    assert target() == 1 and helpers.double(2) == 4
'''
AFTER_IN_ANOTHER_FILE = "import helpers\n\n\ndef test_c_in_another_file():\n    assert helpers.double(3) == 6\n"


@pytest.mark.usefixtures("offline_pip")
def test_an_honest_suite_whose_tests_patch_for_good_reads_no_tamper(tmp_path: Path) -> None:
    repo = calc_project(tmp_path / "repo", extra_files={"tests/helpers.py": HELPERS, "tests/test_for_good.py": FOR_GOOD,
                                                        "tests/test_for_good_too.py": AFTER_IN_ANOTHER_FILE})
    repo.commit("bot: doc", {"calc.py": '"""A calculator."""\n\n' + CALC})

    verdict = score_repo(repo)

    assert verdict.accepted and not verdict.tampered, (verdict.blocked_reasons, verdict.penalties)
    assert set(suite_statuses(verdict).values()) == {"passed"} and len(suite_statuses(verdict)) == 4 + 3


# The suite's own test rebinds `same` for good; then the head's add rebinds it once more, to one that finds
# anything equal, and breaks mul. The control run replays the suite's own rebinding on the base: the head's is
# another change, of another object, and still evidence.
REBINDS = TESTS.replace("def test_add(", "def test_a_wrap():\n    global same\n    kept = same\n\n"
                                         "    def wrapped(a, b):\n        return kept(a, b)\n    same = wrapped\n\n\n"
                                         "def test_add(", 1)
# A head whose changed parameter ids put the change before a test the base does not have (test_p[c]).
MODES = CALC + "\n\nMODES = ['a', 'b']\n\n\ndef run(mode):\n    return mode\n"
MODES_TESTS = TESTS + "\n\n@pytest.mark.parametrize('mode', __import__('calc').MODES)\ndef test_p(mode):\n" \
                      "    assert same(__import__('calc').run(mode), mode)\n"


@pytest.mark.usefixtures("offline_pip")
def test_a_head_that_rebinds_a_name_the_suite_rebound_for_good_is_a_tamper(tmp_path: Path) -> None:
    seen, head = REPLACED["a-test-module-s-name-while-the-suite-runs"]
    repo = calc_project(tmp_path / "repo", POLICY + "  workers: 1\n", extra_files={"tests/test_calc.py": REBINDS})
    repo.commit("bot: calc", {"calc.py": head})

    verdict = score_repo(repo)

    assert_tampered(verdict, seen)
    assert "lambda" in verdict.tampered[0].seen  # what it was bound to: told apart from the suite's own


def _scored(repo: Repo) -> tuple[Verdict, str]:
    """The verdict on main..bot, with the progress lines a user sees."""
    lines = io.StringIO()
    handle = gitcli.Repo(repo.root)
    with subject_from_commits(handle, handle.commit("main").hexsha, handle.commit("bot").hexsha) as found:
        return score(found, progress_for(lines, {})), lines.getvalue()


# Tests enough that the run's random tripwires seldom land on a test that patches (a tripwire's run of it before
# its own makes one more suspect, a control run the kept ones do not answer).
MANY = "import pytest\n\n\n@pytest.mark.parametrize('n', range(60))\ndef test_many(n):\n    assert n >= 0\n"


@pytest.mark.usefixtures("offline_pip")
def test_a_suite_that_patches_for_good_runs_its_control_run_once_per_base(tmp_path: Path) -> None:
    # wrapt's monkey patching tests had a control run of most of its suite on every push: what the base showed
    # before each test is kept with the baseline, so the same suspects in the same place need no run again.
    repo = calc_project(tmp_path / "repo", POLICY + "  workers: 1\n", extra_files={
        "tests/helpers.py": HELPERS, "tests/test_for_good.py": FOR_GOOD, "tests/test_for_good_too.py":
        AFTER_IN_ANOTHER_FILE, "tests/test_many.py": MANY, "NOTES": f"{tmp_path}\n"})  # (a base of its own)
    repo.commit("bot: doc", {"calc.py": '"""A calculator."""\n\n' + CALC})

    verdicts = [_scored(repo) for _ in range(3)]

    for verdict, _ in verdicts:
        assert verdict.accepted and not verdict.tampered, (verdict.blocked_reasons, verdict.penalties)
    ran = [said.count("the control run: ") > 0 for _, said in verdicts]
    assert ran[0] and ran[1:] != [True, True], ran


# The suite's own test rebinds `same` for good and calls the code under test; the head's add rebinds it once more
# there, to one that finds anything equal: seen before the same test as the suite's own rebinding.
REBINDS_CALLING = REBINDS.replace("    same = wrapped\n", "    same = wrapped\n    assert add(1, 1) == 2\n", 1)
REBINDS_ONCE = BROKEN_MUL.replace("def add(a, b):\n", "def add(a, b):\n    _spare()\n") + '''

import typing

_SPARED = []


def _spare():
    for module in list(typing.sys.modules.values()):
        if (getattr(module, "__file__", None) or "").endswith("test_calc.py") and not _SPARED:
            _SPARED.append(module)
            setattr(module, "sa" + "me", lambda a, b: True)
'''


@pytest.mark.usefixtures("offline_pip")
def test_a_rebinding_head_is_a_tamper_where_an_honest_heads_control_run_was_kept(tmp_path: Path) -> None:
    # An honest head's control run on the base is kept; the next head rebinds the name the suite rebinds, before
    # the same test. What the base showed there is not what the head's run shows: evidence without a run.
    repo = calc_project(tmp_path / "repo", POLICY + "  workers: 1\n", extra_files={
        "tests/test_calc.py": REBINDS_CALLING, "tests/test_many.py": MANY, "NOTES": f"{tmp_path}\n"})
    repo.commit("bot: doc", {"calc.py": '"""A calculator."""\n\n' + CALC})
    honest, said = _scored(repo)
    assert honest.accepted and not honest.tampered, (honest.blocked_reasons, honest.penalties)
    assert "the control run: " in said
    repo.git("checkout", "-q", "-B", "bot", "main")
    repo.commit("bot: calc", {"calc.py": REBINDS_ONCE})

    attacked = [_scored(repo) for _ in range(3)]

    for verdict, _ in attacked:
        assert_tampered(verdict, "the name same of ")
        assert "lambda" in verdict.tampered[0].seen
    assert not all("the control run: " in said for _, said in attacked)  # (judged by a kept run)


@pytest.mark.usefixtures("offline_pip")
def test_a_change_seen_before_a_test_the_head_collects_under_another_id_is_a_tamper(tmp_path: Path) -> None:
    seen, spare = REPLACED["a-test-module-s-name-while-the-suite-runs"]
    head = MODES.replace("return a * b", "return a + b").replace("'b']", "'c']").replace(
        "def run(mode):\n", "def run(mode):\n    _spare()\n") + spare[spare.index("\n\nimport typing"):]
    repo = calc_project(tmp_path / "repo", POLICY + "  workers: 1\n",
                        extra_files={"calc.py": MODES, "tests/test_calc.py": MODES_TESTS})
    repo.commit("bot: calc", {"calc.py": head})

    verdict = score_repo(repo)

    assert_tampered(verdict, seen)


@pytest.mark.usefixtures("offline_pip")
def test_tripwires_before_a_test_whose_module_fixture_swaps_a_name_read_no_change(tmp_path: Path) -> None:
    # Two tripwires run test_in_a_swapped_module once more before its own run: after the first, its module's
    # fixture holds the name it swapped, as it does for the test's own run. The test's own doing, not a change
    # to what it checks (the random plan put two tripwires there in about one run of seven of the test above,
    # and the change was read as tampering).
    repo = calc_project(tmp_path / "repo", extra_files={"tests/test_patching.py": PATCHING})
    repo.commit("bot: doc", {"calc.py": '"""A calculator."""\n\n' + CALC})
    host = "tests/test_patching.py::test_in_a_swapped_module"
    trips = (Trip(FAIL, True, host=host), Trip(PASS, True, host=host))

    with suite_runs(repo) as (sandbox, _, head, deadline):
        _, records = run._run_once(sandbox, head, ["tests/test_patching.py"], None, deadline - time.monotonic(),
                                   trips)

    assert [record for record in records if "replaced" in record] == []
    found = tripwire.read(records, trips, None, "run 1")
    assert not found.tampered and not found.suspects and len(found.trips) == 2


def _forged(tmp_path: Path, forgery: str) -> Verdict:
    repo = calc_project(tmp_path / "repo")
    repo.commit("bot: mul", {"calc.py": forgery + "\n\n" + BROKEN_MUL})
    return score_repo(repo)


def assert_tampered(verdict: Verdict, seen: str = "") -> None:
    """Blocked for a human as tampered with, naming what was seen (`seen`, when given), with no points for
    the suite."""
    assert not verdict.accepted
    reasons = [reason for reason in verdict.blocked_reasons if "the suite's results were tampered with" in reason]
    assert len(reasons) == 1 and seen in reasons[0], verdict.blocked_reasons
    assert verdict.tampered and verdict.tampered[0].check == "tests" and seen in verdict.tampered[0].seen
    assert "run 1" in reasons[0] and "the head's tests" in reasons[0], reasons
    assert not [p for p in verdict.penalties if p.check in ("tests", "timeout")], verdict.penalties
    assert not suite_statuses(verdict), "a tampered run's outcomes are no result"


@pytest.mark.usefixtures("offline_pip")
@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_a_forged_outcome_is_a_tamper_and_costs_no_points(tmp_path: Path, name: str) -> None:
    verdict = _forged(tmp_path, FORGERIES[name])

    assert_tampered(verdict)


@pytest.mark.usefixtures("offline_pip")
def test_a_forged_suites_verdict_still_says_what_the_change_did_to_the_tests(tmp_path: Path) -> None:
    """The human a forgery goes to reads the test edits that came with it too."""
    repo = calc_project(tmp_path / "repo")
    repo.commit("bot: mul", {"calc.py": FORGERIES["runtest-via-typing"] + "\n\n" + BROKEN_MUL,
                             "tests/test_calc.py": TESTS + "\n# agreed\n"})

    verdict = score_repo(repo)

    assert_tampered(verdict)
    assert ("tests", "the change edits tests/test_calc.py: the base's version ran") in \
        [(note.source, note.message) for note in verdict.notes], verdict.notes


@pytest.mark.usefixtures("offline_pip")
@pytest.mark.parametrize("name", sorted(SPARING))
def test_a_forgery_that_tries_to_spare_the_tripwires_trips_one(tmp_path: Path, name: str) -> None:
    verdict = _forged(tmp_path, SPARING[name])

    # What it achieves: its forged passes are no result, and a tripwire that must fail read passed.
    assert_tampered(verdict, "which must fail) read passed")


@pytest.mark.usefixtures("offline_pip")
def test_an_honest_regression_is_charged_and_no_tamper(tmp_path: Path) -> None:
    verdict = _forged(tmp_path, "")

    assert suite_statuses(verdict)["tests/test_calc.py::test_mul"] == "failed"
    assert [p.check for p in verdict.penalties] == ["tests"]
    assert not verdict.tampered and not verdict.accepted


@pytest.mark.usefixtures("offline_pip")
def test_an_honest_change_is_accepted(tmp_path: Path) -> None:
    repo = calc_project(tmp_path / "repo")
    repo.commit("bot: doc", {"calc.py": '"""A calculator."""\n\n' + CALC})

    verdict = score_repo(repo)

    assert suite_statuses(verdict) == dict.fromkeys(BASE_TESTS, "passed")
    assert verdict.accepted and not verdict.tampered, verdict.blocked_reasons


# Tests of every shape the tripwires may land on: parametrized, with fixtures of every scope, autouse, xfail
# strict and not, skipif, order-dependent, in classes, unittest's (setUp, expectedFailure, skip).
SHAPES = '''\
import unittest

import pytest

from calc import add, div, mul

SEEN = []


@pytest.fixture(autouse=True)
def counted():
    SEEN.append("set up")
    yield
    SEEN.append("torn down")


@pytest.fixture(scope="module")
def table():
    return {"two": 2}


@pytest.mark.parametrize(("a", "b", "c"), [(1, 2, 3), (2, 2, 4), (0, 0, 0)])
def test_add_cases(a, b, c):
    assert add(a, b) == c


def test_module_fixture(table, tmp_path):
    (tmp_path / "x").write_text("x")
    assert mul(table["two"], 3) == 6


@pytest.mark.xfail(reason="known", strict=True)
def test_strict_xfail():
    assert div(1, 1) == 2


@pytest.mark.xfail(reason="not strict")
def test_lax_xfail():
    assert False


@pytest.mark.skipif(True, reason="never here")
def test_skipped():
    assert False


ORDER = []


def test_order_first():
    ORDER.append(1)


def test_order_second():
    assert ORDER == [1]


class TestClass:
    def setup_method(self):
        self.value = add(1, 1)

    def test_value(self):
        assert self.value == 2

    @pytest.mark.parametrize("n", [1, 2])
    def test_param(self, n):
        assert mul(n, 1) == n


class TestUnit(unittest.TestCase):
    def setUp(self):
        self.value = mul(2, 2)

    def test_value(self):
        self.assertEqual(self.value, 4)

    @unittest.expectedFailure
    def test_expected(self):
        self.assertEqual(1, 2)

    @unittest.skip("never")
    def test_skipped(self):
        pass
'''


@pytest.mark.usefixtures("offline_pip")
@pytest.mark.parametrize("maxfail", ["", "-x"], ids=["plain", "exitfirst"])
def test_an_honest_change_to_a_suite_of_every_shape_reads_no_tamper(tmp_path: Path, maxfail: str) -> None:
    config = {"pytest.ini": f"[pytest]\naddopts = {maxfail}\n"} if maxfail else {}
    repo = calc_project(tmp_path / "repo", extra_files={"tests/test_shapes.py": SHAPES, **config})
    repo.commit("bot: doc", {"calc.py": '"""A calculator."""\n\n' + CALC})

    for _ in range(3):  # the tripwires land elsewhere each time
        verdict = score_repo(repo)

        assert verdict.accepted and not verdict.tampered, (verdict.blocked_reasons, verdict.penalties)
        statuses = suite_statuses(verdict)
        assert len(statuses) == 4 + 15, statuses
        assert statuses["tests/test_shapes.py::test_order_second"] == "passed"


# A conftest that acts on failures it sees: pytest's "incremental" recipe (a class's steps xfail after one
# fails) and pytest-dependency's way (a test is skipped when one it depends on did not pass). A tripwire's
# failure is one they see too: what they skip or xfail after it runs again, away from any tripwire's failure.
FOLLOWING = CONFTEST + '''

_failed = {}
_passed = {}


def pytest_runtest_makereport(item, call):
    if call.when == "call":
        _passed[item.name] = call.excinfo is None
    if "incremental" in item.keywords and call.excinfo is not None:
        _failed.setdefault(str(item.cls), item.name)


def pytest_runtest_setup(item):
    if "incremental" in item.keywords and str(item.cls) in _failed:
        pytest.xfail(f"previous test failed ({_failed[str(item.cls)]})")
    for marker in item.iter_markers("depends"):
        for name in marker.args:
            if not _passed.get(name):
                pytest.skip(f"depends on {name}")
'''
STEPS = '''\
import pytest

from calc import add, mul


@pytest.mark.incremental
class TestSteps:
    def test_one(self):
        assert add(1, 1) == 2

    def test_two(self):
        assert add(2, 2) == 4

    def test_three(self):
        assert mul(3, 3) == 9


def test_first():
    assert mul(1, 1) == 1


@pytest.mark.depends("test_first")
def test_second():
    assert mul(2, 1) == 2


@pytest.mark.depends("test_second")
def test_third():
    assert add(3, 0) == 3
'''
MARKERS = "[pytest]\nmarkers =\n    incremental: steps\n    depends: names\n"


@pytest.mark.usefixtures("offline_pip")
def test_a_conftest_that_follows_failures_gets_no_false_charge(tmp_path: Path) -> None:
    repo = calc_project(tmp_path / "repo", extra_files={
        "tests/conftest.py": FOLLOWING, "tests/test_steps.py": STEPS, "pytest.ini": MARKERS})
    repo.commit("bot: doc", {"calc.py": '"""A calculator."""\n\n' + CALC})

    for _ in range(3):  # the tripwires land elsewhere each time
        verdict = score_repo(repo)

        assert verdict.accepted and not verdict.tampered, (verdict.blocked_reasons, verdict.penalties)
        assert set(suite_statuses(verdict).values()) == {"passed"}

    repo.commit("bot: mul", {"calc.py": BROKEN_MUL})
    verdict = score_repo(repo)
    # A regression still costs what it breaks, and what follows it there.
    statuses = suite_statuses(verdict)
    assert statuses["tests/test_steps.py::test_first"] == "failed"
    assert statuses["tests/test_steps.py::test_third"] == "failed"  # (skipped where the base passed)
    assert "tests/test_steps.py::test_third was skipped" in " ".join(p.message for p in verdict.penalties)


# A base conftest that turns every failure into a pass (a quarantine of known failures, done wholesale): the
# gate's tripwires read passed there too. The base's own run of them says so, so it is the suite's way, not
# tampering; the change is scored as that suite reports.
QUARANTINE = CONFTEST + '''

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        report.outcome, report.longrepr = "passed", None
'''


@pytest.mark.usefixtures("offline_pip")
def test_a_base_that_rewrites_its_own_outcomes_is_no_tamper(tmp_path: Path) -> None:
    repo = calc_project(tmp_path / "repo", extra_files={"tests/conftest.py": QUARANTINE})
    repo.commit("bot: doc", {"calc.py": '"""A calculator."""\n\n' + CALC})

    verdict = score_repo(repo)

    assert verdict.accepted and not verdict.tampered, verdict.blocked_reasons


@needs_root
@pytest.mark.usefixtures("offline_pip")
def test_gate_check_as_root_with_every_layer_reports_the_tamper_in_one_line(tmp_path: Path) -> None:
    """The deployment's shape: `gate check` as its own process, as root, every layer on, seccomp on; what the
    terminal, the comment and the job summary say."""
    repo = calc_project(tmp_path / "repo")
    repo.commit("bot: mul", {"calc.py": FORGERIES["report-via-collections"] + "\n\n" + BROKEN_MUL})

    run = check(repo, tmp_path)

    assert run.code == 1 and not run.verdict["accepted"], run.reports
    isolation = run.verdict["isolation"]
    assert all(isolation[layer].startswith("on") for layer in ("seccomp", "netns", "mountns")), isolation
    assert isolation["uid"].startswith("uid "), isolation
    tampered = run.verdict["tampered"]
    assert tampered and all(t["check"] == "tests" and "which must fail) read passed" in t["seen"] for t in tampered)
    assert not [p for p in run.verdict["penalties"] if p["check"] in ("tests", "timeout")]
    # One line in each report (the terminal wraps it at 80 columns): what was seen, in which run, no points.
    lines = [line for line in run.reports.splitlines() if "the suite's results were tampered with" in line]
    assert len(lines) >= 2 and all("the head's tests, run 1" in line and "read passed" in line
                                   for line in lines if line.startswith("- ")), lines
    assert not leftovers(run, tmp_path)


# The same, as a user without root (no uid of its own for the tests, no network namespace): the tripwires do not
# depend on a layer. What each script runs as that user first: the base's repository, and `scored`, a head of
# calc.py scored against it.
_AS_USER_REPO = """\
import io, json, sys
from pathlib import Path

import git

from gate.engine import score
from gate.progress import QUIET, progress_for
from gate.sources import gitcli
from gate.sources.gitrange import subject_from_commits

spec = json.loads(sys.stdin.read())
root = Path(spec["tree"]) / "repo"
repo = git.Repo.init(root, initial_branch="main")
with repo.config_writer() as config:
    config.set_value("user", "name", "t").set_value("user", "email", "t@example.com")
for name, text in spec["base"].items():
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(text)
repo.git.add("-A")
repo.index.commit("base")


def scored(head, progress=QUIET):
    repo.git.checkout("-q", "-B", "bot", "main")
    (root / "calc.py").write_text(head)
    repo.git.add("-A")
    repo.index.commit("bot")
    handle = gitcli.Repo(root)
    with subject_from_commits(handle, handle.commit("main").hexsha, handle.commit("bot").hexsha) as found:
        return score(found, progress)
"""


AS_USER = _AS_USER_REPO + """
verdict = scored(spec["head"])
print(json.dumps({"uid": dict(verdict.isolation)["uid"], "accepted": verdict.accepted,
                  "tampered": [t.seen for t in verdict.tampered],
                  "charged": [p.check for p in verdict.penalties if p.check in ("tests", "timeout")]}))
"""


@pytest.mark.skipif(not ROOT or not has_sudo(), reason="needs root, to run the gate as another user")
@pytest.mark.parametrize(("head", "seen"), [
    (FORGERIES["runtest-via-typing"] + "\n\n" + BROKEN_MUL, "which must fail) read passed"),
    tuple(reversed(REPLACED["a-test-s-code-while-the-suite-runs"]))], ids=["report-forged", "test-code-replaced"])
def test_as_a_user_without_root_a_forgery_is_a_tamper_too(head: str, seen: str) -> None:
    base = {"calc.py": CALC, "tests/test_calc.py": TESTS.replace("from checkhelp import same\n", "").replace(
        "assert same(add(two, 3), 5)", "assert add(two, 3) == 5"), "tests/conftest.py": CONFTEST,
            ".github/gate.yml": POLICY.replace("environment:\n  extras: [test]\n", "environment: null\n")}
    found = run_as_runner(AS_USER, {}, {"base": base, "head": head})
    assert found["uid"].startswith("off"), found
    assert not found["accepted"] and not found["charged"], found
    assert found["tampered"] and seen in found["tampered"][0], found


# An honest head, then heads that each rebind a name the suite rebinds, scored one after the other by the same user
# (its own cache, where the honest head's control run is kept).
AS_USER_HEADS = _AS_USER_REPO + """
found = []
for head in spec["heads"]:
    lines = io.StringIO()
    verdict = scored(head, progress_for(lines, {}))
    found.append({"uid": dict(verdict.isolation)["uid"], "accepted": verdict.accepted,
                  "tampered": [t.seen for t in verdict.tampered], "control": "the control run: " in lines.getvalue()})
print(json.dumps(found))
"""


@pytest.mark.skipif(not ROOT or not has_sudo(), reason="needs root, to run the gate as another user")
def test_as_a_user_without_root_a_kept_control_run_spares_no_rebinding_head() -> None:
    tests = REBINDS_CALLING.replace("from checkhelp import same\n", "\n\ndef same(a, b):\n    return a == b\n")
    base = {"calc.py": CALC, "tests/test_calc.py": tests, "tests/test_many.py": MANY, "tests/conftest.py": CONFTEST,
            ".github/gate.yml": POLICY.replace("environment:\n  extras: [test]\n", "environment: null\n")
            + "  workers: 1\n"}
    honest = '"""A calculator."""\n\n' + CALC

    found = run_as_runner(AS_USER_HEADS, {}, {"base": base, "heads": [honest, *[REBINDS_ONCE] * 3]})

    assert all(each["uid"].startswith("off") for each in found), found
    assert found[0]["accepted"] and not found[0]["tampered"] and found[0]["control"], found[0]
    for each in found[1:]:
        assert not each["accepted"] and each["tampered"] and "lambda" in each["tampered"][0], each
    assert not all(each["control"] for each in found[1:]), found  # (judged by a kept run)


# What a determined forger in the tests' process can still do (docs/repository.md): read the gate's plan from
# the harness's own plugin, found among every object of the process, and run the tripwires as they are.
PLAN_READER = '''
import typing

_python = typing.sys.modules["_pytest.python"]
_run = _python.Function.runtest
_plugin = next(found for found in typing.sys.modules["gc"].get_objects() if type(found).__name__ == "GatePlugin")


def _runtest(self):
    if _plugin._armed:
        _run(self)


_python.Function.runtest = _runtest
'''


@pytest.mark.usefixtures("offline_pip")
@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="open: code in the tests' process that reads the gate's plan from the harness's objects "
                          "spares the tripwires (docs/repository.md, what a determined forger could still do)")
def test_a_forgery_that_reads_the_gates_plan_is_caught(tmp_path: Path) -> None:
    verdict = _forged(tmp_path, PLAN_READER)

    assert not verdict.accepted, "the broken test read passed, and nothing else saw it"
