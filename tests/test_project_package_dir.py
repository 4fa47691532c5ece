"""A project whose package lives under `package_dir` (`lib/` holding it), built by setuptools in the sandbox: the
runs import the tree's package, the layer knows which of the wheel's files are the tree's own, and only what
the build wrote reaches the framework check. Before, every module of the package read as written by the build:
a helper that names `sys._getframe` (honest library code) sent every PR to a human."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.git_support import Repo
from tests.native_support import POLICY, SETUPTOOLS_PYPROJECT, setup_py, setuptools_wheelhouse  # noqa: F401
from tests.projects import gate_cache, gate_cache_root, offline_pip, wheelhouse  # noqa: F401
from tests.suite_support import charged_messages, score_repo, suite_statuses

CORE = "def double(x):\n    return 2 * x\n"
# Library code the framework check would flag if it took it for something the build wrote.
CALLER = "import sys\n\n\ndef caller():\n    return sys._getframe(2).f_code.co_name\n"
TESTS = ("from libpkg import double\nfrom libpkg.debug import caller\n\n\n"
         "def test_double():\n    assert double(21) == 42\n\n\n"
         "def test_caller():\n    def inner():\n        return caller()\n    assert inner() == 'test_caller'\n")

# How a project declares where its package lives, each with the folder that holds it. The first is a bare
# setup.py (no pyproject.toml, simplejson's shape): it builds with setuptools, as pip builds it.
LAYOUTS = {
    "setup.py {'': 'lib'}": ({"setup.py": setup_py("libpkg", "package_dir={'': 'lib'}", "packages=['libpkg']")},
                             "lib/libpkg"),
    "setup.cfg libpkg = lib/libpkg": ({"pyproject.toml": SETUPTOOLS_PYPROJECT,
                                       "setup.cfg": "[metadata]\nname = libpkg\nversion = 1.0\n\n[options]\n"
                                                    "packages = libpkg\npackage_dir =\n    libpkg = lib/libpkg\n",
                                       "setup.py": "from setuptools import setup\n\nsetup()\n"}, "lib/libpkg"),
    "pyproject [tool.setuptools] package-dir": (
        {"pyproject.toml": SETUPTOOLS_PYPROJECT + '\n[project]\nname = "libpkg"\nversion = "1.0"\n\n'
                           '[tool.setuptools]\npackages = ["libpkg"]\npackage-dir = {"" = "lib"}\n'}, "lib/libpkg"),
    "setup.py {'libpkg': 'source'}": ({"pyproject.toml": SETUPTOOLS_PYPROJECT,
                                        "setup.py": setup_py("libpkg", "package_dir={'libpkg': 'source'}",
                                                             "packages=['libpkg']")}, "source"),
}


def _repo(root: Path, layout: str) -> tuple[Repo, str]:
    files, folder = LAYOUTS[layout]
    repo = Repo(root)
    repo.commit("base", {**files,
                         f"{folder}/__init__.py": "from libpkg.core import double\n",
                         f"{folder}/core.py": CORE, f"{folder}/debug.py": CALLER,
                         "tests/test_libpkg.py": TESTS, ".github/gate.yml": POLICY})
    repo.git("checkout", "-q", "-b", "bot")
    return repo, folder


@pytest.mark.slow
@pytest.mark.usefixtures("setuptools_wheelhouse")
@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_package_under_package_dir_is_the_trees_honest_change_accepted_regression_blocked(
        tmp_path: Path, layout: str) -> None:
    repo, folder = _repo(tmp_path / "repo", layout)
    repo.commit("bot: document double", {f"{folder}/core.py": CORE.replace(
        "def double(x):\n", 'def double(x):\n    """Twice x."""\n')})
    honest = score_repo(repo)
    repo.commit("bot: speed up double", {f"{folder}/core.py": CORE.replace("2 * x", "x + 2")})

    regression = score_repo(repo)

    assert "build" not in dict(honest.facts), dict(honest.facts)["build"]
    assert "compiler" not in dict(honest.facts)  # (no extension source: no compiler looked for nor bound)
    assert honest.blocked_reasons == ()
    assert honest.accepted and set(suite_statuses(honest).values()) == {"passed"}
    assert not regression.accepted
    assert suite_statuses(regression)["tests/test_libpkg.py::test_double"] == "failed"
    [message] = charged_messages(regression)
    assert message.startswith("tests/test_libpkg.py::test_double failed") and "(it passes on the base)" in message
