"""A project's compiled extensions, built in the sandbox by its own build (setuptools) with the runner's compiler
and the interpreter's headers bound read-only into the run's root: the native code the sandbox compiled from
the head's tree is what its tests load (never a `.so` the tree or the wheel brings), the base's for the
baseline. One tiny project, compiled here, holds both shapes: a module that is only an extension, at the top
(ujson's), and an extension in a package beside a pure-Python fallback (simplejson's `_speedups`), where a
regression in the C code must be charged, not hidden by the fallback. Where no compiler is present, the
verdict says so and a change to the C code goes to a human.

Every head of a repository is scored against the same base, so its environment, the base's build and its
baseline are made once for the module (one worker: `xdist_group`), as for the PRs into one repository."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from gate.cli import main
from gate.engine import score
from gate.errors import GateFailure
from gate.sandbox.detect import run_interpreter
from gate.sources import gitcli
from gate.sources.gitrange import subject_from_commits
from gate.verdict import Verdict
from tests.git_support import Repo
from tests.native_support import POLICY, SETUPTOOLS_PYPROJECT, setup_py
from tests.projects import gate_cache_root, wheel_of_installed, wheelhouse  # noqa: F401
from tests.suite_support import charged_messages, suite_statuses

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("native")]


def _sysconfig(expression: str) -> str:
    """`expression` of the sandbox interpreter's sysconfig."""
    return subprocess.run([run_interpreter(), "-c", f"import sysconfig; print({expression})"], capture_output=True,
                          text=True, check=True).stdout.strip()


CC = shutil.which("gcc") or shutil.which("cc")
INCLUDE = _sysconfig("sysconfig.get_paths()['include']")
needs_compiler = pytest.mark.skipif(
    CC is None or not Path(INCLUDE, "Python.h").is_file(),
    reason="no C compiler and interpreter headers on this machine: the sandbox has nothing to compile with")

# An extension module `NAME` with add(a, b): long.
C_MODULE = '''\
#include <Python.h>

static PyObject *add(PyObject *self, PyObject *args) {
    long a, b;
    if (!PyArg_ParseTuple(args, "ll", &a, &b))
        return NULL;
    return PyLong_FromLong(a + b);
}

static PyMethodDef methods[] = {{"add", add, METH_VARARGS, "a + b"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "NAME", NULL, -1, methods};

PyMODINIT_FUNC PyInit_NAME(void) { return PyModule_Create(&module); }
'''
HONEST_C = "a + b);\n}\n", "a + b);  /* the sum */\n}\n"
REGRESSION_C = "PyLong_FromLong(a + b)", "PyLong_FromLong(a - b)"
BROKEN_C = "long a, b;", "long a, b"  # no longer compiles

FASTADD = "csrc/fastadd.c"
SPEEDUPS = "speedy/_speedups.c"
TEST_FASTADD = "tests/test_fastadd.py"
PROJECT = {
    "pyproject.toml": SETUPTOOLS_PYPROJECT,
    # (both optional, as simplejson's is: without a compiler the build still succeeds, and what the tests
    # import decides; with one, a module that is only an extension is gated as ujson's is)
    "setup.py": setup_py("speedy", "packages=['speedy']",
                         "ext_modules=[Extension('fastadd', ['csrc/fastadd.c'], optional=True), "
                         "Extension('speedy._speedups', ['speedy/_speedups.c'], optional=True)]"),
    FASTADD: C_MODULE.replace("NAME", "fastadd"),
    TEST_FASTADD: ("import fastadd\n\n\ndef test_add():\n    assert fastadd.add(2, 3) == 5\n\n\n"
                   "def test_negative():\n    assert fastadd.add(-2, -3) == -5\n"),
    "speedy/__init__.py": ("try:\n    from speedy._speedups import add\n    COMPILED = True\n"
                           "except ImportError:\n    from speedy._pure import add\n    COMPILED = False\n"),
    "speedy/_pure.py": "def add(a, b):\n    return a + b\n",
    SPEEDUPS: C_MODULE.replace("NAME", "_speedups"),
    "tests/test_speedy.py": ("import speedy\n\n\ndef test_add():\n    assert speedy.add(2, 3) == 5\n\n\n"
                             "def test_compiled():\n    assert speedy.COMPILED\n"),
    ".github/gate.yml": POLICY,
}
DOCUMENTED_PURE: dict[str, str | None] = {"speedy/_pure.py": 'def add(a, b):\n    """a + b"""\n    return a + b\n'}


def _edit(path: str, change: tuple[str, str]) -> dict[str, str | None]:
    old, new = change
    assert old in PROJECT[path]
    return {path: PROJECT[path].replace(old, new)}


class Heads:
    """One repository's base and the heads proposed against it, each scored once, when a test first asks."""

    def __init__(self, root: Path, files: dict[str, str], environ: dict[str, str]) -> None:
        self.repo = Repo(root)
        self.base = self.repo.commit("base", dict(files))
        self.environ = environ

    def head(self, name: str, files: dict[str, str | None], binaries: dict[str, bytes] | None = None) -> str:
        """A branch `name` from the base with one commit of `files` (and the native files `binaries`)."""
        self.repo.git("checkout", "-q", "-b", name, self.base)
        for path, data in (binaries or {}).items():
            (self.repo.root / path).write_bytes(data)
            self.repo.git("add", path)
        return self.repo.commit(f"bot: {name}", files)

    @functools.cache  # noqa: B019 (the module's only instances: each head is scored once)
    def verdict(self, name: str) -> Verdict | GateFailure:
        """The verdict on head `name`, or why the gate stopped."""
        handle = gitcli.Repo(self.repo.root)
        with pytest.MonkeyPatch.context() as patch:
            patch.delenv("PIP_CONSTRAINT", raising=False)
            for key, value in self.environ.items():
                patch.setenv(key, value)
            try:
                with subject_from_commits(handle, self.base, handle.commit(name).hexsha) as found:
                    return score(found)
            except GateFailure as stopped:
                return stopped


def _scored(heads: Heads, name: str) -> Verdict:
    verdict = heads.verdict(name)
    assert isinstance(verdict, Verdict), verdict.message
    return verdict


@pytest.fixture(scope="module")
def offline(wheelhouse: Path, gate_cache_root: Path) -> dict[str, str]:  # noqa: F811
    """The environment of every gate here: pip sees only the wheelhouse (setuptools added: the project's build
    requirement), and the gate's cache is the session's."""
    if not list(wheelhouse.glob("setuptools-*.whl")):
        wheel_of_installed(wheelhouse, "setuptools")
    return {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheelhouse),
            "GATE_CACHE_DIR": str(gate_cache_root)}


def _compiled(tmp: Path, name: str, source: str) -> bytes:
    """`source` compiled here into the extension module `name`, as a wheel of it would hold it."""
    assert CC is not None
    (tmp / f"{name}.c").write_text(source)
    out = tmp / f"{name}.so"
    subprocess.run([CC, "-shared", "-fPIC", f"-I{INCLUDE}", str(tmp / f"{name}.c"), "-o", str(out)], check=True)
    return out.read_bytes()


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory, offline: dict[str, str]) -> Heads:
    """The project with the machine's compiler: its heads."""
    heads = Heads(tmp_path_factory.mktemp("native") / "repo", PROJECT, offline)
    heads.head("honest", {**_edit(FASTADD, HONEST_C), **_edit(SPEEDUPS, HONEST_C)})
    heads.head("regression", {**_edit(FASTADD, REGRESSION_C), **_edit(SPEEDUPS, REGRESSION_C)})
    heads.head("speedups-broken", _edit(SPEEDUPS, BROKEN_C))
    if CC is not None:
        # Both modules compiled here from the base's right C, committed beside a regression in that C.
        tmp = tmp_path_factory.mktemp("prebuilt")
        suffix = _sysconfig("sysconfig.get_config_var('EXT_SUFFIX')")
        heads.head("prebuilt", {**_edit(FASTADD, REGRESSION_C), **_edit(SPEEDUPS, REGRESSION_C)},
                   {f"fastadd{suffix}": _compiled(tmp, "fastadd", PROJECT[FASTADD]),
                    f"speedy/_speedups{suffix}": _compiled(tmp, "_speedups", PROJECT[SPEEDUPS])})
    return heads


@pytest.fixture(scope="module")
def no_compiler(tmp_path_factory: pytest.TempPathFactory, offline: dict[str, str]) -> Callable[[bool], Heads]:
    """The project on a runner with no C compiler on its PATH (only git): its heads, with the tests of the
    module that is only an extension or without them."""
    tools = tmp_path_factory.mktemp("bin")
    found = shutil.which("git")
    assert found is not None
    (tools / "git").symlink_to(found)

    @functools.cache
    def heads(with_fastadd_tests: bool) -> Heads:
        files = dict(PROJECT) if with_fastadd_tests else {k: v for k, v in PROJECT.items() if k != TEST_FASTADD}
        made = Heads(tmp_path_factory.mktemp("no-compiler") / "repo", files, {**offline, "PATH": str(tools)})
        made.head("honest", DOCUMENTED_PURE)
        made.head("speedups-regression", _edit(SPEEDUPS, REGRESSION_C))
        return made
    return heads


@needs_compiler
def test_an_honest_change_to_the_c_code_is_accepted_with_the_compiled_modules_tested(compiled: Heads) -> None:
    verdict = _scored(compiled, "honest")

    facts = dict(verdict.facts)
    assert "build" not in facts, facts["build"]
    assert facts["compiler"].endswith("read-only in the build") and "Python" not in facts["compiler"].split()[0]
    assert verdict.accepted and verdict.blocked_reasons == ()
    assert suite_statuses(verdict) == {"tests/test_fastadd.py::test_add": "passed",
                                       "tests/test_fastadd.py::test_negative": "passed",
                                       "tests/test_speedy.py::test_add": "passed",
                                       "tests/test_speedy.py::test_compiled": "passed"}


@needs_compiler
def test_a_regression_in_the_c_code_is_blocked_naming_the_tests_that_caught_it(compiled: Heads) -> None:
    """ujson's shape stopped the gate (exit 3: the base's suite could not import the module), and simplejson's
    `_speedups` was tested only through its pure-Python fallback, so a regression in its C code was accepted.
    The base's extensions are compiled for the baseline, the head's for its run, and each test that calls the
    changed C is charged."""
    verdict = _scored(compiled, "regression")

    assert not verdict.accepted
    assert suite_statuses(verdict)["tests/test_speedy.py::test_compiled"] == "passed"
    assert sorted(message.split(" failed")[0] for message in charged_messages(verdict)) == [
        "tests/test_fastadd.py::test_add", "tests/test_fastadd.py::test_negative", "tests/test_speedy.py::test_add"]


@needs_compiler
def test_an_optional_extension_that_no_longer_compiles_goes_to_a_human(compiled: Heads) -> None:
    """The head's C does not compile: its build falls back to the pure-Python module and every test of the
    behaviour passes. The base's baseline ran its own compiled extension (`test_compiled` passed there)."""
    verdict = _scored(compiled, "speedups-broken")

    assert not verdict.accepted
    assert suite_statuses(verdict)["tests/test_speedy.py::test_add"] == "passed"
    assert suite_statuses(verdict)["tests/test_speedy.py::test_compiled"] == "failed"
    assert [reason for reason in verdict.blocked_reasons if "speedy._speedups" in reason] == [
        "the head's build compiled no speedy._speedups, which the base's build compiled: the tests ran without "
        "that extension (an optional one's pure-Python fallback), so a human must review it"]


@needs_compiler
def test_prebuilt_extensions_committed_in_the_head_are_never_loaded(compiled: Heads) -> None:
    """The head commits both modules compiled from the right C, beside a regression in their C sources: the
    tests load what the sandbox compiled from the sources (a committed module would pass them), and both
    regressions are charged."""
    verdict = _scored(compiled, "prebuilt")

    assert not verdict.accepted
    assert suite_statuses(verdict) == {"tests/test_fastadd.py::test_add": "failed",
                                       "tests/test_fastadd.py::test_negative": "failed",
                                       "tests/test_speedy.py::test_add": "failed",
                                       "tests/test_speedy.py::test_compiled": "passed"}


def test_without_a_compiler_the_verdict_says_so_and_a_change_to_the_c_code_goes_to_a_human(
        no_compiler: Callable[[bool], Heads], capsys: pytest.CaptureFixture[str]) -> None:
    """A runner with no C compiler: the optional extension is not built, its tests run the fallback, and no
    test can check a change to its C source. `gate doctor --repo` says so too."""
    heads = no_compiler(False)
    honest, changed_c = _scored(heads, "honest"), _scored(heads, "speedups-regression")

    compiler = dict(honest.facts)["compiler"]
    assert compiler.startswith("none: no C compiler (") and f"on the PATH {heads.environ['PATH']}" in compiler
    assert honest.accepted and honest.blocked_reasons == ()
    assert suite_statuses(honest)["tests/test_speedy.py::test_add"] == "passed"
    assert not changed_c.accepted
    [reason] = changed_c.blocked_reasons
    assert reason.startswith(f"the change edits {SPEEDUPS}, which the project's build compiles, and no compiler "
                             "can build it here (no C compiler (")
    assert reason.endswith("no test ran that code, so a human must review it (or give the runner a C compiler "
                           "and the interpreter's headers)")
    # And ahead of the first PR, on the repository as it is.
    heads.repo.git("checkout", "-q", heads.base)
    with pytest.MonkeyPatch.context() as patch:
        for key, value in heads.environ.items():
            patch.setenv(key, value)
        assert main(["doctor", "--repo", str(heads.repo.root)]) == 0
    assert f"  compiler: {compiler}\n" in capsys.readouterr().out


def test_a_base_whose_tests_need_the_extension_names_the_missing_compiler(
        no_compiler: Callable[[bool], Heads]) -> None:
    """The base's tests import the compiled module itself: without a compiler its suite cannot run (exit 3), and
    the advice is one the maintainer can follow, not a policy key."""
    heads = no_compiler(True)

    stopped = heads.verdict("honest")

    assert isinstance(stopped, GateFailure)
    assert "No module named 'fastadd'" in stopped.message
    assert stopped.message.endswith(
        "its project's compiled extensions are not built: this machine has no compiler the sandbox's build can "
        f"use (no C compiler ({_sysconfig('sysconfig.get_config_var(chr(67) + chr(67))').split()[0]}, which "
        f"{run_interpreter()} builds extensions with) on the PATH {heads.environ['PATH']}); install a C compiler "
        "and the interpreter's headers where the gate runs (gcc and python3-dev; a hosted runner has both), and "
        "see `gate doctor --repo .`")



def test_a_change_to_the_c_code_of_a_project_the_policy_does_not_build_goes_to_a_human(
        tmp_path_factory: pytest.TempPathFactory, offline: dict[str, str]) -> None:
    """`environment: null`: the tests run the tree as it is, never the compiled code (its fallback here)."""
    files = {**{k: v for k, v in PROJECT.items() if k != TEST_FASTADD},
             ".github/gate.yml": POLICY + "environment: null\n"}
    heads = Heads(tmp_path_factory.mktemp("unbuilt") / "repo", files, offline)
    heads.head("speedups-regression", _edit(SPEEDUPS, REGRESSION_C))

    verdict = _scored(heads, "speedups-regression")

    assert "compiler" not in dict(verdict.facts)
    assert suite_statuses(verdict)["tests/test_speedy.py::test_add"] == "passed"
    assert not verdict.accepted
    assert list(verdict.blocked_reasons) == [
        f"the change edits {SPEEDUPS}, which the project's build compiles, and the policy builds no environment "
        "(`environment: null`), so the project is never built: no test ran that code, so a human must review it "
        "(or let the gate build it: remove `environment: null` from the policy)"]
