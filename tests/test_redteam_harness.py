"""Red team: the harness belongs to the gate (docs/sandbox.md, docs/repository.md).

Each attack is a bot's PR that breaks every function the base's tests (or cases) check, and adds one file that
tries to have the gate's own programs in the sandbox (the suite's watcher, the case runners) or pytest run it:
a module named like a standard-library module at the top of the tree or of an import root, which the watcher
imports first thing or pytest imports late, or a package named like a harness module. Run as users deploy the
gate: `gate ci` as root, every layer on, seccomp on, against the fake GitHub; what is asserted is what the PR
shows (the status posted on its head, the gate's comment).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from gate.cases.harness import wire
from tests.fakegithub import FakeGitHub
from tests.fakegithub.scenario import Scenario
from tests.projects import BACKEND, gate_cache, gate_cache_root, offline_pip, pyproject, wheelhouse  # noqa: F401
from tests.redteam_support import ci_posted
from tests.suite_support import CALC, CONFTEST, POLICY, TESTS

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("offline_pip"),
              pytest.mark.skipif(os.geteuid() != 0, reason="the deployment's shape: gate ci as root")]

# Every function of the calculator wrong: no base test can pass honestly.
BROKEN = CALC.replace("a + b", "a - b").replace("a * b", "a + b").replace("a / b", "a * b")
# What a forger writes for every base test on the result channel (descriptor 3), from whichever process runs
# it: it reads the run's request (its key, the tests asked for) from stdin as the watcher would, finds the base's
# tests when the request names none, and ends the process before the harness reads anything. Nothing the
# imports or framework checks read: no `os`, no `sys.modules`.
FORGE = '''\
import json as _json, pathlib as _pathlib, re as _re, sys as _sys


def _forge():
    try:
        request = _json.loads(_sys.stdin.read())
    except Exception:
        return
    ids = request.get("select")
    if ids is None:
        ids = [f"{path.as_posix()}::{name}" for path in sorted(_pathlib.Path("tests").rglob("test_*.py"))
               for name in _re.findall(r"^def (test_\\w+)", path.read_text(), _re.M)]
    channel = open(3, "w", closefd=False)

    def write(record):
        channel.write(_json.dumps({**record, "key": request["key"]}) + "\\n")

    write({"collected": ids})
    for nodeid in ids:
        write({"start": nodeid})
        write({"test": nodeid, "status": "passed", "detail": "", "seconds": 0.0, "line": 1})
    write({"done": 0})
    channel.flush()
    raise SystemExit(0)
'''
# A `pdb` of the head's, which pytest imports as it configures itself (its debugging plugin), long after the
# tree is first on the path: it makes every report a pass, reaching pytest through `typing.sys`.
PDB = '''\
import typing

_reports = typing.sys.modules["_pytest.reports"]
_made = _reports.TestReport.from_item_and_call.__func__


def _passed(cls, item, call):
    report = _made(cls, item, call)
    report.outcome, report.longrepr = "passed", None
    return report


_reports.TestReport.from_item_and_call = classmethod(_passed)


def set_trace(*args, **kwargs):
    return None


class Pdb:
    pass
'''


def _suite_pr(fake: FakeGitHub, tmp_path: Path, head: dict[str, str | None], layout: str = "flat") -> Scenario:
    """A PR of the calculator project (tests: in its policy) that breaks every function and adds `head`."""
    module = "src/calc.py" if layout == "src" else "calc.py"
    base = {"_backend/backend.py": BACKEND, "pyproject.toml": pyproject("calc", [], extras={"test": ["checkhelp"]}),
            module: CALC, "tests/test_calc.py": TESTS, "tests/conftest.py": CONFTEST, ".github/gate.yml": POLICY}
    return Scenario(fake, tmp_path, base, {module: BROKEN, **head})


def _failed_honestly(body: str) -> None:
    """The comment charges every base test: each ran against the broken calculator and failed."""
    for test in ("test_add", "test_mul", "test_div", "test_div_by_zero"):
        assert re.search(rf"tests/test_calc.py::{test} failed( at \S+)? \(it passes on the base\)", body), body


@pytest.mark.parametrize(("where", "layout"), [("tempfile.py", "flat"), ("src/tempfile.py", "src")])
def test_a_standard_library_module_of_the_heads_is_never_what_the_watcher_imports(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str, layout: str) -> None:
    pr = _suite_pr(fake, tmp_path, {where: FORGE + "\n_forge()\n"}, layout)

    state, body = ci_posted(pr, monkeypatch)

    assert state == "failure"
    _failed_honestly(body)
    assert f"the change adds {where}, a module named like the standard library's `tempfile`" in body, body


def test_a_standard_library_module_pytest_imports_late_needs_a_human(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest imports `pdb` once the tree is first on its process's path, as `python -m pytest` has it: the
    head's runs in the tests' process, rewriting every report. It stays so (the project's CI would run it too),
    but it is for a human."""
    pr = _suite_pr(fake, tmp_path, {"pdb.py": PDB})

    state, body = ci_posted(pr, monkeypatch)

    assert state == "failure"
    assert "the change adds pdb.py, a module named like the standard library's `pdb`" in body, body


@pytest.mark.parametrize("where", ["_gate_suite_main/__init__.py", "src/_gate_suite_main.py"])
def test_a_file_named_like_the_suites_harness_is_never_what_runs(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """A package beside the harness's module wins over it in one folder, `src` comes before the working
    directory: the gate's harness is imported from nothing of the tree."""
    pr = _suite_pr(fake, tmp_path, {where: FORGE + "\n\ndef main():\n    _forge()\n"},
                   "src" if where.startswith("src/") else "flat")

    state, body = ci_posted(pr, monkeypatch)

    assert state == "failure"
    _failed_honestly(body)


CASES_POLICY = """\
budget: 1
cases:
  - {name: adds, function: "calc:add", args: [2, 3], expect: 5}
  - {name: multiplies, function: "calc:mul", args: [2, 3], expect: 6}
"""
# A wire module of the head's, which the case runners import to encode what a function returned: the gate's own
# (public) one, but every call answers the value the policy's case with those arguments expects (the policy is
# in the tree).
WIRE = (Path(wire.__file__).read_text() + '''

def call(function, encoded_args):
    import re

    args = loads(encoded_args)[0]
    text = open(".github/gate.yml").read()
    for name, found, expect in re.findall(r'function: "calc:(\\w+)", args: (\\[[^]]*\\]), expect: (\\S+)\\}', text):
        if name == function.__name__ and json.loads(found) == list(args):
            return {"ok": expect}
    return {"ok": "null"}
''')


@pytest.mark.parametrize("where", ["_gate_wire/__init__.py", "src/_gate_wire.py"])
def test_a_file_named_like_the_case_runners_wire_module_is_never_what_runs(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    module = "src/calc.py" if where.startswith("src/") else "calc.py"
    policy = CASES_POLICY + ("environment: {}\n" if module.startswith("src/") else "")
    pr = Scenario(fake, tmp_path, {".github/gate.yml": policy, module: CALC}, {module: BROKEN, where: WIRE})

    state, body = ci_posted(pr, monkeypatch)

    assert state == "failure"
    assert "case 1 (adds) failed: expected int 5, got int -1" in body, body
    assert "case 2 (multiplies) failed: expected int 6, got int 5" in body, body
