"""Dependency groups (`environment.groups`): PEP 735 `[dependency-groups]` and Poetry's groups and
dev-dependencies, installed from the base commit like the rest of the environment (docs/repository.md).

Real projects (the in-tree backend, or Poetry's own poetry-core as their build backend), real pip against a
local wheelhouse, the real sandbox for the suites.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gate.cli import main
from gate.engine import score
from gate.environment import testdeps
from gate.environment.testdeps import project_name
from gate.sources import gitcli
from gate.sources.gitrange import subject_from_commits
from gate.verdict import Verdict
from tests.git_support import Repo
from tests.projects import (  # noqa: F401
    gate_cache,
    gate_cache_root,
    offline_pip,
    project_repo,
    pyproject,
    wheel_of_installed,
    wheelhouse,
    write_wheel,
)
from tests.suite_support import (
    BASE_TESTS,
    BROKEN_MUL,
    CALC,
    CONFTEST,
    DOCUMENTED_MUL,
    TESTS,
    charged_messages,
    suite_statuses,
)

SUITE = "tests:\n  paths: [tests]\n  test_timeout: 3\n"
CASE = 'cases:\n  - name: add\n    function: "calc:add"\n    args: [2, 3]\n    expect: 5\n'
# A PEP 735 project: the test group takes checkhelp from another group; `lint` is never installed (its
# requirement is in no index).
PEP735 = ('\n[dependency-groups]\nhelpers = ["checkhelp>=1"]\ntest = [{include-group = "helpers"}]\n'
          'lint = ["no-such-linter"]\n')
# A Poetry 1 project as tomlkit keeps it: no [project], poetry-core builds it, the tests' dependency a caret
# constraint in a group (and the older dev-dependencies table beside it).
POETRY = '''\
[tool.poetry]
name = "calc"
version = "1.0"
description = "A calculator"
authors = ["A Maintainer <a@example.org>"]

[tool.poetry.dependencies]
python = ">=3.8"

[tool.poetry.group.test.dependencies]
checkhelp = "^1.0"

[tool.poetry.dev-dependencies]
no-such-linter = {version = "^2.0", python = ">=3.8"}

[build-system]
requires = ["poetry-core>=1.0"]
build-backend = "poetry.core.masonry.api"
'''


@pytest.fixture(scope="module")
def caret_wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """checkhelp 1.0 and 2.0 (whose `same` is broken: `^1.0` must not pick it), and poetry-core, for the Poetry
    projects' builds (pip's, then the sandbox's)."""
    folder = tmp_path_factory.mktemp("caret-wheelhouse")
    write_wheel(folder, "checkhelp", {"checkhelp.py": "def same(a, b):\n    return a == b\n"})
    write_wheel(folder, "checkhelp", {"checkhelp.py": "def same(a, b):\n    return False\n"}, version="2.0")
    wheel_of_installed(folder, "poetry-core")
    return folder


@pytest.fixture
def caret_pip(caret_wheelhouse: Path, monkeypatch: pytest.MonkeyPatch,
              gate_cache: Path) -> Path:  # noqa: F811 (the fixture of tests/projects.py)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(caret_wheelhouse))
    monkeypatch.delenv("PIP_CONSTRAINT", raising=False)
    return caret_wheelhouse


def _calc(root: Path, project: str, policy: str) -> Repo:
    return project_repo(root, {"pyproject.toml": project, "calc.py": CALC, "tests/test_calc.py": TESTS,
                               "tests/conftest.py": CONFTEST, ".github/gate.yml": policy})


def _score(repo: Repo, head: str = "bot") -> Verdict:
    handle = gitcli.Repo(repo.root)
    with subject_from_commits(handle, handle.commit("main").hexsha, handle.commit(head).hexsha) as found:
        return score(found)


def _installed(verdict: Verdict) -> str:
    return dict(verdict.facts)["environment"]


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_a_pep735_group_with_include_group_gates_the_projects_suite(tmp_path: Path) -> None:
    repo = _calc(tmp_path / "repo", pyproject("calc", [], extra=PEP735),
                 "budget: 1\nenvironment:\n  groups: [test]\n" + SUITE)
    repo.commit("bot: document mul", {"calc.py": DOCUMENTED_MUL})
    repo.git("checkout", "-q", "-b", "regression", "main")
    repo.commit("bot: mul", {"calc.py": BROKEN_MUL})

    honest = _score(repo, "bot")
    regression = _score(repo, "regression")

    assert honest.accepted and suite_statuses(honest) == dict.fromkeys(BASE_TESTS, "passed"), honest.cases
    assert "checkhelp==1.0" in _installed(honest)
    assert not regression.accepted
    assert suite_statuses(regression)["tests/test_calc.py::test_mul"] == "failed"
    assert any("test_mul" in message for message in charged_messages(regression))


@pytest.mark.slow
@pytest.mark.usefixtures("caret_pip")
def test_a_poetry_group_with_a_caret_constraint_gates_the_projects_suite(tmp_path: Path) -> None:
    """`checkhelp = "^1.0"` is `checkhelp>=1.0,<2.0`: pip takes 1.0 although 2.0 is there; the project is
    built by poetry-core, in pip's build and in the sandbox."""
    repo = _calc(tmp_path / "repo", POETRY, "budget: 1\nenvironment:\n  groups: [test]\n" + SUITE)
    repo.commit("bot: document mul", {"calc.py": DOCUMENTED_MUL})
    repo.git("checkout", "-q", "-b", "regression", "main")
    repo.commit("bot: mul", {"calc.py": BROKEN_MUL})

    honest = _score(repo, "bot")
    regression = _score(repo, "regression")

    assert honest.accepted and suite_statuses(honest) == dict.fromkeys(BASE_TESTS, "passed"), honest.cases
    assert "checkhelp==1.0" in _installed(honest) and "checkhelp==2.0" not in _installed(honest)
    assert not [fact for fact in honest.facts if fact[0] == "build"], honest.facts  # poetry-core built it
    assert not regression.accepted
    assert suite_statuses(regression)["tests/test_calc.py::test_mul"] == "failed"


@pytest.mark.usefixtures("caret_pip")
@pytest.mark.slow
def test_poetry_dev_dependencies_are_the_dev_group(tmp_path: Path) -> None:
    project = POETRY.replace('no-such-linter = {version = "^2.0", python = ">=3.8"}',
                             'checkhelp = {version = "^1.0", python = ">=3.8"}')
    repo = _calc(tmp_path / "repo", project, "environment:\n  groups: [dev]\n" + CASE)
    repo.commit("bot: document mul", {"calc.py": DOCUMENTED_MUL})

    verdict = _score(repo)

    assert verdict.accepted, verdict.cases
    assert "checkhelp==1.0" in _installed(verdict)


@pytest.mark.usefixtures("offline_pip")
def test_without_an_environment_key_the_only_test_group_is_installed(tmp_path: Path) -> None:
    """The default environment takes the group named `test` when no extra or requirements file holds the test
    dependencies; `lint` stays out."""
    repo = _calc(tmp_path / "repo", pyproject("calc", [], extra=PEP735), CASE)
    repo.commit("bot: document mul", {"calc.py": DOCUMENTED_MUL})

    verdict = _score(repo)

    assert verdict.accepted, verdict.cases
    assert "checkhelp==1.0" in _installed(verdict)


@pytest.mark.usefixtures("offline_pip")
def test_a_change_to_a_dependency_group_is_blocked_for_a_human(tmp_path: Path) -> None:
    repo = _calc(tmp_path / "repo", pyproject("calc", [], extra=PEP735), "environment:\n  groups: [test]\n" + CASE)
    repo.commit("bot: a new test dependency",
                {"pyproject.toml": pyproject("calc", [], extra=PEP735.replace('"checkhelp>=1"',
                                                                              '"checkhelp>=1", "requests"'))})

    verdict = _score(repo)

    assert not verdict.accepted
    assert any("[dependency-groups] helpers adds requests" in reason for reason in verdict.blocked_reasons), \
        verdict.blocked_reasons
    assert "requests" not in _installed(verdict)  # scored with the base's group


@pytest.mark.usefixtures("caret_pip")
@pytest.mark.slow
def test_a_change_to_a_poetry_group_is_blocked_for_a_human(tmp_path: Path) -> None:
    repo = _calc(tmp_path / "repo", POETRY, "environment:\n  groups: [test]\n" + CASE)
    repo.commit("bot: a newer checkhelp", {"pyproject.toml": POETRY.replace('"^1.0"', '"^2.0"')})

    verdict = _score(repo)

    assert not verdict.accepted
    assert any("[tool.poetry.group.test.dependencies] adds checkhelp ^2.0 and removes checkhelp ^1.0" in reason
               for reason in verdict.blocked_reasons), verdict.blocked_reasons


@pytest.mark.parametrize("command", [["policy", "check", "--repo"], ["check", "--base", "main", "--head", "bot",
                                                                     "--repo"]],
                         ids=["policy-check", "check"])
def test_a_group_the_base_lacks_is_exit_2_naming_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         command: list[str]) -> None:
    repo = _calc(tmp_path / "repo", pyproject("calc", [], extra=PEP735),
                 "environment:\n  groups: [helpers, tests]\n" + SUITE)
    repo.commit("bot: document mul", {"calc.py": DOCUMENTED_MUL})

    assert main([*command, str(repo.root)]) == 2

    error = capsys.readouterr().err
    assert ".github/gate.yml" in error and "environment.groups[1]: no dependency group 'tests'" in error, error
    assert "it declares: helpers, test, lint" in error


@pytest.mark.slow
def test_gate_doctor_repo_names_a_missing_group_with_exit_2(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    repo = _calc(tmp_path / "repo", POETRY, "environment:\n  groups: [testing]\n" + SUITE)
    repo.git("checkout", "-q", "main")

    assert main(["doctor", "--repo", str(repo.root)]) == 2

    error = capsys.readouterr().err
    assert "environment.groups[0]: no dependency group 'testing'" in error and "it declares: test, dev" in error


@pytest.mark.usefixtures("caret_pip")
def test_a_poetry_project_without_a_build_gets_its_own_dependencies(tmp_path: Path) -> None:
    """Poetry's non-package mode: no [build-system], so nothing builds the project to declare its
    dependencies; `[tool.poetry.dependencies]` is converted like a group (`^1.0`: not checkhelp 2.0)."""
    project = ('[tool.poetry]\nname = "calc"\nversion = "1.0"\npackage-mode = false\n\n'
               '[tool.poetry.dependencies]\npython = "^3.8"\ncheckhelp = "^1.0"\n')
    module = "from checkhelp import same\n\n\ndef add(a, b):\n    return a + b if same(1, 1) else None\n"
    repo = project_repo(tmp_path / "repo", {"pyproject.toml": project, "calc.py": module, ".github/gate.yml": CASE})
    repo.commit("bot: a docstring", {"calc.py": '"""Sums."""\n' + module})

    verdict = _score(repo)

    assert verdict.accepted, verdict.cases
    assert "checkhelp==1.0" in _installed(verdict) and "checkhelp==2.0" not in _installed(verdict)


# aiofiles' shape: PDM's dev-dependencies, the test group beside a lint group no index has.
PDM = '\n[tool.pdm.dev-dependencies]\nlint = ["no-such-linter"]\ntest = ["checkhelp>=1", "-e file:///${PROJECT_ROOT}/#egg=calc"]\n'


@pytest.mark.usefixtures("offline_pip")
@pytest.mark.parametrize("policy", ["environment:\n  groups: [test]\n", ""], ids=["groups: [test]", "by default"])
def test_pdm_dev_dependencies_are_groups(tmp_path: Path, policy: str) -> None:
    """`[tool.pdm.dev-dependencies]` groups install like any other (the project's own editable line left out),
    named or, with no environment key, as the one place the test dependencies live."""
    repo = _calc(tmp_path / "repo", pyproject("calc", [], extra=PDM), policy + CASE)
    repo.commit("bot: document mul", {"calc.py": DOCUMENTED_MUL})

    verdict = _score(repo)

    assert verdict.accepted, verdict.cases
    assert "checkhelp==1.0" in _installed(verdict) and "no-such-linter" not in _installed(verdict)


@pytest.mark.usefixtures("offline_pip")
@pytest.mark.parametrize(("files", "group"), [
    ({"tox.ini": "[tox]\nenvlist = py311\n[testenv]\ndeps =\n    checkhelp>=1\n    lint: no-such-linter\n"
                 "commands = pytest\n"}, "tox:py311"),
    # A condition whose factors are in braces (python-dotenv's `py{310,311,...}: ipython`), expanded as tox does.
    ({"tox.ini": "[tox]\nenvlist = py{310,311}\n[testenv]\ndeps =\n    py{310,311}: checkhelp>=1\n"
                 "    py{38,39}-lint,lint: no-such-linter\ncommands = pytest\n"}, "tox:py311"),
    ({"tox.toml": 'env_list = ["py"]\n[env_run_base]\ndeps = ["checkhelp>=1"]\ncommands = [["pytest"]]\n'}, "tox:py"),
    ({"hatch.toml": '[envs.default]\ndependencies = ["no-such-linter"]\n[envs.test]\ndependencies = ["checkhelp"]\n'},
     "hatch:test"),
    ({"setup.py": "from setuptools import setup\nTESTS = ['checkhelp>=1']\nsetup(name='calc', tests_require=TESTS)\n"},
     "setuptools:tests_require"),
    ({"setup.cfg": "[metadata]\nname = calc\n[options]\ntests_require =\n    checkhelp>=1\n"},
     "setuptools:tests_require"),
], ids=["tox.ini", "tox.ini factors in braces", "tox.toml", "hatch.toml", "setup.py tests_require",
        "setup.cfg tests_require"])
def test_a_tox_or_hatch_environment_is_a_group(tmp_path: Path, files: dict[str, str], group: str) -> None:
    repo = project_repo(tmp_path / "repo", {"pyproject.toml": pyproject("calc", []), "calc.py": CALC, **files,
                                            ".github/gate.yml": f'environment:\n  groups: ["{group}"]\n' + CASE})
    repo.commit("bot: document mul", {"calc.py": DOCUMENTED_MUL})

    verdict = _score(repo)

    assert verdict.accepted, verdict.cases
    assert "checkhelp==1.0" in _installed(verdict) and "no-such-linter" not in _installed(verdict)


@pytest.mark.usefixtures("offline_pip")
def test_a_tox_environment_the_base_lacks_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _calc(tmp_path / "repo", pyproject("calc", []), 'environment:\n  groups: ["tox:py"]\n' + CASE)
    repo.commit("bot: document mul", {"calc.py": DOCUMENTED_MUL})

    assert main(["policy", "check", "--repo", str(repo.root)]) == 2

    assert "environment.groups[0]: no tox environment 'py' in the base commit" in capsys.readouterr().err


@pytest.mark.parametrize(("files", "expected"), [
    ({"setup.py": 'setup(tests_require="""\n    pytest  # the runner\n    # hypothesis for properties\n    mock\n""")'},
     ("pytest", "mock")),
    ({"setup.py": 'setup(tests_require=["pytest  # runner", "  mock  ", ["nose", ("pretend",)]])'},
     ("pytest", "mock", "nose", "pretend")),
    ({"setup.cfg": "[options]\ntests_require =\n    pytest  # runner\n    mock\n"}, ("pytest", "mock")),
    ({"setup.cfg": "[options]\ntests_require = pytest; mock>=2 ; pretend\n"}, ("pytest", "mock>=2", "pretend")),
    ({"setup.cfg": "[options]\ntests_require =\n    pkg @ https://h/a%%20b.whl\n"}, ("pkg @ https://h/a%20b.whl",)),
    ({"setup.py": "T = ['pytest']\nsetup(tests_require=T)\n"}, ("pytest",)),
    # setup.cfg fills what setup.py leaves empty, as setuptools has it
    ({"setup.py": "setup(tests_require=[])", "setup.cfg": "[options]\ntests_require = pytest\n"}, ("pytest",)),
    # what setup.py computes is not setup.cfg's, nor the part of it written as a literal
    ({"setup.py": "T = ['pytest']\nT += ['mock']\nsetup(tests_require=T)\n"}, None),
    ({"setup.py": "T = ['pytest']\nT.append('mock')\nsetup(tests_require=T)\n"}, None),
    ({"setup.py": "BASE = ['pytest']\nsetup(tests_require=BASE + ['mock'])\n",
      "setup.cfg": "[options]\ntests_require = nose\n"}, None),
    ({"setup.py": "setup(tests_require=[1])"}, None),
    ({"setup.cfg": "[options]\ntests_require = a%b\n"}, None),
], ids=["string-comments", "list-comments-nested", "cfg-comments", "cfg-one-line", "cfg-percent", "bound-name",
        "empty-then-cfg", "augmented", "appended", "computed-over-cfg", "not-strings", "cfg-lone-percent"])
def test_tests_require_reads_as_setuptools_reads_it(files: dict[str, str], expected: tuple[str, ...] | None) -> None:
    found = testdeps.tests_require(files.get)

    assert (found.packages if found is not None else None) == expected


@pytest.mark.usefixtures("offline_pip")
def test_tests_require_the_base_lacks_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _calc(tmp_path / "repo", pyproject("calc", []),
                 'environment:\n  groups: ["setuptools:tests_require"]\n' + CASE)
    repo.commit("bot: document mul", {"calc.py": DOCUMENTED_MUL})

    assert main(["policy", "check", "--repo", str(repo.root)]) == 2

    assert ("environment.groups[0]: no tests_require in the base commit's setup.py (a list or string in its "
            "setup(...) call, read without running it) or setup.cfg [options]") in capsys.readouterr().err


@pytest.mark.usefixtures("offline_pip")
def test_a_requirements_file_that_pins_the_project_itself_has_that_line_left_out(tmp_path: Path) -> None:
    """A dev file that pins another version of the project (or installs it editable) would stop every PR with
    exit 3 (pip cannot have both); the gate installs the base's own tree and says which lines it left out."""
    dev = "calc==0.5  # the last release\n-e .\ncheckhelp\n"
    repo = _calc(tmp_path / "repo", pyproject("calc", []),
                 "environment:\n  requirements: [requirements-dev.txt]\n" + CASE)
    repo.commit("base: dev requirements", {"requirements-dev.txt": dev})
    repo.git("branch", "-f", "main", "HEAD")
    repo.commit("bot: document mul", {"calc.py": DOCUMENTED_MUL})

    verdict = _score(repo)

    assert verdict.accepted, verdict.cases
    assert "checkhelp==1.0" in _installed(verdict)
    assert _installed(verdict).endswith("left out, as the project itself: requirements-dev.txt: calc==0.5  # the "
                                        "last release, requirements-dev.txt: -e .")


def test_the_projects_name_is_read_through_a_constant_its_setup_call_names() -> None:
    """`setup(name=NAME)` with `NAME = "calc"` at the module's top (PyYAML's setup.py): the project is `calc`, so
    a requirements line that pins `calc` is the project's own, and a copy an index brings of it is not the
    base's (gate/environment/build.py)."""
    files = {"setup.py": 'from setuptools import setup\n\nNAME = "calc"\nVERSION = "1.0"\n\n'
                         "setup(name=NAME, version=VERSION)\n"}
    assert project_name(files.get) == "calc"
    assert project_name({"setup.py": 'setup(\n    name="calc",\n)\n'}.get) == "calc"
    assert project_name({"setup.py": "setup(name=compute())\n"}.get) is None


@pytest.mark.usefixtures("offline_pip")
def test_the_extras_a_line_asks_of_the_project_itself_are_installed_with_it(tmp_path: Path) -> None:
    """requests' requirements-dev.txt has `-e .[socks]`: the line goes (the base's own tree is installed), what it
    asked of the project does not: the extra's dependencies are there, as in its CI."""
    repo = _calc(tmp_path / "repo", pyproject("calc", [], extras={"more": ["checkhelp"]}),
                 "environment:\n  requirements: [requirements-dev.txt]\n" + CASE)
    repo.commit("base: dev requirements", {"requirements-dev.txt": "-e .[more]\n"})
    repo.git("branch", "-f", "main", "HEAD")
    repo.commit("bot: document mul", {"calc.py": DOCUMENTED_MUL})

    verdict = _score(repo)

    assert verdict.accepted, verdict.cases
    assert "checkhelp==1.0" in _installed(verdict)
    assert _installed(verdict).endswith("left out, as the project itself: requirements-dev.txt: -e .[more]")
