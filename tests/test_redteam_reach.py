"""Red-team attacks on the framework check's list of reaches (README "Gating with your own tests and
dependencies"): library code that patches pytest from the tests' own process without a name the check knew.
`object.__subclasses__()` lists every class the process has, pytest's `TestReport` among them; a function's
`__globals__` is its module's namespace; `vars(sys)` is `sys.modules` by another name. A wrong multiplication
whose module rewrites every report to "passed" must not be accepted: the check rejects it before anything runs,
and the tripwires catch it at run time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.engine import run_checks
from gate.policy_file import load_policy
from gate.subject import SourceFile, Subject
from tests.projects import gate_cache, gate_cache_root, offline_pip, wheelhouse  # noqa: F401
from tests.suite_support import BROKEN_MUL, POLICY, calc_project, framework_flags, score_repo

# Finds pytest's report class among every class of the process and makes each report a pass.
FORGE_BY_SUBCLASSES = '''\


def _classes(klass):
    for sub in type.__subclasses__(klass):
        yield sub
        yield from _classes(sub)


for _klass in list(_classes(object)):
    if _klass.__name__ == "TestReport" and _klass.__module__ == "_pytest.reports":
        _made = _klass.from_item_and_call

        def _passed(item, call, _made=_made):
            report = _made(item, call)
            report.outcome = "passed"
            report.longrepr = None
            return report

        _klass.from_item_and_call = staticmethod(_passed)
'''
REACHES = {
    "subclasses": "def f():\n    return object.__subclasses__()\n",
    "globals": "def f(g):\n    return g.__globals__\n",
    "builtins-of-a-function": "def f(g):\n    return g.__builtins__\n",
    "code": "def f(g):\n    g.__code__ = None\n",
    "closure": "def f(g):\n    return g.__closure__\n",
    "async-generator-frame": "def f(g):\n    return g.ag_frame\n",
    "vars-of-sys": "import sys\n\n\ndef f():\n    return vars(sys)['modules']\n",
    "dict-of-sys": "import sys\n\n\ndef f():\n    return sys.__dict__['modules']\n",
    "getattr-of-sys": "import sys\n\n\ndef f():\n    return getattr(sys, 'mod' + 'ules')\n",
    "sys-by-another-name": "import sys as s\n\n\ndef f():\n    return s._getframe(1)\n",
    "inspect-by-another-name": "import inspect as i\n\n\ndef f():\n    return i.stack()\n",
}
HONEST = {
    "vars-of-self": "class A:\n    def f(self):\n        return vars(self)\n",
    "dict-of-self": "class A:\n    def f(self):\n        return self.__dict__\n",
    "getattr-of-an-object": "def f(o, name):\n    return getattr(o, name)\n",
    "getattr-of-sys-constant": "import sys\n\n\ndef f():\n    return getattr(sys, 'version_info')\n",
}


def _flagged(code: str) -> list[str]:
    return framework_flags(code, "lib.py")


@pytest.mark.parametrize("name", sorted(REACHES))
def test_a_reach_into_the_interpreter_by_another_name_is_blocked(name: str) -> None:
    assert _flagged(REACHES[name]), name


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_introspection_is_not_flagged(name: str) -> None:
    assert not _flagged(HONEST[name]), name


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_library_code_that_patches_pytest_through_subclasses_is_blocked(tmp_path: Path) -> None:
    # Under the default budget: the imports check's 3 points for `__subclasses__` are within it.
    repo = calc_project(tmp_path / "repo", policy=POLICY.replace("budget: 1", "budget: 3"))
    repo.commit("bot: mul", {"calc.py": BROKEN_MUL + FORGE_BY_SUBCLASSES})

    verdict = score_repo(repo)

    # The static reach is the fast reject; at run time the tripwires see the forged passes all the same.
    assert verdict.tampered, verdict.blocked_reasons
    assert not verdict.accepted
    assert any("__subclasses__" in reason for reason in verdict.blocked_reasons), verdict.blocked_reasons


# Runs what a file the checks never read holds: the same forgery, kept in a data file.
EXEC_A_DATA_FILE = '''\


import pathlib

exec(pathlib.Path(__file__).with_name("calc_data.txt").read_text())
'''


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_library_code_that_runs_a_data_file_the_checks_never_read_is_blocked(tmp_path: Path) -> None:
    # Under the default budget: the imports check's 3 points for `exec` are within it.
    repo = calc_project(tmp_path / "repo", policy=POLICY.replace("budget: 1", "budget: 3"))
    repo.commit("bot: mul", {"calc.py": BROKEN_MUL + EXEC_A_DATA_FILE, "calc_data.txt": FORGE_BY_SUBCLASSES})

    verdict = score_repo(repo)

    assert verdict.tampered, verdict.blocked_reasons
    assert not verdict.accepted
    assert any("exec" in reason for reason in verdict.blocked_reasons), verdict.blocked_reasons


@pytest.mark.parametrize(("code", "flagged"), [
    ("exec(open('x.txt').read())\n", True),
    ("import builtins\n\nbuiltins.exec('x = 1')\n", True),
    ("x = eval('1 + 1')\n", True),
    ("import importlib\n\nm = importlib.import_module('calc_' + 'data')\n", True),
    ("m = __import__('json')\n", True),
    ("c = compile('1', 'f', 'eval')\n", True),
    ("import re\n\nc = re.compile('a+')\n", False),
    ("import json\n\nx = json.loads('{}')\n", False),
], ids=["exec", "builtins-exec", "eval", "import-module", "dunder-import", "compile", "re-compile", "json"])
def test_a_dynamic_loader_in_library_code_blocks_when_the_suite_runs(code: str, flagged: bool) -> None:
    assert bool(_flagged(code)) == flagged, code


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_a_forgery_in_a_file_the_policy_does_not_gate_is_still_read(tmp_path: Path) -> None:
    # `paths.exclude` leaves vendored code out of the score; the tests' process imports it all the same.
    policy = POLICY.replace("budget: 1", "budget: 1\npaths:\n  exclude: [\"vendor/**\"]")
    repo = calc_project(tmp_path / "repo", policy=policy)
    repo.commit("bot: mul", {"calc.py": BROKEN_MUL + "\n\nimport vendor.speedups  # noqa: E402,F401\n",
                             "vendor/__init__.py": "", "vendor/speedups.py": FORGE_BY_SUBCLASSES})

    verdict = score_repo(repo)

    assert verdict.tampered, verdict.blocked_reasons
    assert not verdict.accepted
    assert any("vendor/speedups.py" in reason for reason in verdict.blocked_reasons), verdict.blocked_reasons


@pytest.mark.parametrize(("vendored", "flagged"), [
    (FORGE_BY_SUBCLASSES, True),
    ("def fast_mul(a, b):\n    return a * b\n", False),
], ids=["forgery", "honest"])
def test_a_file_left_out_of_the_score_is_read_for_reaches(vendored: str, flagged: bool) -> None:
    policy = load_policy(None, text=POLICY + "paths:\n  exclude: [\"vendor/**\"]\n", source="gate.yml")
    subject = Subject(kind="range", label="a..b", files=(SourceFile("calc.py", "import vendor.fast\n"),
                                                          SourceFile("vendor/fast.py", vendored)))

    reasons = [r for r in run_checks(subject, policy).blocked_reasons if "test framework" in r]

    assert bool(reasons) == flagged, reasons
    assert all("vendor/fast.py" in reason for reason in reasons)
