"""What did not run never counts as passed, and pytest runs as the project's CI runs it (docs/repository.md).

A base whose suite does not run in the gate (a file that fails to collect, a fixture only a plugin gives, no
test, fewer tests than its files define) stops the gate with pytest's own words, before the first PR too
(`gate doctor --repo`), and nothing of it is cached; the plugins the base declares load as autoload would
load them in its CI; a broken base test costs more than the default budget. Plugins are wheels built here,
installed by real pip from a local wheelhouse.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.cli import main
from gate.errors import GateFailure
from tests.git_support import Repo
from tests.projects import gate_cache, gate_cache_root, offline_pip, pyproject, wheelhouse, write_wheel  # noqa: F401
from tests.suite_support import (
    BASE_TESTS,
    BROKEN_MUL,
    CALC,
    CONFTEST,
    DOCUMENTED_MUL,
    POLICY,
    REWRITING_PLUGIN,
    TESTS,
    calc_project,
    charged_messages,
    score_repo,
    suite_statuses,
)

pytestmark = pytest.mark.slow  # each builds a project's environment and runs its suite in the sandbox


def _check(repo_root: Path) -> int:
    return main(["check", "--repo", str(repo_root), "--base", "main", "--head", "bot"])


@pytest.mark.usefixtures("offline_pip")
@pytest.mark.parametrize(("files", "said"), [
    ({"tests/test_version.py": "from calc._version import version\n\n\ndef test_version():\n"
      "    assert version\n"}, "tests/test_version.py: ModuleNotFoundError: No module named 'calc._version'"),
    ({"tests/test_calc.py": "import pytest\n\n\ndef test_mocked(mocker):\n    assert mocker\n\n\n" + TESTS
      .removeprefix("import pytest\n")}, "fixture 'mocker' not found"),
    ({"tests/test_class.py": "from calc import add\n\n\nclass TestCalc:\n    def __init__(self):\n"
      "        self.two = 2\n\n    def test_add(self):\n        assert add(2, 3) == 5\n"},
     "pytest collected 4 tests where the files define 5 (tests/test_class.py defines 1 tests, pytest collected 0)"),
    ({"tests/test_calc.py": "from calc import add\n"}, "pytest collected no test"),
    # pytest stops on its own error (here a hook it does not know; pytest 9 also refuses boltons' conftest):
    # its own last line is the reason.
    ({"tests/conftest.py": CONFTEST + "\n\ndef pytest_gate_unknown_hook(config):\n    pass\n"},
     "unknown hook 'pytest_gate_unknown_hook'"),
], ids=["collection-error", "missing-fixture", "fewer-than-defined", "no-test", "pytest-stops"])
def test_a_base_suite_that_does_not_run_stops_the_gate_and_is_never_cached(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        files: dict[str, str], said: str) -> None:
    # A generated module the build writes (hatch-vcs' _version.py) and the tree lacks; a plugin's fixture.
    repo = calc_project(tmp_path / "repo", extra_files={"NOTES": f"{tmp_path}\n", **files})
    repo.commit("bot: mul", {"calc.py": BROKEN_MUL})
    cache = tmp_path / "cache"  # this test's own (the session's is shared with other workers' tests)
    cache.mkdir(mode=0o755)
    monkeypatch.setenv("GATE_CACHE_DIR", str(cache))

    assert _check(repo.root) == 3

    error = capsys.readouterr().err
    assert "the base's suite does not run in the gate: " in error and said in error, error
    assert not list(cache.glob("baselines/*.json"))
    # And ahead of the first PR, on the repository as it is.
    repo.git("checkout", "-q", "main")
    assert main(["doctor", "--repo", str(repo.root)]) == 3
    out = capsys.readouterr().out
    assert "the base's suite does not run in the gate: " in out and said in out, out


# A test module for a later Python that the suite's configuration leaves out, as cattrs' conftest does (its tests
# would fail here: they must neither count as lost nor run).
FUTURE_ONLY = {"tests/test_future_only.py": "def test_a():\n    assert False\n\n\ndef test_b():\n    assert False\n"}


@pytest.mark.usefixtures("offline_pip")
@pytest.mark.parametrize("left_out", [
    {"tests/conftest.py": CONFTEST + "\nimport sys\n\ncollect_ignore_glob = [] if sys.version_info >= (3, 99) else "
                          "['test_future*.py']\n"},
    {"pytest.ini": "[pytest]\naddopts = --ignore=tests/test_future_only.py\n"},
], ids=["conftest-collect-ignore", "addopts-ignore"])
def test_test_files_the_suites_configuration_leaves_out_are_not_lost(tmp_path: Path,
                                                                     left_out: dict[str, str]) -> None:
    repo = calc_project(tmp_path / "repo", extra_files={**FUTURE_ONLY, **left_out})
    repo.commit("bot: document mul", {"calc.py": DOCUMENTED_MUL})

    verdict = score_repo(repo)

    assert verdict.accepted and verdict.total == 0
    assert set(suite_statuses(verdict)) == set(BASE_TESTS)


# A test module of an optional dependency the environment does not install, which pytest skips as it collects it
# (many projects' own CI runs so without the extra): its tests are neither lost nor gating, and the verdict says so.
OPTIONAL_ONLY = {"tests/test_speedups.py": "import pytest\n\nfast = pytest.importorskip('calc_speedups')\n\n\n"
                 "def test_fast_add():\n    assert fast.add(1, 2) == 3\n\n\n"
                 "def test_fast_mul():\n    assert fast.mul(2, 3) == 6\n"}


@pytest.mark.usefixtures("offline_pip")
def test_a_test_file_pytest_skips_as_it_collects_it_is_said_and_the_rest_gates(tmp_path: Path) -> None:
    repo = calc_project(tmp_path / "repo", extra_files=OPTIONAL_ONLY)
    repo.commit("bot: mul", {"calc.py": BROKEN_MUL})

    verdict = score_repo(repo)

    assert set(suite_statuses(verdict)) == set(BASE_TESTS)
    assert [message for message in charged_messages(verdict) if "test_mul" in message] == charged_messages(verdict)
    assert charged_messages(verdict) and not verdict.accepted
    said = [note.message for note in verdict.notes if "tests/test_speedups.py" in note.message]
    assert said and "could not import 'calc_speedups'" in said[0], verdict.notes


@pytest.mark.usefixtures("offline_pip")
def test_a_head_that_makes_a_base_test_file_skip_as_collected_is_charged_for_its_tests(tmp_path: Path) -> None:
    # The base's test file skips itself when the project's module is missing; the head removes the module, so
    # pytest skips the file on the head: its test, which passed on the base, costs as one that did not run.
    repo = calc_project(tmp_path / "repo", extra_files={
        "calc_extra.py": "def triple(a):\n    return 3 * a\n",
        "tests/test_extra.py": "import pytest\n\nextra = pytest.importorskip('calc_extra')\n\n\n"
                               "def test_triple():\n    assert extra.triple(2) == 6\n"})
    repo.commit("bot: drop the extra", {"calc_extra.py": None})

    verdict = score_repo(repo)

    assert suite_statuses(verdict)["tests/test_extra.py::test_triple"] in ("failed", "error")
    assert any("test_triple" in message for message in charged_messages(verdict)) and not verdict.accepted
    assert not [note for note in verdict.notes if "pytest skips" in note.message]


@pytest.mark.usefixtures("offline_pip")
def test_gate_doctor_repo_runs_a_suite_that_works(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = calc_project(tmp_path / "repo")
    repo.git("checkout", "-q", "main")

    assert main(["doctor", "--repo", str(repo.root)]) == 0

    assert "the repository's suite runs in the gate at " in capsys.readouterr().out


@pytest.mark.usefixtures("offline_pip")
def test_a_head_that_collects_fewer_of_the_base_tests_is_charged_for_each(tmp_path: Path) -> None:
    repo = calc_project(tmp_path / "repo", extra_files={"tests/test_more.py": "from calc import add\n\n\n"
                                                        "def test_add_zero():\n    assert add(0, 0) == 0\n"})
    repo.commit("bot: drop div", {"calc.py": CALC.split("\n\n\ndef div")[0] + "\n"})

    verdict = score_repo(repo)

    statuses = suite_statuses(verdict)
    # test_calc.py no longer imports: its four tests are not collected; test_more.py still runs.
    assert {name: statuses[name] for name in BASE_TESTS} == dict.fromkeys(BASE_TESTS, "error")
    assert statuses["tests/test_more.py::test_add_zero"] == "passed"
    assert len(charged_messages(verdict)) == 4 and verdict.total == 16
    assert not verdict.accepted


@pytest.mark.usefixtures("offline_pip")
def test_one_broken_base_test_blocks_under_the_default_budget(tmp_path: Path) -> None:
    repo = calc_project(tmp_path / "repo", policy=POLICY.replace("budget: 1\n", ""))
    repo.commit("bot: mul", {"calc.py": BROKEN_MUL})

    verdict = score_repo(repo)

    assert verdict.budget == 3
    assert [(p.check, p.points) for p in verdict.penalties] == [("tests", 4)]
    assert not verdict.accepted


# A pytest plugin as a test extra brings it: an option the base's addopts uses (as pytest-cov's --cov), a start
# before the conftests (as pytest-cov's and pytest-django's), and a fixture its tests ask for (as pytest-mock's
# mocker).
PLUGIN = '''\
import pytest

STARTED = []


def pytest_addoption(parser):
    parser.addoption("--measure", action="store", default=None)


def pytest_load_initial_conftests(early_config, parser, args):
    STARTED.append(True)


@pytest.fixture
def helper(request):
    return request.config.getoption("--measure") if STARTED else "not started before the conftests"
'''
PLUGIN_TESTS = TESTS + '''

def test_helper(helper):
    assert helper == "calc"
'''


# stray-helper's plugin rewrites every outcome and only a dependency brings it (the base does not declare it):
# what CI's autoload would load, the gate not.
@pytest.fixture
def plugin_wheels(offline_pip: Path) -> Path:  # noqa: F811
    write_wheel(offline_pip, "pytest-measure", {"pytest_measure.py": PLUGIN}, requires=("stray-helper",),
                entry_points="[pytest11]\nmeasure = pytest_measure\n")
    write_wheel(offline_pip, "stray-helper", {"stray_helper.py": "", "stray_plugin.py": REWRITING_PLUGIN},
                entry_points="[pytest11]\nstray = stray_plugin\n")
    return offline_pip


def _plugin_project(root: Path, addopts: str = "--measure=calc") -> Repo:
    return calc_project(root, extra_files={
        "pyproject.toml": pyproject("calc", [], extras={"test": ["checkhelp", "pytest-measure"]},
                                    extra=f'\n[tool.pytest.ini_options]\naddopts = "{addopts}"\n'
                                          # as humanize's: every warning is an error, pytest's own too
                                          'filterwarnings = ["error"]\n'),
        "tests/test_calc.py": PLUGIN_TESTS, "tests/conftest.py": CONFTEST})


@pytest.mark.usefixtures("plugin_wheels")
def test_the_plugins_the_base_declares_load_as_in_its_ci(tmp_path: Path) -> None:
    repo = _plugin_project(tmp_path / "repo")
    repo.commit("bot: document mul", {"calc.py": DOCUMENTED_MUL})

    verdict = score_repo(repo)

    assert suite_statuses(verdict) == dict.fromkeys([*BASE_TESTS, "tests/test_calc.py::test_helper"], "passed")
    assert verdict.accepted


@pytest.mark.usefixtures("plugin_wheels")
def test_the_base_loads_a_declared_plugin_by_its_entry_points_name_as_in_its_ci(tmp_path: Path) -> None:
    """Autoload registers a plugin under its entry point's name: the base's `-p measure` loads it once."""
    repo = _plugin_project(tmp_path / "repo", "-p measure --measure=calc")
    repo.commit("bot: mul", {"calc.py": BROKEN_MUL})

    verdict = score_repo(repo)

    assert suite_statuses(verdict)["tests/test_calc.py::test_helper"] == "passed"
    assert suite_statuses(verdict)["tests/test_calc.py::test_mul"] == "failed"
    assert not verdict.accepted


@pytest.mark.usefixtures("plugin_wheels")
def test_the_bases_p_no_name_turns_a_declared_plugin_off_as_in_its_ci(tmp_path: Path) -> None:
    """`-p no:measure` in the base's configuration: its fixture is missing on the base, as in its CI, and
    the gate says the base's suite does not run rather than pass anything."""
    repo = _plugin_project(tmp_path / "repo", "-p no:measure")
    repo.commit("bot: mul", {"calc.py": BROKEN_MUL})

    with pytest.raises(GateFailure, match="test_helper: fixture 'helper' not found"):
        score_repo(repo)


@pytest.mark.usefixtures("plugin_wheels")
def test_with_the_plugins_loaded_a_regression_is_blocked_and_a_dependencys_plugin_stays_out(tmp_path: Path) -> None:
    repo = _plugin_project(tmp_path / "repo")
    repo.commit("bot: mul", {"calc.py": BROKEN_MUL})

    verdict = score_repo(repo)

    # The stray plugin (it would rewrite every outcome) is installed, as a dependency of the declared one, and
    # not loaded.
    assert "stray-helper==1.0" in dict(verdict.facts)["environment"]
    assert suite_statuses(verdict)["tests/test_calc.py::test_mul"] == "failed"
    assert suite_statuses(verdict)["tests/test_calc.py::test_helper"] == "passed"
    assert not verdict.accepted
