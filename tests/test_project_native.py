"""A project's compiled extensions, built in the sandbox by its own build (setuptools) with the runner's compiler
and the interpreter's headers bound read-only into the run's root: the native code the sandbox compiled from
the head's tree is what its tests load (never a `.so` the tree or the wheel brings), the base's for the
baseline. Two shapes: a mandatory extension at the top (ujson's), and an optional one beside a pure-Python
fallback (simplejson's `_speedups`), where a regression in the C code must be charged, not hidden by the
fallback. Where no compiler is present, the verdict says so and a change to the C code goes to a human."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gate.errors import GateFailure
from gate.sandbox.detect import run_interpreter
from tests.git_support import Repo
from tests.native_support import POLICY, SETUPTOOLS_PYPROJECT, setup_py, setuptools_wheelhouse  # noqa: F401
from tests.projects import gate_cache, gate_cache_root, offline_pip, wheelhouse  # noqa: F401
from tests.suite_support import charged_messages, score_repo, suite_statuses


def _sysconfig(expression: str) -> str:
    """`expression` of the sandbox interpreter's sysconfig."""
    return subprocess.run([run_interpreter(), "-c", f"import sysconfig; print({expression})"], capture_output=True,
                          text=True, check=True).stdout.strip()


CC = shutil.which("gcc") or shutil.which("cc")
needs_compiler = pytest.mark.skipif(
    CC is None or not Path(_sysconfig("sysconfig.get_paths()['include']"), "Python.h").is_file(),
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

# ujson's shape: the module is the extension, nothing else.
MANDATORY = {
    "pyproject.toml": SETUPTOOLS_PYPROJECT,
    "setup.py": setup_py("fastadd", "ext_modules=[Extension('fastadd', ['csrc/fastadd.c'])]"),
    "csrc/fastadd.c": C_MODULE.replace("NAME", "fastadd"),
    "tests/test_fastadd.py": ("import fastadd\n\n\ndef test_add():\n    assert fastadd.add(2, 3) == 5\n\n\n"
                              "def test_negative():\n    assert fastadd.add(-2, -3) == -5\n"),
    ".github/gate.yml": POLICY,
}
# simplejson's shape: an optional extension, a pure-Python fallback when it is not built.
OPTIONAL = {
    "pyproject.toml": SETUPTOOLS_PYPROJECT,
    "setup.py": setup_py("speedy", "packages=['speedy']",
                         "ext_modules=[Extension('speedy._speedups', ['speedy/_speedups.c'], optional=True)]"),
    "speedy/__init__.py": ("try:\n    from speedy._speedups import add\n    COMPILED = True\n"
                           "except ImportError:\n    from speedy._pure import add\n    COMPILED = False\n"),
    "speedy/_pure.py": "def add(a, b):\n    return a + b\n",
    "speedy/_speedups.c": C_MODULE.replace("NAME", "_speedups"),
    "tests/test_speedy.py": ("import speedy\n\n\ndef test_add():\n    assert speedy.add(2, 3) == 5\n\n\n"
                             "def test_compiled():\n    assert speedy.COMPILED\n"),
    ".github/gate.yml": POLICY,
}
SPEEDUPS = "speedy/_speedups.c"


def _repo(root: Path, files: dict[str, str]) -> Repo:
    repo = Repo(root)
    repo.commit("base", dict(files))
    repo.git("checkout", "-q", "-b", "bot")
    return repo


def _edit(files: dict[str, str], path: str, change: tuple[str, str]) -> dict[str, str | None]:
    old, new = change
    assert old in files[path]
    return {path: files[path].replace(old, new)}


@pytest.mark.slow
@needs_compiler
@pytest.mark.usefixtures("setuptools_wheelhouse")
def test_a_mandatory_extension_is_compiled_in_the_sandbox_and_its_c_regression_blocked(tmp_path: Path) -> None:
    """ujson's shape stopped the gate (exit 3: the base's suite could not import it). The base's extension is
    compiled for the baseline, the head's for its run."""
    repo = _repo(tmp_path / "repo", MANDATORY)
    repo.commit("bot: comment the sum", _edit(MANDATORY, "csrc/fastadd.c", HONEST_C))
    honest = score_repo(repo)
    repo.commit("bot: subtract", _edit(MANDATORY, "csrc/fastadd.c", REGRESSION_C))

    regression = score_repo(repo)

    facts = dict(honest.facts)
    assert "build" not in facts, facts["build"]
    assert facts["compiler"].endswith("read-only in the build") and "Python" not in facts["compiler"].split()[0]
    assert honest.accepted and suite_statuses(honest) == {"tests/test_fastadd.py::test_add": "passed",
                                                          "tests/test_fastadd.py::test_negative": "passed"}
    assert not regression.accepted
    assert suite_statuses(regression) == {"tests/test_fastadd.py::test_add": "failed",
                                          "tests/test_fastadd.py::test_negative": "failed"}
    assert {message.split(" failed")[0] for message in charged_messages(regression)} == {
        "tests/test_fastadd.py::test_add", "tests/test_fastadd.py::test_negative"}


@pytest.mark.slow
@needs_compiler
@pytest.mark.usefixtures("setuptools_wheelhouse")
def test_a_regression_in_an_optional_extensions_c_code_is_charged_not_hidden_by_its_fallback(tmp_path: Path) -> None:
    """simplejson's `_speedups`: before, only the pure-Python fallback ran, and a regression in the C code was
    accepted."""
    repo = _repo(tmp_path / "repo", OPTIONAL)
    repo.commit("bot: comment the sum", _edit(OPTIONAL, SPEEDUPS, HONEST_C))
    honest = score_repo(repo)
    repo.commit("bot: subtract", _edit(OPTIONAL, SPEEDUPS, REGRESSION_C))

    regression = score_repo(repo)

    assert honest.accepted and honest.blocked_reasons == ()
    assert suite_statuses(honest) == {"tests/test_speedy.py::test_add": "passed",
                                      "tests/test_speedy.py::test_compiled": "passed"}
    assert not regression.accepted
    assert suite_statuses(regression)["tests/test_speedy.py::test_add"] == "failed"
    [message] = charged_messages(regression)
    assert message.startswith("tests/test_speedy.py::test_add failed")


@pytest.mark.slow
@needs_compiler
@pytest.mark.usefixtures("setuptools_wheelhouse")
def test_an_optional_extension_that_no_longer_compiles_goes_to_a_human(tmp_path: Path) -> None:
    """The head's C does not compile: its build falls back to the pure-Python module and every test of the
    behaviour passes. The base's baseline ran its own compiled extension (`test_compiled` passed there)."""
    repo = _repo(tmp_path / "repo", OPTIONAL)
    repo.commit("bot: tidy", _edit(OPTIONAL, SPEEDUPS, BROKEN_C))

    verdict = score_repo(repo)

    assert not verdict.accepted
    assert suite_statuses(verdict) == {"tests/test_speedy.py::test_add": "passed",
                                       "tests/test_speedy.py::test_compiled": "failed"}
    assert [reason for reason in verdict.blocked_reasons if "speedy._speedups" in reason] == [
        "the head's build compiled no speedy._speedups, which the base's build compiled: the tests ran without "
        "that extension (an optional one's pure-Python fallback), so a human must review it"]


@pytest.mark.slow
@needs_compiler
@pytest.mark.usefixtures("setuptools_wheelhouse")
def test_a_prebuilt_extension_committed_in_the_head_is_never_loaded(tmp_path: Path) -> None:
    """The head commits `_speedups` compiled from the right C, beside a regression in its C source: the tests
    load what the sandbox compiled from the source, and the regression is charged."""
    suffix = _sysconfig("sysconfig.get_config_var('EXT_SUFFIX')")
    include = _sysconfig("sysconfig.get_paths()['include']")
    source = tmp_path / "_speedups.c"
    source.write_text(OPTIONAL[SPEEDUPS])
    built = tmp_path / f"_speedups{suffix}"
    assert CC is not None
    subprocess.run([CC, "-shared", "-fPIC", f"-I{include}", str(source), "-o", str(built)], check=True)
    repo = _repo(tmp_path / "repo", OPTIONAL)
    repo.commit("bot: subtract", _edit(OPTIONAL, SPEEDUPS, REGRESSION_C))
    (repo.root / f"speedy/_speedups{suffix}").write_bytes(built.read_bytes())
    repo.git("add", f"speedy/_speedups{suffix}")
    repo.commit("bot: ship the compiled module")

    verdict = score_repo(repo)

    assert not verdict.accepted
    assert suite_statuses(verdict)["tests/test_speedy.py::test_add"] == "failed"
    assert suite_statuses(verdict)["tests/test_speedy.py::test_compiled"] == "passed"


@pytest.mark.slow
@pytest.mark.usefixtures("setuptools_wheelhouse")
def test_without_a_compiler_the_verdict_says_so_and_a_change_to_the_c_code_goes_to_a_human(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A runner with no C compiler on its PATH (only git here): the optional extension is not built, its tests
    run the fallback, and no test can check a change to its C source."""
    tools = tmp_path / "bin"
    tools.mkdir()
    git = shutil.which("git")
    assert git is not None
    (tools / "git").symlink_to(git)
    monkeypatch.setenv("PATH", str(tools))
    repo = _repo(tmp_path / "repo", OPTIONAL)
    repo.commit("bot: document add", {"speedy/_pure.py": 'def add(a, b):\n    """a + b"""\n    return a + b\n'})
    honest = score_repo(repo)
    repo.commit("bot: subtract", _edit(OPTIONAL, SPEEDUPS, REGRESSION_C))

    changed_c = score_repo(repo)

    compiler = dict(honest.facts)["compiler"]
    assert compiler.startswith("none: no C compiler (") and f"on the PATH {tools}" in compiler
    assert honest.accepted and honest.blocked_reasons == ()
    assert suite_statuses(honest)["tests/test_speedy.py::test_add"] == "passed"
    assert not changed_c.accepted
    [reason] = changed_c.blocked_reasons
    assert reason.startswith(f"the change edits {SPEEDUPS}, which the project's build compiles, and no compiler "
                             "can build it here (no C compiler (")
    assert reason.endswith("no test ran that code, so a human must review it (or give the runner a C compiler "
                           "and the interpreter's headers)")


@pytest.mark.slow
@pytest.mark.usefixtures("setuptools_wheelhouse")
def test_a_base_whose_tests_need_the_extension_names_the_missing_compiler(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The base's tests import the compiled module itself: without a compiler its suite cannot run (exit 3), and
    the advice is one the maintainer can follow, not a policy key."""
    tools = tmp_path / "bin"
    tools.mkdir()
    git = shutil.which("git")
    assert git is not None
    (tools / "git").symlink_to(git)
    monkeypatch.setenv("PATH", str(tools))
    repo = _repo(tmp_path / "repo", {**OPTIONAL, "tests/test_c.py": (
        "from speedy._speedups import add\n\n\ndef test_c_add():\n    assert add(2, 3) == 5\n")})
    repo.commit("bot: document add", {"speedy/_pure.py": 'def add(a, b):\n    """a + b"""\n    return a + b\n'})

    with pytest.raises(GateFailure) as failed:
        score_repo(repo)

    assert "No module named 'speedy._speedups'" in failed.value.message
    assert failed.value.message.endswith(
        "its project's compiled extensions are not built: this machine has no compiler the sandbox's build can "
        f"use (no C compiler ({_sysconfig('sysconfig.get_config_var(chr(67) + chr(67))').split()[0]}, which "
        f"{run_interpreter()} builds extensions with) on the PATH {tools}); install a C compiler and the "
        "interpreter's headers where the gate runs (gcc and python3-dev; a hosted runner has both), and see "
        "`gate doctor --repo .`")
