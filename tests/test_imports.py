"""The imports check, attacked with the ways a candidate reaches a module it should not have."""

from __future__ import annotations

import pytest

from gate.policy.model import ImportRules, Points, Policy
from gate.subject import SourceFile, Task
from tests.helpers_static import check, fenced, penalty, score_files, score_reply

# No deny-list, so that these tests see the allow-list and the dynamic-loader rule on their own.
OPEN = Policy(imports=ImportRules(deny=()))
SUM_TASK = Task("sum-two-numbers", allowed_imports=("sys",))


def test_import_os_under_an_allow_list_of_sys_costs_three() -> None:
    verdict = score_reply(fenced("import sys\nimport os\nprint(os.getcwd())\n"), OPEN, SUM_TASK)
    found = penalty(verdict, "imports")
    assert found.points == 3
    assert "import os (solution.py:2): os is not in the allow-list (sys)" in found.message
    assert [(loc.path, loc.line) for loc in found.locations] == [("solution.py", 2)]


def test_policy_allow_list_applies_without_a_task() -> None:
    policy = Policy(imports=ImportRules(allow=("sys", "xml"), deny=()))
    assert score_reply(fenced("import sys\nimport xml.etree.ElementTree\n"), policy).total == 0
    assert penalty(score_reply(fenced("import json\n"), policy), "imports").points == 3


def test_a_task_with_an_empty_allow_list_allows_nothing() -> None:
    verdict = score_reply(fenced("import math\n"), OPEN, Task("is_even", allowed_imports=()))
    assert "math is not in the allow-list (empty)" in penalty(verdict, "imports").message


@pytest.mark.parametrize("code", [
    '__import__("os").system("id")\n',
    'import importlib\nimportlib.import_module("os")\n',
    'from importlib import import_module as load\nload("os")\n',
    'import importlib as il\nil.__import__("socket")\n',
    'name = "o" + "s"\n__import__(name)\n',
    'eval("1 + 1")\n',
    'exec("x = 1")\n',
    'code = compile("1", "f", "eval")\n',
    'run = eval\nrun("2")\n',
    'eval = eval\n',
    'import builtins\nbuiltins.__import__("os")\n',
    '__builtins__.__import__("os")\n',
    'getattr(__builtins__, "eval")("1")\n',
    'import builtins as b\ngetattr(b, "ex" + "ec")("x = 1")\n',
    'globals()["__builtins__"]\n',
    'from builtins import __import__ as load\nload("os")\n',
    'import sys\nsys.modules["os"].system("id")\n',
    'from sys import modules\nmodules.get("os")\n',
    'import pkgutil\npkgutil.resolve_name("unittest.mock:ANY")\n',
    'from pkgutil import resolve_name as find\nfind(name)\n',
    '[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == "Popen"]\n',
    'def f():\n    pass\n\nf.__globals__["__builtins__"]\n',
    # Spelled so that the source text never holds the name: the check reads the tree, never the text.
    'globals()["__buil" "tins__"]\n',
    '\uff45\uff56\uff41\uff4c("1")\n',
], ids=["__import__", "import_module", "import_module-alias", "importlib.__import__", "__import__-var",
        "eval", "exec", "compile", "eval-alias", "eval-rebound", "builtins.__import__", "__builtins__-attr",
        "getattr-builtins", "getattr-built-name", "globals-builtins",
        "from-builtins", "sys.modules", "from-sys-modules", "pkgutil.resolve_name", "resolve_name-alias",
        "subclasses-escape", "function-globals",
        "builtins-split-string", "fullwidth-eval"])
def test_dynamic_loaders_are_caught(code: str) -> None:
    found = penalty(score_reply(fenced(code), OPEN), "imports")
    assert found.points == 3
    assert "dynamic loader" in found.message


def test_dunder_import_of_a_constant_name_is_also_checked_against_the_lists() -> None:
    verdict = score_reply(fenced('__import__("os")\n'), Policy(imports=ImportRules(dynamic=False)))
    assert 'os is in the deny-list' in penalty(verdict, "imports").message


def test_the_module_pkgutil_resolves_is_checked_against_the_lists() -> None:
    code = 'import pkgutil\npkgutil.resolve_name("os:system")("id")\n'
    verdict = score_reply(fenced(code), Policy(imports=ImportRules(dynamic=False, deny=("os",))))
    assert 'os is in the deny-list' in penalty(verdict, "imports").message


@pytest.mark.parametrize("code", [
    "import re\npattern = re.compile('a+')\n",
    "def compile(x):\n    return x\n\ncompile(1)\n",
    "from . import helpers\nfrom .. import sibling\n",
    "from __future__ import annotations\n",
    "class Evaluator:\n    def eval(self):\n        return 1\n\nEvaluator().eval()\n",
])
def test_look_alikes_are_not_loaders(code: str) -> None:
    assert score_reply(fenced(code), OPEN, Task("t", allowed_imports=("re",))).total == 0


@pytest.mark.parametrize("code", ["import os.path\n", "from os import path\n", "from os.path import join\n",
                                  "import os as operating_system\n"])
def test_a_denied_package_denies_its_submodules(code: str) -> None:
    found = penalty(score_reply(fenced(code), Policy(imports=ImportRules(deny=("os",)))), "imports")
    assert "in the deny-list" in found.message


def test_denying_a_submodule_catches_from_imports_of_it() -> None:
    policy = Policy(imports=ImportRules(deny=("os.path",)))
    assert penalty(score_reply(fenced("from os import path\n"), policy), "imports").points == 3
    assert score_reply(fenced("from os import sep\n"), policy).total == 0


def test_the_task_cannot_widen_past_the_deny_list() -> None:
    verdict = score_reply(fenced("import subprocess\n"), Policy(), Task("t", allowed_imports=("subprocess",)))
    assert "subprocess is in the deny-list" in penalty(verdict, "imports").message


def test_charged_once_with_every_offending_import_listed() -> None:
    code = "import os\nimport socket\nimport sys\n__import__('json')\n"
    verdict = score_reply(fenced(code), Policy(points=Points(imports=4)), SUM_TASK)
    found = penalty(verdict, "imports")
    assert found.points == 4
    assert verdict.total == 4
    assert [loc.line for loc in found.locations] == [1, 2, 4]
    for where in ("solution.py:1", "solution.py:2", "solution.py:4"):
        assert where in found.message


def test_added_scope_ignores_an_old_import_and_all_scope_counts_it() -> None:
    text = "import os\n\n\ndef f() -> str:\n    return os.sep\n\n\nimport json\n"
    changed = SourceFile("src/f.py", text, added_lines=frozenset({4, 5}), status="modified")
    assert score_files([changed], Policy(imports=ImportRules(deny=("os", "json"), scope="added"))).total == 0
    verdict = score_files([changed], Policy(imports=ImportRules(deny=("os", "json"), scope="all")))
    assert [loc.line for loc in penalty(verdict, "imports").locations] == [1, 8]
    new = SourceFile("src/f.py", text, added_lines=frozenset({4, 5, 8}), status="modified")
    added = score_files([new], Policy(imports=ImportRules(deny=("os", "json"), scope="added")))
    assert [loc.line for loc in penalty(added, "imports").locations] == [8]


def test_a_multi_line_import_counts_when_any_of_its_lines_is_added() -> None:
    text = "from os import (\n    sep,\n    path,\n)\n"
    changed = SourceFile("a.py", text, added_lines=frozenset({3}), status="modified")
    assert penalty(score_files([changed]), "imports").locations[0].line == 1


def test_imports_never_reparse_code_that_does_not_parse() -> None:
    verdict = score_reply(fenced("import os\ndef broken(:\n"), OPEN, SUM_TASK)
    assert check(verdict, "imports").status == "skipped"
    assert [p.check for p in verdict.penalties] == ["parse"]
