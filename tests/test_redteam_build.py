"""Red team: the head's own build (its PEP 517 backend, the bot's code) hands the gate a wheel that the runs
import. Each attack here is a bot's head with a regression whose wheel tries to make the base's tests pass
anyway: by shipping other code than the tree's for the package, by shadowing a module the environment
installs, by a module of the wheel that Python imports in place of the tree's, or by code no check reads.
"""

from __future__ import annotations

import os
import re
import zipfile
from io import BytesIO
from pathlib import Path

import pytest

from gate.environment import SuiteCode
from gate.environment.project import _unpack, overlay
from gate.sources import gitcli
from gate.sources.gitrange import subject_from_commits
from gate.suite.trust import importable_from_tests
from gate.verdict import Verdict
from tests.fakegithub import FakeGitHub
from tests.fakegithub.scenario import Scenario
from tests.git_support import Repo
from tests.projects import (  # noqa: F401
    BACKEND,
    gate_cache,
    gate_cache_root,
    offline_pip,
    project_repo,
    pyproject,
    wheel_of_installed,
    wheelhouse,
    write_wheel,
)
from tests.redteam_support import ci_posted
from tests.suite_support import score_repo, suite_statuses

PACKAGE = "def double(x):\n    return 2 * x\n"
BROKEN = PACKAGE.replace("2 * x", "x + 2")
# The base's tests compare through a helper its test dependency installs (checkhelp, in the wheelhouse).
TESTS = "import verpkg\nfrom checkhelp import same\n\n\ndef test_double():\n    assert same(verpkg.double(21), 42)\n"
POLICY = "budget: 1\ntests:\n  paths: [tests]\n  test_timeout: 5\n"
# Where the in-tree backend (tests/projects.py) adds entries of its own to the wheel it writes.
WHEEL_ITEMS = "        wheel_meta = "


def _repo(root: Path, files: dict[str, str]) -> Repo:
    return project_repo(root, {"pyproject.toml": pyproject("verpkg", ["checkhelp"]), "tests/test_verpkg.py": TESTS,
                               ".github/gate.yml": POLICY, **files})


def _adding(items: dict[str, str]) -> str:
    """The in-tree backend, its wheel holding `items` (archive name -> text) besides the tree's files."""
    added = ", ".join(f"({name!r}, {text.encode()!r})" for name, text in items.items())
    return BACKEND.replace(WHEEL_ITEMS, f"        items += [{added}]\n{WHEEL_ITEMS}")


def _test_double(verdict: Verdict) -> str:
    return suite_statuses(verdict)["tests/test_verpkg.py::test_double"]


def _assert_caught(verdict: Verdict) -> None:
    """The head built, and its regression failed test_double and blocked the change."""
    assert "build" not in dict(verdict.facts)
    assert _test_double(verdict) == "failed"
    assert not verdict.accepted


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_a_wheel_that_ships_other_code_than_the_trees_src_is_not_what_the_suite_runs(tmp_path: Path) -> None:
    """src layout: the head's src/verpkg has the regression, and its backend writes the base's code into the
    wheel. What is merged is the tree: the suite must run the tree's module, not the wheel's copy of it."""
    repo = _repo(tmp_path / "repo", {"src/verpkg/__init__.py": PACKAGE})
    substituting = BACKEND.replace("open(path, \"rb\").read()",
                                   "open(path, \"rb\").read().replace(b'x + 2', b'2 * x')")
    assert substituting != BACKEND
    repo.commit("bot: speed up double", {"src/verpkg/__init__.py": BROKEN, "_backend/backend.py": substituting})

    verdict = score_repo(repo)

    _assert_caught(verdict)


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
@pytest.mark.parametrize("package", ["verpkg", "src/verpkg"])
def test_a_wheel_never_shadows_a_module_the_environment_installs(tmp_path: Path, package: str) -> None:
    """The wheel brings its own `checkhelp` (the base's test dependency, whose `same` the tests assert with):
    the layer must not come before what the environment installs (a pytest plugin the same way)."""
    repo = _repo(tmp_path / "repo", {f"{package}/__init__.py": PACKAGE})
    repo.commit("bot: speed up double", {f"{package}/__init__.py": BROKEN, "_backend/backend.py": _adding(
        {"checkhelp.py": "def same(a, b):\n    return True\n"})})

    verdict = score_repo(repo)

    _assert_caught(verdict)


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_a_new_package_of_the_wheel_never_stands_in_for_a_module_of_the_tree(tmp_path: Path) -> None:
    """Flat layout: the tree's verpkg/core.py has the regression; the wheel adds verpkg/core/__init__.py, a
    file the tree lacks, which Python would import in place of core.py (a package before a module)."""
    repo = _repo(tmp_path / "repo", {"verpkg/__init__.py": "from verpkg.core import double\n",
                                     "verpkg/core.py": PACKAGE})
    repo.commit("bot: speed up double", {"verpkg/core.py": BROKEN, "_backend/backend.py": _adding(
        {"verpkg/core/__init__.py": PACKAGE})})

    verdict = score_repo(repo)

    _assert_caught(verdict)


# Code no check of the diff reads: the backend writes it into the wheel as a module of the package, which the
# tree's package imports (as it would a generated version file). It rewrites every test report to passed.
PAYLOAD = '''\
import _pytest.reports

_init = _pytest.reports.TestReport.__init__


def _passed(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    self.outcome, self.longrepr = "passed", None


_pytest.reports.TestReport.__init__ = _passed
'''


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
@pytest.mark.parametrize("package", ["verpkg", "src/verpkg"])
def test_code_the_heads_build_generates_is_read_like_the_trees(tmp_path: Path, package: str) -> None:
    repo = _repo(tmp_path / "repo", {f"{package}/__init__.py": PACKAGE})
    repo.commit("bot: speed up double", {
        f"{package}/__init__.py": "from verpkg import _speedups  # noqa: F401 (written by the build)\n" + BROKEN,
        ".gitignore": "verpkg/_speedups.py\n", "_backend/backend.py": _adding({"verpkg/_speedups.py": PAYLOAD})})

    verdict = score_repo(repo)

    assert "build" not in dict(verdict.facts)
    assert not verdict.accepted
    # The framework check reads what the build wrote; the tripwires see the forgery it does at run time.
    [reason] = [reason for reason in verdict.blocked_reasons if "test framework" in reason]
    assert f"{package}/_speedups.py:1 (a file the head's build wrote)" in reason
    assert verdict.tampered


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_the_wheels_copies_of_the_trees_own_modules_are_the_trees(tmp_path: Path) -> None:
    """The package ships a pytest helper of its own (the base's, unchanged): its copy in the wheel is the tree's
    file, which no check reads again."""
    repo = _repo(tmp_path / "repo", {"src/verpkg/__init__.py": PACKAGE,
                                     "src/verpkg/testing.py": "import pytest\n\nskip_slow = pytest.mark.slow\n"})
    repo.commit("bot: document double", {"src/verpkg/__init__.py": PACKAGE.replace(
        "def double(x):\n", 'def double(x):\n    """Twice x."""\n')})

    verdict = score_repo(repo)

    assert verdict.accepted and not verdict.blocked_reasons
    assert _test_double(verdict) == "passed"


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_a_module_only_the_wheel_has_is_read_like_the_trees(tmp_path: Path) -> None:
    """The wheel's own top-level module, which the tree's package imports (a build that maps a folder of the
    tree to another name, or writes a module of its own)."""
    repo = _repo(tmp_path / "repo", {"src/verpkg/__init__.py": PACKAGE})
    repo.commit("bot: speed up double", {
        "src/verpkg/__init__.py": "import _verpkg_speedups  # noqa: F401 (written by the build)\n" + BROKEN,
        "_backend/backend.py": _adding({"_verpkg_speedups.py": PAYLOAD})})

    verdict = score_repo(repo)

    assert not verdict.accepted
    [reason] = [reason for reason in verdict.blocked_reasons if "test framework" in reason]
    assert "_verpkg_speedups.py:1 (a file the head's build wrote)" in reason
    assert verdict.tampered


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_a_failed_builds_note_is_short_whatever_the_build_prints(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo", {"verpkg/__init__.py": PACKAGE})
    loud = BACKEND.replace(WHEEL_ITEMS, "        import sys; sys.stderr.write('x' * 10**6 + '\\n'); sys.exit(1)\n"
                           + WHEEL_ITEMS)
    repo.commit("bot: speed up double", {"verpkg/__init__.py": BROKEN, "_backend/backend.py": loud})

    verdict = score_repo(repo)

    note = dict(verdict.facts)["build"]
    assert note.startswith("head: the project did not build in the sandbox (exit status 1): x") and len(note) < 3000
    assert not verdict.accepted


def _wheel(entries: dict[str, bytes]) -> bytes:
    data = BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
    return data.getvalue()


@pytest.mark.parametrize("name", ["../escaped.py", "/tmp/absolute.py", "verpkg-1.0.data/purelib/../../escaped.py",
                                  "verpkg/../../escaped.py"])
def test_a_wheel_entry_that_leaves_the_layer_is_refused(tmp_path: Path, name: str) -> None:
    layer = tmp_path / "deep" / "layer"
    layer.mkdir(parents=True)

    with pytest.raises(ValueError, match="the wheel names"):
        _unpack(_wheel({"verpkg/__init__.py": b"", name: b"x = 1\n"}), layer, 10**6)

    assert not list(tmp_path.rglob("escaped.py")) and not Path("/tmp/absolute.py").exists()


def test_the_layer_keeps_no_installed_module_framework_module_native_code_bytecode_or_pth(tmp_path: Path) -> None:
    """Whatever the wheel names them, at its root or through its .data's purelib and platlib."""
    layer = tmp_path / "layer"
    layer.mkdir()
    kept = {"verpkg/__init__.py": b"", "verpkg/_version.py": b"", "verpkg-1.0.dist-info/METADATA": b"",
            "sitecustomize.py": b""}  # (inert: runs start without `site`, and the framework check reads it)
    dropped = ["checkhelp.py", "checkhelp/__init__.py", "verpkg-1.0.data/purelib/checkhelp.py",
               "verpkg-1.0.data/platlib/pytest/__init__.py", "_pytest/runner.py", "pluggy.py",
               "pytest.cpython-311-x86_64-linux-gnu.so", "verpkg/_speed.cpython-311-x86_64-linux-gnu.so",
               "verpkg/core.pyc", "verpkg/libx.so.1", "evil.pth", "verpkg-1.0.data/scripts/run"]

    _unpack(_wheel({**kept, **dict.fromkeys(dropped, b"x = 1\n")}), layer, 10**6, frozenset({"checkhelp"}))

    assert sorted(p.relative_to(layer).as_posix() for p in layer.rglob("*") if p.is_file()) == sorted(kept)


@pytest.mark.parametrize(("tests", "roots", "kept", "dropped"), [
    (("tests",), (), ["verpkg/__init__.py", "verpkg/_version.py", "verpkg-1.0.dist-info/METADATA", "calc.py"],
     ["helpers/conftest.py", "conftest.py", "tests/__init__.py", "tests/compare.py", "compare.py",
      "compare/__init__.py", "test_calc.py", "verpkg-1.0.data/purelib/tests/compare.py"]),
    (("src/verpkg/tests",), ("src",), ["verpkg/__init__.py", "verpkg/_version.py", "verpkg/testing.py"],
     ["verpkg/tests/__init__.py", "verpkg/tests/test_double.py", "verpkg/conftest.py"]),
    ((".",), (), ["verpkg/__init__.py", "verpkg/_version.py", "verpkg-1.0.dist-info/METADATA", "calc.py"],
     ["verpkg/test_double.py", "verpkg/tests/helpers.py", "verpkg/conftest.py", "tests/compare.py"]),
], ids=["tests-folder", "tests-in-the-package", "the-whole-tree"])
def test_the_layer_carries_no_code_of_the_suites_whatever_its_bytes(
        tmp_path: Path, tests: tuple[str, ...], roots: tuple[str, ...], kept: list[str], dropped: list[str]) -> None:
    """No conftest.py, no test module under a test path (at the top or an import root), and no top-level module
    named like one a test imports from a test folder (`compare` for `tests/compare.py`) the tree has none of:
    the suite's code runs as the base has it, from the tree (gate/suite/trust.py)."""
    tree = tmp_path / "tree"
    for path in ("tests/compare.py", "tests/test_calc.py", "calc.py", "src/verpkg/tests/test_double.py"):
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text("")
    code = SuiteCode(tests, importable_from_tests(tree, tests), roots)
    assert {"compare", "test_calc"} <= code.modules or tests != ("tests",)
    layer = tmp_path / "layer"
    layer.mkdir()

    _unpack(_wheel(dict.fromkeys([*kept, *dropped], b"x = 1\n")), layer, 10**6, code=code,
            own=frozenset({"calc", "verpkg", "tests", "src"}))

    assert sorted(p.relative_to(layer).as_posix() for p in layer.rglob("*") if p.is_file()) == sorted(kept)


@pytest.mark.parametrize("entries", [{"verpkg/zeros.bin": bytes(2 * 10**6)},
                                     {f"verpkg/empty{n}.py": b"" for n in range(300)}], ids=["large", "many"])
def test_a_wheel_larger_unpacked_than_the_disk_limit_is_refused_before_a_byte_is_written(
        tmp_path: Path, entries: dict[str, bytes]) -> None:
    """A large file, or many empty ones (each takes a block of the disk: a 256 MB wheel holds millions)."""
    layer = tmp_path / "layer"
    layer.mkdir()

    with pytest.raises(ValueError, match="disk limit"):
        _unpack(_wheel({"verpkg/__init__.py": b"", **entries}), layer, 10**6)

    assert list(layer.iterdir()) == []


def test_what_the_layer_holds_reaches_the_tree_only_as_new_plain_files_of_its_packages(tmp_path: Path) -> None:
    """The overlay of a flat layout: a conftest.py or pytest configuration at any depth, a file under a test
    path inside the package, a file over the tree's, a module beside a package of the same name: none."""
    layer, tree = tmp_path / "layer", tmp_path / "tree"
    for root in (layer, tree):
        (root / "verpkg" / "tests").mkdir(parents=True)
        (root / "verpkg" / "__init__.py").write_text("tree\n" if root == tree else "layer\n")
        (root / "verpkg" / "util").mkdir()
    (tree / "verpkg" / "util" / "__init__.py").write_text("")
    for name in ("_version.py", "deep/er/conftest.py", "sub/pytest.ini", "sub/tox.ini", "tests/test_new.py",
                 "deep/er/__init__.py", "util.py", "__init__/x.py"):
        (layer / "verpkg" / name).parent.mkdir(parents=True, exist_ok=True)
        (layer / "verpkg" / name).write_text("layer\n")
    (layer / "tests").mkdir()
    (layer / "tests" / "test_planted.py").write_text("")

    overlay(layer, tree, ("verpkg/tests",))

    found = sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file())
    assert found == ["verpkg/__init__.py", "verpkg/_version.py", "verpkg/deep/er/__init__.py",
                     "verpkg/util/__init__.py"]
    assert (tree / "verpkg" / "__init__.py").read_text() == "tree\n"


# Hooks under names no check reads as pytest's, for pytest to register as a plugin: each report of a test is
# made passed as pytest logs it.
HOOKS = '''\
import types


def _passed(report):
    report.outcome, report.longrepr = "passed", None


HOOKS = types.SimpleNamespace(**{"pytest_" + "runtest_logreport": _passed})
'''


@pytest.mark.slow
def test_an_entry_point_of_the_wheel_never_stands_in_for_a_plugin_the_gate_loads(
        tmp_path: Path, offline_pip: Path) -> None:  # noqa: F811
    """The base declares a pytest plugin, which the gate loads by its module (`-p pytest_checkplug`); pytest
    looks `-p NAME` up among the entry points first, and the head's wheel declares one of that name."""
    write_wheel(offline_pip, "pytest-checkplug", {"pytest_checkplug.py": "def pytest_configure(config):\n    pass\n"},
                entry_points="[pytest11]\ncheckplug = pytest_checkplug\n")
    repo = project_repo(tmp_path / "repo", {
        "pyproject.toml": pyproject("verpkg", ["checkhelp", "pytest-checkplug"]), "tests/test_verpkg.py": TESTS,
        ".github/gate.yml": POLICY, "verpkg/__init__.py": PACKAGE})
    entry_points = BACKEND.replace(WHEEL_ITEMS, "        items += [(f'{info}/entry_points.txt', "
                                                "b'[pytest11]\\npytest_checkplug = verpkg.hooks:HOOKS\\n')]\n"
                                   + WHEEL_ITEMS)
    repo.commit("bot: speed up double", {"verpkg/__init__.py": BROKEN, "verpkg/hooks.py": HOOKS,
                                         "_backend/backend.py": entry_points})

    verdict = score_repo(repo)

    _assert_caught(verdict)


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_a_head_built_under_a_policy_that_hides_nothing_is_built_again_where_a_file_is_hidden(
        tmp_path: Path) -> None:
    """Two policies over one head (two workflows, `gate check --policy`): the build reads the export, which
    leaves out the hidden cases under one of them only. A layer the other built (its wheel could hold the
    hidden file) is never this one's."""
    repo = _repo(tmp_path / "repo", {"verpkg/__init__.py": PACKAGE, "secret/hidden.yml": "[]\n",
                                     "ci/hiding.yml": POLICY + "hidden:\n  path: secret/hidden.yml\n"})
    repo.commit("bot: speed up double", {"verpkg/__init__.py": BROKEN})
    handle = gitcli.Repo(repo.root)

    layers = []
    for policy in (None, "ci/hiding.yml"):
        with subject_from_commits(handle, handle.commit("main").hexsha, handle.commit("bot").hexsha,
                                  policy_path=policy) as found:
            assert found.subject.layers is not None
            layers.append(found.subject.layers)

    assert layers[0][0].path != layers[1][0].path and layers[0][1].path != layers[1][1].path


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
@pytest.mark.parametrize("where", ["tree", "wheel"])
def test_an_entry_point_of_the_head_never_stands_in_for_a_plugin_the_bases_configuration_names(
        tmp_path: Path, where: str) -> None:
    """The base's configuration loads a plugin of its own tests (`-p tests.plugin`); pytest looks `-p NAME` up
    among the entry points of the distributions on the path first, and the head declares one of that name in
    a `*.dist-info` of its tree or of its wheel."""
    config = '\n[tool.pytest.ini_options]\naddopts = "-p tests.plugin"\n'
    repo = _repo(tmp_path / "repo", {"pyproject.toml": pyproject("verpkg", ["checkhelp"], extra=config),
                                     "tests/__init__.py": "", "tests/plugin.py": "", "verpkg/__init__.py": PACKAGE})
    declared = "[pytest11]\ntests.plugin = verpkg.hooks:HOOKS\n"
    metadata = ({"aaa-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: aaa\nVersion: 1.0\n",
                 "aaa-1.0.dist-info/entry_points.txt": declared} if where == "tree" else
                {"_backend/backend.py": BACKEND.replace(WHEEL_ITEMS, "        items += [(f'{info}/entry_points.txt', "
                                                        f"{declared.encode()!r})]\n" + WHEEL_ITEMS)})
    repo.commit("bot: speed up double", {"verpkg/__init__.py": BROKEN, "verpkg/hooks.py": HOOKS, **metadata})

    verdict = score_repo(repo)

    _assert_caught(verdict)


# A project setuptools builds (its own backend, from the environment, as the base declares it), gated by tests
# that compare through a helper of the test folder (`tests.compare`); run as users deploy the gate: `gate ci` as
# root.
SETUPTOOLS_PROJECT = '''\
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "calc"
version = "1.0"

[tool.setuptools]
py-modules = ["calc"]
'''
CALC = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
CALC_TESTS = ("from calc import add, mul\nfrom tests.compare import same\n\n\ndef test_add():\n"
              "    assert same(add(2, 3), 5)\n\n\ndef test_mul():\n    assert same(mul(2, 3), 6)\n")
CALC_POLICY = "budget: 1\nenvironment: {}\ntests:\n  paths: [tests]\n  test_timeout: 5\n"
BROKEN_CALC = CALC.replace("a + b", "a - b").replace("a * b", "a + b")


def _setuptools_pr(fake: FakeGitHub, tmp_path: Path, head: dict[str, str | None]) -> Scenario:
    wheels = Path(os.environ["PIP_FIND_LINKS"])
    if not list(wheels.glob("setuptools-*.whl")):
        wheel_of_installed(wheels, "setuptools")
    return Scenario(fake, tmp_path, {
        "pyproject.toml": SETUPTOOLS_PROJECT, "calc.py": CALC, ".github/gate.yml": CALC_POLICY,
        "tests/compare.py": "def same(a, b):\n    return a == b\n", "tests/test_calc.py": CALC_TESTS}, head)


def _caught_on_github(state: str, body: str) -> None:
    """The base's tests failed (or errored) against the regression and the PR is blocked: the forgery did not
    run."""
    assert state == "failure", body
    for test in ("test_add", "test_mul"):
        charged = rf"tests/test_calc\.py::{test} (failed|errored)( at \S+)? \(it passes on the base\)"
        assert re.search(charged, body), body


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
@pytest.mark.skipif(os.geteuid() != 0, reason="the deployment's shape: gate ci as root")
def test_a_conftest_listed_as_a_package_is_never_on_the_suites_path(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`helpers/conftest.py` in the head, listed as a package under [tool.setuptools]: the suite's tree leaves
    the conftest out (the base's only), and no check reads a conftest as library code; its copy in the wheel
    (the same bytes) must not be on the path either, for the library's `from helpers import conftest`."""
    pr = _setuptools_pr(fake, tmp_path, {
        "pyproject.toml": SETUPTOOLS_PROJECT + 'packages = ["helpers"]\n', "helpers/conftest.py": PAYLOAD,
        "calc.py": "from helpers import conftest  # noqa: F401\n\n\n" + BROKEN_CALC})

    state, body = ci_posted(pr, monkeypatch)

    _caught_on_github(state, body)
    assert "the change adds helpers/conftest.py: it did not run" in body
    assert "did not build" not in body and "no usable wheel" not in body, body


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
@pytest.mark.skipif(os.geteuid() != 0, reason="the deployment's shape: gate ci as root")
def test_a_wheel_that_packs_the_tests_as_a_package_never_stands_in_for_the_bases(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The head makes `tests` a package of its wheel, with a helper equal to anything: a regular package of
    the layer wins over the tree's `tests` folder (a namespace) wherever the layer is on the path."""
    pr = _setuptools_pr(fake, tmp_path, {
        "pyproject.toml": SETUPTOOLS_PROJECT + 'packages = ["tests"]\n', "tests/__init__.py": "",
        "tests/compare.py": "def same(a, b):\n    return True\n", "calc.py": BROKEN_CALC})

    state, body = ci_posted(pr, monkeypatch)

    _caught_on_github(state, body)
