"""The head's project built in the sandbox: what its build writes (a version file, metadata) exists for the
repository's tests, as in its CI.

A real project whose in-tree build backend writes `src/verpkg/_version.py` (git-ignored, as hatch-vcs and
setuptools-scm do) from SETUPTOOLS_SCM_PRETEND_VERSION, and whose package imports it; its tests check the
version against `importlib.metadata`. Without the build neither exists in the tree the tests run in.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gate.errors import GateFailure
from gate.sandbox.runner import LayeredSandbox
from tests.git_support import Repo
from tests.projects import (  # noqa: F401
    BACKEND,
    gate_cache,
    gate_cache_root,
    offline_pip,
    project_repo,
    pyproject,
    wheelhouse,
    write_wheel,
)
from tests.suite_support import REWRITING_PLUGIN, charged_messages, score_repo, suite_statuses

BUILD_WHEEL = "def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):\n"
# The build writes the version file before building the wheel, as hatch-vcs' build hook does.
VERSIONED_BACKEND = BACKEND.replace(BUILD_WHEEL, BUILD_WHEEL +
                                    "    where = 'src/verpkg' if os.path.isdir('src') else 'verpkg'\n"
                                    "    with open(f'{where}/_version.py', 'w') as f:\n"
                                    "        version = os.environ['SETUPTOOLS_SCM_PRETEND_VERSION']\n"
                                    "        f.write(f'__version__ = {version!r}\\n')\n"
                                    ).replace("project['version']", "os.environ['SETUPTOOLS_SCM_PRETEND_VERSION']")
PACKAGE = "from verpkg._version import __version__\n\n\ndef double(x):\n    return 2 * x\n"
TESTS = '''\
from importlib import metadata

import verpkg


def test_double():
    assert verpkg.double(21) == 42


def test_version_is_the_metadata():
    assert verpkg.__version__ == metadata.version("verpkg")
'''
POLICY = "budget: 1\ntests:\n  paths: [tests]\n  test_timeout: 5\n"


def _repo(root: Path, package: str = "src/verpkg", dependencies: tuple[str, ...] = ("checkhelp",),
          tests: str = TESTS, scm: str = "") -> Repo:
    """The project in a src layout (`package` "src/verpkg") or a flat one ("verpkg"); `scm` is its
    `[tool.setuptools_scm]` settings."""
    repo = project_repo(root, {"_backend/backend.py": VERSIONED_BACKEND, ".gitignore": f"{package}/_version.py\n",
                               "pyproject.toml": pyproject("verpkg", list(dependencies),
                                                           extra=f"\n[tool.setuptools_scm]\n{scm}" if scm else ""),
                               f"{package}/__init__.py": PACKAGE, "tests/test_verpkg.py": tests,
                               ".github/gate.yml": POLICY})
    repo.git("tag", "v1.4.0", "main")
    return repo


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_an_honest_change_to_a_project_with_a_generated_version_file_is_accepted(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    repo.commit("bot: document double", {"src/verpkg/__init__.py": PACKAGE.replace(
        "def double(x):\n", 'def double(x):\n    """Twice x."""\n')})

    verdict = score_repo(repo)

    assert suite_statuses(verdict) == {"tests/test_verpkg.py::test_double": "passed",
                                       "tests/test_verpkg.py::test_version_is_the_metadata": "passed"}
    assert verdict.accepted and verdict.total == 0
    assert "build" not in dict(verdict.facts)


# prettytable's test of its version's shape, which its `local_scheme = "no-local-version"` keeps public (no
# `+g1a2b3c4`, whose last digit is a letter one commit in three): its own checkout builds such a version.
PUBLIC_VERSION_TEST = TESTS + '''

def test_the_version_is_a_public_one():
    assert "+" not in verpkg.__version__ and verpkg.__version__[-1].isdigit()
'''


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_a_version_without_the_local_part_the_project_drops_is_built_so_for_the_head(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo", tests=PUBLIC_VERSION_TEST, scm='local_scheme = "no-local-version"\n')
    repo.commit("bot: document double", {"src/verpkg/__init__.py": PACKAGE.replace(
        "def double(x):\n", 'def double(x):\n    """Twice x."""\n')})

    verdict = score_repo(repo)

    assert suite_statuses(verdict)["tests/test_verpkg.py::test_the_version_is_a_public_one"] == "passed"
    assert verdict.accepted and verdict.total == 0


# pbr's shape (munch's): the version from PBR_VERSION, and no build at all without it in a tree that is neither a
# git checkout nor an sdist (an export).
PBR_BACKEND = VERSIONED_BACKEND.replace("SETUPTOOLS_SCM_PRETEND_VERSION", "PBR_VERSION")
GITS_VERSION_TEST = TESTS + '''

def test_the_version_is_the_one_git_gives():
    assert verpkg.__version__.startswith("1.4.")
'''


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_a_project_whose_build_reads_pbrs_version_is_built_with_the_one_git_gives(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo", tests=GITS_VERSION_TEST)
    repo.commit("bot: build as pbr does", {"_backend/backend.py": PBR_BACKEND})
    repo.git("branch", "-f", "main")
    repo.git("tag", "-f", "v1.4.0", "main")
    repo.commit("bot: document double", {"src/verpkg/__init__.py": PACKAGE.replace(
        "def double(x):\n", 'def double(x):\n    """Twice x."""\n')})

    verdict = score_repo(repo)

    assert "build" not in dict(verdict.facts), verdict.facts
    assert set(suite_statuses(verdict).values()) == {"passed"}, verdict.cases
    assert verdict.accepted and verdict.total == 0


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_a_regression_in_a_built_project_is_blocked_naming_the_failing_test(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    repo.commit("bot: speed up double", {"src/verpkg/__init__.py": PACKAGE.replace("2 * x", "x + 2")})

    verdict = score_repo(repo)

    assert not verdict.accepted
    assert suite_statuses(verdict) == {"tests/test_verpkg.py::test_double": "failed",
                                       "tests/test_verpkg.py::test_version_is_the_metadata": "passed"}
    [message] = charged_messages(verdict)
    assert message.startswith("tests/test_verpkg.py::test_double failed at tests/test_verpkg.py:")
    assert "(it passes on the base)" in message


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_the_projects_own_pytest_plugin_is_said_not_to_load(tmp_path: Path) -> None:
    """typeguard's shape: its wheel declares its pytest plugin (`[pytest11]`), which pytest would load before any
    test, the head's code with it; the gate never loads it, and the verdict says so, for the tests that need it
    (its options, its fixtures) fail on both sides."""
    repo = _repo(tmp_path / "repo")
    backend = VERSIONED_BACKEND.replace("        for arc, data in items:\n",
                                        "        items.append((f'{info}/entry_points.txt', "
                                        "b'[pytest11]\\nverp = verpkg.plug\\n'))\n        for arc, data in items:\n")
    assert backend != VERSIONED_BACKEND
    repo.commit("base: declare the plugin", {"_backend/backend.py": backend})
    repo.git("branch", "-f", "main")
    repo.commit("bot: document double", {"src/verpkg/__init__.py": PACKAGE.replace(
        "def double(x):\n", 'def double(x):\n    """Twice x."""\n')})

    verdict = score_repo(repo)

    notes = [note for key, note in verdict.facts if key == "plugin"]
    assert [note.partition(": it would")[0] for note in notes] == [
        "the project's pytest plugin verp (verpkg.plug) is not loaded"]
    assert "build" not in dict(verdict.facts)  # (it built)
    assert verdict.accepted


# zope.interface's shape: its package in a namespace package (`nsp`, declared by its own `__init__.py`) that
# the environment shares: a test dependency installs another portion of it (zope.testing's `zope/testing/`).
NAMESPACED_TESTS = TESTS.replace("import verpkg\n", "from nsp import helper, verpkg\n") + (
    "\n\ndef test_the_environments_portion():\n    assert helper.same(1, 1)\n")


@pytest.mark.slow
def test_a_package_in_a_namespace_the_environment_shares_gets_what_its_build_wrote(
        tmp_path: Path, offline_pip: Path) -> None:  # noqa: F811
    """The build writes `src/nsp/verpkg/_version.py`; the environment's `nsp/` holds another distribution's
    portion only, so what the build wrote for `nsp.verpkg` (a version file, a compiled extension) reaches the
    tests as in the project's CI, and the environment's `nsp.helper` is still the one they import."""
    write_wheel(offline_pip, "nsp-helper", {"nsp/helper/__init__.py": "def same(a, b):\n    return a == b\n"})
    backend = VERSIONED_BACKEND.replace("'src/verpkg' if os.path.isdir('src') else 'verpkg'", "'src/nsp/verpkg'")
    package = PACKAGE.replace("from verpkg.", "from nsp.verpkg.")
    repo = project_repo(tmp_path / "repo", {
        "_backend/backend.py": backend, ".gitignore": "src/nsp/verpkg/_version.py\n",
        "pyproject.toml": pyproject("verpkg", ["nsp-helper"]),
        "src/nsp/__init__.py": "__path__ = __import__('pkgutil').extend_path(__path__, __name__)\n",
        "src/nsp/verpkg/__init__.py": package, "tests/test_verpkg.py": NAMESPACED_TESTS, ".github/gate.yml": POLICY})
    repo.git("tag", "v1.4.0", "main")
    repo.commit("bot: document double", {"src/nsp/verpkg/__init__.py": package.replace(
        "def double(x):\n", 'def double(x):\n    """Twice x."""\n')})

    verdict = score_repo(repo)

    assert "build" not in dict(verdict.facts)
    assert suite_statuses(verdict) == {"tests/test_verpkg.py::test_double": "passed",
                                       "tests/test_verpkg.py::test_version_is_the_metadata": "passed",
                                       "tests/test_verpkg.py::test_the_environments_portion": "passed"}
    assert verdict.accepted


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_a_build_that_fails_in_the_sandbox_is_a_note_and_the_tree_runs(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    # The head's build needs the network (or a compiler it lacks): the sandbox has neither.
    broken = VERSIONED_BACKEND.replace(BUILD_WHEEL, BUILD_WHEEL +
                                       "    import socket; socket.create_connection(('pypi.org', 443), timeout=3)\n")
    repo.commit("bot: fetch at build time", {"_backend/backend.py": broken})

    verdict = score_repo(repo)

    note = dict(verdict.facts)["build"]
    assert note.startswith("head: the project did not build in the sandbox (exit status 1)")


# A flat layout (the package beside pyproject.toml, imported from the tree as pytest puts it first) and no
# dependency at all (isodate's shape: the default environment still installs the build's requirements and
# builds it, as `pip install -e .` does in its CI).
@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
@pytest.mark.parametrize("package", ["verpkg", "src/verpkg"])
def test_a_project_with_no_dependency_is_built_and_its_regression_blocked(tmp_path: Path, package: str) -> None:
    repo = _repo(tmp_path / "repo", package, dependencies=())
    repo.commit("bot: document double", {f"{package}/__init__.py": PACKAGE.replace(
        "def double(x):\n", 'def double(x):\n    """Twice x."""\n')})
    honest = score_repo(repo)
    repo.commit("bot: speed up double", {f"{package}/__init__.py": PACKAGE.replace("2 * x", "x + 2")})

    regression = score_repo(repo)

    assert honest.accepted and "build" not in dict(honest.facts)
    assert set(suite_statuses(honest).values()) == {"passed"}
    assert not regression.accepted
    assert suite_statuses(regression) == {"tests/test_verpkg.py::test_double": "failed",
                                          "tests/test_verpkg.py::test_version_is_the_metadata": "passed"}


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_what_the_heads_build_adds_never_reaches_the_suites_files_nor_leaves_the_tree(tmp_path: Path) -> None:
    """The head's backend is the bot's code: its wheel brings a conftest.py that passes every test, for the
    tests folder, and a file for a folder of the head that links out of the tree (the export leaves links out,
    and the copy of what the build adds follows none)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    repo = _repo(tmp_path / "repo", "verpkg", dependencies=())
    smuggled = VERSIONED_BACKEND.replace(
        "        wheel_meta = ", f"        items += [('tests/conftest.py', {REWRITING_PLUGIN.encode()!r}), "
        "('verpkg/out/planted.py', b'')]\n        wheel_meta = ")
    repo.commit("bot: speed up double", {"_backend/backend.py": smuggled,
                                         "verpkg/__init__.py": PACKAGE.replace("2 * x", "x + 2")})
    (repo.root / "verpkg" / "out").symlink_to(outside)
    repo.git("add", "verpkg/out")
    repo.git("commit", "-qm", "bot: a link")

    verdict = score_repo(repo)

    assert not verdict.accepted
    assert suite_statuses(verdict)["tests/test_verpkg.py::test_double"] == "failed"
    assert list(outside.iterdir()) == []


def test_a_build_the_sandbox_stopped_is_not_remembered(tmp_path: Path, sandbox: LayeredSandbox) -> None:
    """A build that ran out of time on a loaded machine is tried again by the next gate; one that failed on its
    own is remembered (the next gate gives the same note without building)."""
    from gate.environment import BuildLayer
    from gate.environment.project import build
    from gate.sandbox.base import Limits

    tree = tmp_path / "tree"
    (tree / "_backend").mkdir(parents=True)
    (tree / "pyproject.toml").write_text(pyproject("slow"))
    (tree / "_backend" / "backend.py").write_text("import time\n\n\ndef build_wheel(*args, **kwargs):\n"
                                                  "    time.sleep(30)\n")
    layer = BuildLayer(tmp_path / "layers" / "slow", "1.0")
    layer.path.mkdir(parents=True)
    quick = Limits(wall_s=1.0, cpu_s=1.0)

    stopped = build(sandbox, lambda: tree, layer, (), quick)
    (tree / "_backend" / "backend.py").write_text("def build_wheel(*args, **kwargs):\n    raise SystemExit(4)\n")
    failed = build(sandbox, lambda: tree, layer, (), quick)
    (tree / "_backend" / "backend.py").write_text("")
    again = build(sandbox, lambda: tree, layer, (), quick)

    assert stopped.startswith("the project did not build in the sandbox (wall timeout)"), stopped
    assert failed.startswith("the project did not build in the sandbox (exit status 4)"), failed
    assert again == failed


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="without root a run sees the host's files: the build would pass")
@pytest.mark.usefixtures("offline_pip")
def test_a_base_whose_suite_needs_its_build_and_does_not_build_says_why(tmp_path: Path) -> None:
    """The base's tests import the version file its build writes; its build reads a file of the machine that the
    sandbox's root does not hold (it installs fine on the runner), so its suite cannot run: exit 3, and the
    advice is about the build, not the environment's keys."""
    broken = VERSIONED_BACKEND.replace(BUILD_WHEEL, BUILD_WHEEL + "    open('/etc/hostname').read()\n")
    repo = project_repo(tmp_path / "repo", {"_backend/backend.py": broken, ".gitignore": "verpkg/_version.py\n",
                                            "pyproject.toml": pyproject("verpkg", ["checkhelp"]),
                                            "verpkg/__init__.py": PACKAGE, "tests/test_verpkg.py": TESTS,
                                            ".github/gate.yml": POLICY})
    repo.commit("bot: document double", {"verpkg/__init__.py": PACKAGE.replace(
        "def double(x):\n", 'def double(x):\n    """Twice x."""\n')})

    with pytest.raises(GateFailure) as failed:
        score_repo(repo)

    assert "No module named 'verpkg._version'" in failed.value.message
    assert "; the base's build failed: the project did not build in the sandbox (exit status 1): " \
           in failed.value.message
    assert failed.value.message.endswith("No such file or directory: '/etc/hostname'; fix its build (or what the "
                                         "environment installs for it) and see `gate doctor --repo .`")
