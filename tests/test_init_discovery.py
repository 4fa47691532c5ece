"""`gate init` finds the suite as pytest finds it: each shape of a real repository (tests inside the package, a
test module at the top, tests in a namespace package, `python_files`, each configuration file and pytest's
precedence among them, `testpaths`, folders pytest never enters) is checked against what
`pytest --collect-only` itself collects from the top of the same tree, and the test paths the policy gets
collect exactly that."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gate.suite.discovery import find_suite
from tests.init_support import Init

TEST = "def test_{name}():\n    assert True\n"


def _tree(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text.format(name=Path(path).stem) if path.endswith(".py") else text)


# Each argument list in turn, by one pytest process (one start-up for them all): what each collects, by line.
_COLLECT = """\
import json, sys
import pytest
for args in json.loads(sys.argv[1]):
    code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *args])
    print(f"\\n{sys.argv[2]} {int(code)}", flush=True)
"""


def pytest_runs(root: Path, *runs: tuple[str, ...]) -> list[set[str]]:
    """For each argument list of `runs`, the files `pytest --collect-only` collects run in `root` with it (none:
    as from the top). One process runs them one after the other: modules the first collection imported are the
    same files for the next."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    marker = "--gate-test-run-done--"
    done = subprocess.run([sys.executable, "-c", _COLLECT, json.dumps(runs), marker], cwd=root, capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    found: list[set[str]] = [set()]
    for line in done.stdout.splitlines():
        if line.startswith(marker):
            assert line == f"{marker} 0", done.stdout + done.stderr
            found.append(set())
        elif "::" in line:
            found[-1].add(line.split("::")[0])
    assert len(found) == len(runs) + 1, done.stdout + done.stderr
    return found[:-1]


def pytest_collects(root: Path, *args: str) -> set[str]:
    """The files `pytest --collect-only` collects run in `root` with `args` (none: as from the top)."""
    return pytest_runs(root, args)[0]


def _files(root: Path) -> list[str]:
    return [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()]


def _read(root: Path):  # type: ignore[no-untyped-def]
    return lambda path: (root / path).read_text() if (root / path).is_file() else None


# A stand-in for Sybil (not installed here), as a documentation folder's conftest.py uses it: one test for each
# file its patterns name, which pytest collects through the conftest's `pytest_collect_file`.
FAKE_SYBIL = """import fnmatch

import pytest


class Example(pytest.Item):
    def runtest(self):
        pass


class Document(pytest.File):
    def collect(self):
        yield Example.from_parent(self, name="example")


class Sybil:
    def __init__(self, parsers=(), pattern=None, patterns=(), path="."):
        self.patterns = [pattern] if pattern else list(patterns)

    def pytest(self):
        def pytest_collect_file(file_path, parent):
            if any(fnmatch.fnmatch(file_path.name, pattern) for pattern in self.patterns):
                return Document.from_parent(parent, path=file_path)
            return None

        return pytest_collect_file
"""
SYBIL_CONFTEST = "from sybil import Sybil\n\npytest_collect_file = Sybil(parsers=[], pattern='*.rst').pytest()\n"

SHAPES = [
    pytest.param({"simplejson/__init__.py": "", "simplejson/decoder.py": "", "simplejson/tests/__init__.py": "",
                  "simplejson/tests/test_dump.py": TEST, "simplejson/tests/helpers.py": "",
                  "setup.py": "from setuptools import setup\nsetup(name='simplejson')\n"},
                 ["simplejson/tests"], "as pytest collects from the top: no pytest configuration",
                 id="tests inside the package (simplejson)"),
    pytest.param({"jsonschema/__init__.py": "", "jsonschema/tests/__init__.py": "",
                  "jsonschema/tests/test_validators.py": TEST, "jsonschema/tests/typing/test_all.py": TEST,
                  "pyproject.toml": '[project]\nname = "jsonschema"\nversion = "1"\n[tool.pytest.ini_options]\n'
                                    'addopts = "-ra"\n'},
                 ["jsonschema/tests"],
                 "as pytest collects from the top: no testpaths in pyproject.toml [tool.pytest.ini_options]",
                 id="tests inside the package, a config without testpaths (jsonschema)"),
    pytest.param({"test_module.py": TEST, "module.py": "X = 1\n"}, ["test_module.py"], "",
                 id="a test module at the top"),
    pytest.param({"acme/plugins/core.py": "", "acme/plugins/tests/test_plugins.py": TEST},
                 ["acme/plugins/tests"], "", id="tests inside a namespace package (no __init__.py)"),
    pytest.param({"pkg/__init__.py": "", "pkg/core.py": "", "pkg/test_core.py": TEST, "pkg/util_test.py": TEST},
                 ["pkg/test_core.py", "pkg/util_test.py"], "", id="test modules beside the code they test"),
    pytest.param({"checks/conftest.py": "", "checks/test_one.py": TEST, "lib.py": ""}, ["checks"], "",
                 id="a folder of tests not named tests"),
    pytest.param({"setup.cfg": "[tool:pytest]\npython_files = *.py\n", "pkg/__init__.py": "",
                  "pkg/core.py": "def add(a, b):\n    return a + b\n", "pkg/test_core.py": TEST}, ["pkg/test_core.py"],
                 "", id="python_files *.py, the tests beside the library (boolean.py)"),
    pytest.param({"pytest.ini": "[pytest]\npython_files = check_*.py\n", "suite/check_api.py": TEST,
                  "suite/test_ignored.py": "raise SystemExit('not collected')\n", "lib/__init__.py": ""},
                 ["suite/check_api.py"], "", id="python_files in pytest.ini"),
    pytest.param({"pytest.ini": "[pytest]\ntestpaths = t1\n", "pyproject.toml": "[tool.pytest.ini_options]\n"
                  'testpaths = ["t2"]\n', "t1/test_a.py": TEST, "t2/test_b.py": TEST}, ["t1"],
                 "testpaths in pytest.ini [pytest]", id="pytest.ini before pyproject.toml"),
    pytest.param({".pytest.ini": "[pytest]\ntestpaths = t1\n", "tox.ini": "[pytest]\ntestpaths = t2\n",
                  "t1/test_a.py": TEST, "t2/test_b.py": TEST}, ["t1"], "testpaths in .pytest.ini [pytest]",
                 id=".pytest.ini before tox.ini"),
    pytest.param({"pytest.toml": '[pytest]\ntestpaths = ["t1"]\n', "pytest.ini": "[pytest]\ntestpaths = t2\n",
                  "t1/test_a.py": TEST, "t2/test_b.py": TEST}, ["t1"], "testpaths in pytest.toml [pytest]",
                 id="pytest 9's pytest.toml first"),
    pytest.param({"pyproject.toml": '[tool.pytest]\ntestpaths = ["t2"]\n', "tox.ini": "[pytest]\ntestpaths = t1\n",
                  "t1/test_a.py": TEST, "t2/test_b.py": TEST}, ["t2"], "testpaths in pyproject.toml [tool.pytest]",
                 id="pytest 9's [tool.pytest] before tox.ini"),
    pytest.param({"pyproject.toml": '[project]\nname = "x"\nversion = "1"\n',
                  "tox.ini": "[tox]\nenvlist = py\n[pytest]\ntestpaths = t1\n", "t1/test_a.py": TEST,
                  "t2/test_b.py": TEST}, ["t1"], "testpaths in tox.ini [pytest]",
                 id="a pyproject.toml without a pytest table does not count"),
    pytest.param({"setup.cfg": "[metadata]\nname = x\n[tool:pytest]\ntestpaths =\n    t1\n    t3\n",
                  "t1/test_a.py": TEST, "t2/test_b.py": TEST, "t3/test_c.py": TEST}, ["t1", "t3"],
                 "testpaths in setup.cfg [tool:pytest]", id="setup.cfg [tool:pytest], several testpaths"),
    pytest.param({"pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests/*/unit"]\n',
                  "tests/a/unit/test_a.py": TEST, "tests/b/unit/test_b.py": TEST, "tests/a/slow/test_c.py": TEST},
                 ["tests/a/unit", "tests/b/unit"], "", id="testpaths globs"),
    pytest.param({"tests/test_real.py": TEST, "build/lib/tests/test_copy.py": TEST, ".tox/py/test_tox.py": TEST,
                  "venv2/pyvenv.cfg": "home = /usr\n", "venv2/lib/test_venv.py": TEST,
                  "node_modules/x/test_js.py": TEST, "tests/__pycache__/test_cached.py": TEST},
                 ["tests"], "", id="folders pytest never enters"),
    pytest.param({"setup.cfg": "[tool:pytest]\nnorecursedirs = legacy\naddopts = --ignore=tests/test_slow.py\n",
                  "tests/test_fast.py": TEST, "tests/test_slow.py": TEST, "legacy/test_old.py": TEST,
                  "build/test_build.py": TEST},
                 ["build", "tests"], "", id="norecursedirs (in place of pytest's own) and --ignore in addopts"),
    pytest.param({"pytest.ini": "[pytest]\naddopts = --doctest-glob=README.md --doctest-glob=*.md "
                                "--doctest-glob=*.py\n",
                  "README.md": "Use it:\n\n    >>> 1 + 1\n    2\n", "CHANGES.md": "No example here.\n",
                  "tests/test_a.py": TEST, "lib.py": "def f():\n    return 1\n"},
                 ["README.md", "tests"], "as pytest collects from the top: no testpaths in pytest.ini [pytest]",
                 id="a README's examples a doctest glob names, a text without one (ordered-set)"),
    pytest.param({"docs/conftest.py": SYBIL_CONFTEST, "docs/sybil.py": FAKE_SYBIL, "docs/index.rst": "Text.\n",
                  "docs/notes.txt": "prose\n", "tests/test_a.py": TEST}, ["docs", "tests"],
                 "as pytest collects from the top: no pytest configuration",
                 id="documents a conftest's Sybil collects (cssselect)"),
    pytest.param({"docs/test_usage.txt": ">>> 2 * 3\n6\n", "docs/test_notes.txt": "prose\n",
                  "tests/test_a.py": TEST}, ["docs", "tests"], "", id="pytest's own doctest glob, test*.txt"),
]


@pytest.mark.parametrize(("files", "paths", "why"), SHAPES)
def test_gate_init_names_the_suite_pytest_collects(tmp_path: Path, files: dict[str, str], paths: list[str],
                                                   why: str, gate_init: Init) -> None:
    _tree(tmp_path, files)

    suite = find_suite(_files(tmp_path), _read(tmp_path))
    policy, said, _ = gate_init(tmp_path)

    reference, within = pytest_runs(tmp_path, (), tuple(paths))
    assert set(suite.files) == reference
    assert policy["tests"] == {"paths": paths}
    assert within == reference  # the paths hold the whole suite, and only it
    count = len(reference)
    assert f"found tests: {', '.join(paths)} ({count} test file{'s' * (count != 1)}, {why}" in said


TOX_SHAPES = [
    pytest.param({"tox.ini": "[tox]\nenvlist = py\n[testenv]\ndeps = pytest\ncommands = pytest tests {posargs}\n",
                  "tests/test_core.py": TEST, "examples/test_example.py": TEST, "examples/example.py": ""},
                 ["tests"], ["tests"], "tox.ini [testenv]", id="examples the CI does not run (pyparsing)"),
    pytest.param({"tox.ini": "[testenv]\ncommands =\n    {envpython} -m pytest -q -p no:randomly --cov src \\\n"
                             "        {posargs:tests/unit tests/functional}\n",
                  "src/lib.py": "", "tests/unit/test_a.py": TEST, "tests/functional/test_b.py": TEST,
                  "tests/slow/test_c.py": TEST, "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'},
                 ["tests/unit", "tests/functional"], ["tests/unit", "tests/functional"], "tox.ini [testenv]",
                 id="posargs' default, options with values, before testpaths"),
    pytest.param({"tox.toml": 'env_list = ["py"]\n[env_run_base]\ncommands = [["pytest", {replace = "posargs", '
                              'default = ["tests"]}]]\n', "tests/test_a.py": TEST, "docs/test_doc.py": TEST},
                 ["tests"], ["tests"], "tox.toml [testenv]", id="tox.toml's posargs default"),
    pytest.param({"pyproject.toml": '[tool.tox]\nlegacy_tox_ini = """\n[testenv:tests]\ncommands = python -m '
                                    'pytest --doctest-modules mypkg tests\n"""\n',
                  "mypkg/__init__.py": "", "mypkg/core.py": "", "mypkg/test_inside.py": TEST,
                  "tests/test_a.py": TEST, "bench/test_bench.py": TEST},
                 ["mypkg/test_inside.py", "tests"], ["mypkg", "tests"],
                 "pyproject.toml [tool.tox] legacy_tox_ini [testenv:tests]",
                 id="a package named beside the tests: its tests, not its code"),
    pytest.param({"pyproject.toml": '[tool.hatch.envs.test]\ndependencies = ["pytest"]\n'
                                    '[tool.hatch.envs.test.scripts]\nrun = "pytest{env:PYTEST_ARGS:} {args:tests}"\n'
                                    'lint = "ruff check ."\n',
                  "tests/test_a.py": TEST, "examples/test_example.py": TEST},
                 ["tests"], ["tests"], "pyproject.toml [tool.hatch.envs.test]", id="a Hatch script's args default"),
    pytest.param({"hatch.toml": '[envs.default.scripts]\ntest = ["pytest -q -m \'not slow\' {args:tests/unit}"]\n',
                  "tests/unit/test_a.py": TEST, "tests/slow/test_b.py": TEST},
                 ["tests/unit"], ["tests/unit"], "hatch.toml [envs.default]", id="Hatch's default environment"),
]


@pytest.mark.parametrize(("files", "paths", "ran", "where"), TOX_SHAPES)
def test_gate_init_names_the_suite_the_projects_tox_runs(tmp_path: Path, files: dict[str, str], paths: list[str],
                                                         ran: list[str], where: str, gate_init: Init) -> None:
    """The tox environment that runs the tests, else the Hatch environment's script, names the paths its CI
    collects (`ran`): the suite is what pytest collects there, whatever pytest collects from the top."""
    _tree(tmp_path, files)

    policy, said, _ = gate_init(tmp_path)

    reference, top, within = pytest_runs(tmp_path, tuple(ran), (), tuple(paths))
    assert reference != top
    assert policy["tests"] == {"paths": paths}
    assert within == reference
    count = len(reference)
    assert f"found tests: {', '.join(paths)} ({count} test file{'s' * (count != 1)}, the paths {where} passes " \
           "pytest)" in said


@pytest.mark.parametrize("command", ["pytest --pyargs mypkg", "pytest tests/test_a.py::test_a", "pytest missing",
                                     "pytest .", "pytest --plugin-option tests", "python -m pytest",
                                     "pytest tests\n    pytest examples"])
def test_a_tox_command_whose_paths_are_not_plainly_paths_leaves_the_suite_as_pytest_finds_it(
        tmp_path: Path, command: str) -> None:
    """Arguments that are not plainly paths of the tree (module names, a test's id, a path that is not there,
    an option of a plugin that may take a value), or pytest run more than once (natsort's tox: its doctest
    files, then its suite), tell nothing sure: the suite is what pytest collects from the top."""
    _tree(tmp_path, {"tox.ini": f"[testenv]\ncommands = {command}\n", "mypkg/__init__.py": "",
                     "tests/test_a.py": TEST, "examples/test_example.py": TEST})

    suite = find_suite(_files(tmp_path), _read(tmp_path))

    assert set(suite.files) == pytest_collects(tmp_path) == {"tests/test_a.py", "examples/test_example.py"}
    assert suite.why.startswith("as pytest collects from the top")


def test_test_modules_pytest_does_not_collect_as_configured_are_named_one_by_one(tmp_path: Path,
                                                                                  gate_init: Init) -> None:
    """Modules in a folder of tests, or at the top, that define tests and that pytest does not collect as
    configured (decorator's `src/tests/test.py`, a unittest module): init names each under `tests.paths`, where
    pytest collects a file whatever its name, and says why; what
    pytest collects from those paths is what the gate's discovery says. Never a helper or a module that defines
    no test, one that does not parse, one in a folder pytest never enters, nor a package's `testing` module or
    one in its `testing/` not named like a test (a library's helpers for its users); a package's `tests.py` is
    its tests (webencodings); a script that runs its tests as it is imported (ply's `unittest.main()` at its
    top) is none pytest can import."""
    unittest_case = "import unittest\n\n\nclass Check(unittest.TestCase):\n    def test_it(self):\n        pass\n"
    _tree(tmp_path, {"pytest.ini": "[pytest]\npython_files = check_*.py\n", "src/tests/test.py": unittest_case,
                     "src/tests/support.py": "", "src/tests/broken.py": "def test_x(:\n", "test_top.py": TEST,
                     "lib.py": "", "build/tests/test_old.py": TEST, "mypkg/__init__.py": "",
                     "mypkg/testing/__init__.py": "", "mypkg/testing/helpers.py": TEST, "mypkg/testing.py": TEST,
                     "webpkg/__init__.py": "", "webpkg/tests.py": TEST,
                     "src/tests/testscript.py": unittest_case + "\n\nunittest.main()\n"})

    policy, said, text = gate_init(tmp_path)

    paths = ["src/tests/test.py", "test_top.py", "webpkg/tests.py"]
    assert policy["tests"] == {"paths": paths}
    assert "warning" not in said
    suite = find_suite(_files(tmp_path), _read(tmp_path))
    as_configured = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                                   cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert not suite.files and as_configured.returncode == pytest.ExitCode.NO_TESTS_COLLECTED
    assert pytest_collects(tmp_path, *paths) == set(paths)
    header = " ".join(line.lstrip("# ") for line in text.splitlines() if line.startswith("#"))
    assert ("tests: src/tests/test.py, test_top.py, webpkg/tests.py (3 test files, named one by one: pytest collects "
            "none of them as configured; a folder of tests one sits in runs as the base has it, as a named folder "
            "does)") in header


def test_a_repository_whose_only_test_like_modules_are_library_code_gets_a_loud_warning(
        tmp_path: Path, gate_init: Init) -> None:
    """A module of the library named like a test (`mypkg/testing.py`) is never named as a test path, whose files
    the base's copy replaces in every run: with nothing else, the policy has no tests:, and init says so on
    stderr and in the policy's comment, never silently."""
    _tree(tmp_path, {"pytest.ini": "[pytest]\npython_files = check_*.py\n", "mypkg/__init__.py": "",
                     "mypkg/testing.py": TEST})

    policy, said, text = gate_init(tmp_path)

    assert "tests" not in policy
    assert "gate: warning: this repository has test files (mypkg/testing.py) but the policy has no tests:" in said
    assert "# WARNING: this repository has test files (mypkg/testing.py) that pytest does not collect" in text


def test_test_scripts_pytest_cannot_import_are_named_as_such_not_their_helpers(tmp_path: Path, gate_init: Init) -> None:
    """ply's shape: `test/testlex.py` defines unittest tests and runs them as it is imported (`unittest.main()` at
    its top: its CI runs it as a script), beside a hundred helper modules (`test/lex_doc1.py`) the tests load.
    init names the scripts and why pytest cannot run them, not the helpers as if they were tests."""
    script = ("import unittest\nimport lex_doc1\n\n\nclass LexTests(unittest.TestCase):\n    def test_doc(self):\n"
              "        pass\n\n\nunittest.main()\n")
    _tree(tmp_path, {"setup.py": "from setuptools import setup\nsetup(name='ply')\n", "ply/__init__.py": "",
                     "test/testlex.py": script, "test/testyacc.py": script, "test/lex_doc1.py": "tokens = []\n",
                     "test/calclex.py": "tokens = []\n"})

    policy, said, _ = gate_init(tmp_path)

    assert "tests" not in policy
    assert ("not found: a suite pytest can run: test/testlex.py, test/testyacc.py define tests but run them as they "
            "are imported") in said
    assert "gate: warning: this repository has test files (test/testlex.py, test/testyacc.py, test/calclex.py" in said


def test_a_test_module_pytest_would_collect_that_runs_its_tests_as_it_is_imported_is_named_a_script(
        tmp_path: Path, gate_init: Init) -> None:
    """toposort's shape: `test/test_toposort.py` is named as pytest collects tests, but it calls `unittest.main()`
    at its top (its Makefile runs it as `python -m test.test_toposort`): pytest stops as it collects it, so a
    policy naming it would stop every PR. init names it as a script instead."""
    script = ("import unittest\n\n\nclass TopoTests(unittest.TestCase):\n    def test_sort(self):\n        pass\n"
              "\n\nunittest.main()\n")
    _tree(tmp_path, {"setup.py": "from setuptools import setup\nsetup(name='toposort')\n", "src/toposort.py": "",
                     "test/__init__.py": "", "test/test_toposort.py": script})

    policy, said, _ = gate_init(tmp_path)

    assert "tests" not in policy
    assert "not found: a suite pytest can run: test/test_toposort.py define" in said, said


def test_init_lists_what_git_holds_not_ignored_files(tmp_path: Path, gate_init: Init) -> None:
    """In a git checkout an ignored test file (a scratch file, a build's copy) is no part of the base a PR is
    scored on: init leaves it out."""
    _tree(tmp_path, {"tests/test_kept.py": TEST, "scratch/test_local.py": TEST, ".gitignore": "scratch/\n"})
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)

    policy, _, _ = gate_init(tmp_path)

    assert policy["tests"] == {"paths": ["tests"]}


DOCTESTED = 'def f():\n    """\n    >>> f()\n    1\n    """\n    return 1\n'


@pytest.mark.parametrize(("config", "left"), [
    ("[pytest]\naddopts = --doctest-modules\n", ["pkg/core.py"]),
    ("[pytest]\naddopts = --doctest-modules\ntestpaths = tests docs\n", []),
    ("[pytest]\ntestpaths = tests\n", []),
], ids=["from the top (ordered-set)", "testpaths that hold no library module (semver)", "no --doctest-modules"])
def test_the_library_modules_whose_doctests_pytest_collects_are_said_not_to_run(
        tmp_path: Path, config: str, left: list[str], gate_init: Init) -> None:
    """`--doctest-modules` makes tests of the library's own docstrings: the PR's code, which the suite never takes
    from the base. `gate init` names the modules with examples it reaches that no test path holds, only those."""
    _tree(tmp_path, {"pytest.ini": config, "pkg/__init__.py": "", "pkg/core.py": DOCTESTED,
                     "pkg/__main__.py": DOCTESTED, "setup.py": "from setuptools import setup\nsetup()\n",
                     "tests/test_a.py": TEST, "docs/conf.py": "", "docs/index.rst": "Text.\n"})

    suite = find_suite(_files(tmp_path), _read(tmp_path))
    _, said, _ = gate_init(tmp_path)

    assert list(suite.doctests_left) == left
    collected = pytest_collects(tmp_path)
    assert {path for path in collected if not path.startswith(suite.paths)} <= set(left)  # what is left, named
    assert ("pkg/core.py" in collected) == bool(left)
    line = "not found: a way to gate the doctests of the library's modules"
    assert (f"{line} (pkg/core.py: `--doctest-modules` in pytest.ini [pytest])" in said) == bool(left)
    assert (line in said) == bool(left)
