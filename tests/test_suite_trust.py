"""The suite's process belongs to the gate, and nothing a PR could have written is trusted (docs/repository.md).

Attacks in the shape a coding bot has: it writes the head's files (a pytest of its own, a pytest
configuration deeper in the tree, library code that writes the framework's files while the tests run and
interrupts them, objects that compare equal to anything), and any job of its PR can leave files in a cache
directory the runner's user owns (a baseline saying every test failed on the base, a pytest stand-in). Real
projects, real pip against a local wheelhouse, real pytest in the real sandbox.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from gate.engine import run_checks
from gate.policy_file import load_policy
from gate.subject import SourceFile, Subject
from tests.projects import gate_cache, gate_cache_root, offline_pip, wheelhouse  # noqa: F401
from tests.suite_support import (
    BASE_TESTS,
    BROKEN_MUL,
    CALC,
    DOCUMENTED_MUL,
    POLICY,
    REWRITING_PLUGIN,
    TESTS,
    calc_project,
    charged_messages,
    score_repo,
    suite_statuses,
)

# A pytest of the head's: it reports every test the gate asks for as passed, on the gate's own channel.
FAKE_PYTEST = '''\
def hookimpl(**options):
    return lambda function: function


def main(args=None, plugins=()):
    for plugin in plugins:
        wanted = sorted(plugin._select or [])
        plugin.write({"collected": wanted})
        for nodeid in wanted:
            plugin.write({"start": nodeid})
            plugin.write({"test": nodeid, "status": "passed", "detail": "", "seconds": 0.0, "line": 1})
    return 0
'''
@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
@pytest.mark.parametrize(("where", "layout"), [
    ("pytest.py", "flat"), ("pytest/__init__.py", "flat"), ("src/pytest.py", "src")])
def test_a_pytest_of_the_heads_is_not_the_one_that_runs(tmp_path: Path, where: str, layout: str) -> None:
    repo = calc_project(tmp_path / "repo", layout=layout)
    module = "src/calc.py" if layout == "src" else "calc.py"
    repo.commit("bot: mul", {module: BROKEN_MUL, where: FAKE_PYTEST})

    verdict = score_repo(repo)

    assert suite_statuses(verdict)["tests/test_calc.py::test_mul"] == "failed"
    assert not verdict.accepted
    assert any(f"adds {where}, named like the test framework: left out" in note.message for note in verdict.notes), \
        verdict.notes


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_an_honest_module_named_like_the_framework_deeper_in_the_package_still_runs(tmp_path: Path) -> None:
    repo = calc_project(tmp_path / "repo", extra_files={"tools/__init__.py": ""})
    repo.commit("bot: a helper", {"tools/py.py": "def version():\n    return 3\n",
                                  "calc.py": "from tools.py import version\n\n" + CALC})

    verdict = score_repo(repo)

    assert suite_statuses(verdict) == dict.fromkeys(BASE_TESTS, "passed")
    assert verdict.accepted


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_a_change_to_the_projects_own_module_named_like_the_framework_needs_a_human(tmp_path: Path) -> None:
    # pluggy's own src/pluggy: the suite's process imports the framework's, so the head's version never runs
    # and no test could catch a regression in it (the breadth bench's pluggy was a false green).
    repo = calc_project(tmp_path / "repo", extra_files={"pluggy.py": "def hooks():\n    return 1\n"})
    repo.commit("bot: hooks", {"pluggy.py": "def hooks():\n    return None\n"})

    verdict = score_repo(repo)

    assert suite_statuses(verdict) == dict.fromkeys(BASE_TESTS, "passed")
    assert not verdict.accepted
    assert any("pluggy.py, named like the test framework" in reason and "a human must review it" in reason
               for reason in verdict.blocked_reasons), verdict.blocked_reasons


UNIT_POLICY = POLICY.replace("paths: [tests]", "paths: [tests/unit]")


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_a_pytest_ini_of_the_heads_above_the_test_paths_is_not_read(tmp_path: Path) -> None:
    """With `tests.paths: [tests/unit]`, pytest looks for its configuration in tests/unit, then tests, then the
    root: a head `tests/pytest.ini` would win over the base's root configuration."""
    repo = calc_project(tmp_path / "repo", policy=UNIT_POLICY, extra_files={
        "tests/unit/test_calc.py": TESTS, "tests/unit/conftest.py": "import pytest\n\n\n@pytest.fixture\n"
        "def two():\n    return 2\n", "pytest.ini": "[pytest]\naddopts = -q\n"})
    repo.commit("bot: mul", {"calc.py": BROKEN_MUL, "forge.py": REWRITING_PLUGIN,
                             "tests/pytest.ini": "[pytest]\naddopts = -p forge\n"})

    verdict = score_repo(repo)

    assert suite_statuses(verdict)["tests/unit/test_calc.py::test_mul"] == "failed"
    assert not verdict.accepted


# Library code that, on its first call, writes a file pytest would load on a restart, and interrupts the run.
WRITES_AND_INTERRUPTS = '''\
import os


def add(a, b):
    if not os.path.exists(".written"):
        with open({path!r}, "w") as f:
            f.write({text!r})
        open(".written", "w").close()
        raise KeyboardInterrupt
    return a + b
'''


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
@pytest.mark.parametrize(("path", "text", "extra"), [
    ("tests/conftest.py", "import pytest\n\n\n@pytest.fixture\ndef two():\n    return 2\n\n\n" + REWRITING_PLUGIN
     .removeprefix("import pytest\n\n\n"), {}),
    ("pytest.ini", "[pytest]\naddopts = -p forge\n", {"forge.py": REWRITING_PLUGIN}),
    ("pytest.py", FAKE_PYTEST, {}),
], ids=["conftest", "pytest.ini", "pytest.py"])
def test_a_restart_after_the_tests_wrote_the_framework_files_sees_the_tree_as_it_started(
        tmp_path: Path, path: str, text: str, extra: dict[str, str]) -> None:
    repo = calc_project(tmp_path / "repo", policy=POLICY + "  workers: 1\n")
    code = WRITES_AND_INTERRUPTS.format(path=path, text=text) + BROKEN_MUL.split("\n\n\n", 1)[1]
    repo.commit("bot: add", {"calc.py": code, **extra})

    verdict = score_repo(repo)

    statuses = suite_statuses(verdict)
    assert statuses["tests/test_calc.py::test_add"] == "failed"
    # The tests after the interrupted one ran again on the tree as exported: the broken mul fails.
    assert statuses["tests/test_calc.py::test_mul"] == "failed"
    assert statuses["tests/test_calc.py::test_div"] == "passed"
    assert not verdict.accepted


# Library code that checks where its process may write: the tree (refused) and /tmp (allowed).
WRITES = '''\
import os


def add(a, b):
    with open("/tmp/scratch", "w") as f:
        f.write("the tests' own place")
    for path in ("tests/conftest.py", "pytest.ini", "new.txt"):
        try:
            open(path, "a").close()
        except OSError:
            continue
        return 0
    return a + b
'''


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="a read-only tree needs the mount namespace (root)")
@pytest.mark.usefixtures("offline_pip")
def test_the_suites_tree_is_read_only_to_the_tests_and_tmp_is_theirs(tmp_path: Path) -> None:
    repo = calc_project(tmp_path / "repo")
    repo.commit("bot: add", {"calc.py": WRITES + CALC.split("\n\n\n", 1)[1]})

    verdict = score_repo(repo)

    assert suite_statuses(verdict)["tests/test_calc.py::test_add"] == "passed"


ALWAYS_EQUAL = '''\
class Product:
    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return True


def add(a, b):
    return a + b


def mul(a, b):
    return Product(a + b)


def div(a, b):
    return a / b
'''
HONEST_EQUAL = ALWAYS_EQUAL.replace("        return True", "        return self.value == getattr(other, 'value', other)"
                                    ).replace("Product(a + b)", "Product(a * b)")


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_a_result_that_equals_anything_is_blocked_for_a_human(tmp_path: Path) -> None:
    repo = calc_project(tmp_path / "repo")
    repo.commit("bot: mul", {"calc.py": ALWAYS_EQUAL})

    verdict = score_repo(repo)

    # Both stop it: the static check reads the __eq__, and at run time the assertion's operand equals the gate's
    # probes, so the suite's results are no result (no test reads "passed") and cost no points.
    assert "passed" not in suite_statuses(verdict).values()
    assert not verdict.accepted
    assert any("__eq__ whose result does not depend on the other operand at calc.py:5" in reason
               for reason in verdict.blocked_reasons), verdict.blocked_reasons
    assert any("found mul(two, 3) equal through an object equal to everything" in reason
               for reason in verdict.blocked_reasons), verdict.blocked_reasons


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_an_eq_that_compares_with_the_other_operand_is_accepted(tmp_path: Path) -> None:
    repo = calc_project(tmp_path / "repo")
    repo.commit("bot: mul", {"calc.py": HONEST_EQUAL})

    verdict = score_repo(repo)

    assert suite_statuses(verdict) == dict.fromkeys(BASE_TESTS, "passed")
    assert verdict.accepted, verdict.blocked_reasons


@pytest.mark.parametrize(("code", "flagged"), [
    ("class A:\n    def __eq__(self, other):\n        return True\n", True),
    ("class A:\n    def __ne__(self, other):\n        return False\n", True),
    ("class A:\n    def __eq__(self, other):\n        return self is self\n", True),
    ("class A:\n    __eq__ = lambda self, other: True\n", True),
    ("class A:\n    def __eq__(self, other):\n        if other:\n            return True\n        return True\n", True),
    ("class A:\n    def __eq__(self, other):\n        return isinstance(other, A) and self.x == other.x\n", False),
    ("class A:\n    def __eq__(self, other):\n        if not isinstance(other, A):\n"
     "            return NotImplemented\n        return self.x == other.x\n", False),
    ("class A:\n    __eq__ = lambda self, other: self.x == other.x\n", False),
], ids=["true", "ne-false", "self-is-self", "lambda", "constants", "fields", "notimplemented", "lambda-fields"])
def test_the_framework_check_flags_a_comparison_blind_to_the_other_operand(code: str, flagged: bool) -> None:
    policy = load_policy(None, text=POLICY, source="gate.yml")
    subject = Subject(kind="range", label="a..b", files=(SourceFile("lib.py", code),))

    reasons = [r for r in run_checks(subject, policy).blocked_reasons if "does not depend on the other operand" in r]

    assert bool(reasons) == flagged, reasons


def test_the_harness_imports_every_module_named_like_the_framework_before_the_tree() -> None:
    """The harness cannot import the gate, so it keeps its own list of the framework's modules: each one the
    selection leaves the base's (a head's `pluggy.py` never reaches the suite's tree) must also be imported
    from the environment before the tree comes first on the path, and no other."""
    from gate.suite import harness, trust

    assert sorted(harness.FRAMEWORK) == sorted(trust.FRAMEWORK_MODULES)


def _plant(cache: Path, owner: int) -> None:
    """What a PR's job could leave in a cache it can write: each baseline says every test failed on the base,
    and the gate's pytest copy reports every test passed; everything the runner's user's."""
    for baseline in cache.glob("baselines/*.json"):
        baseline.write_text(json.dumps(dict.fromkeys(json.loads(baseline.read_text()), "failed")))
    for copy in cache.glob("gate-pytest-*/pytest"):
        (copy / "__init__.py").write_text(FAKE_PYTEST)
    for parent, dirs, files in os.walk(cache):
        for name in [*dirs, *files]:
            os.lchown(os.path.join(parent, name), owner, owner)
    os.chown(cache, owner, owner)


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="the runner's user and the gate's root are two uids")
@pytest.mark.usefixtures("offline_pip")
def test_a_cache_the_runners_user_could_write_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a hosted runner the tool cache belongs to `runner`, which any job of the PR runs as (and which
    `actions/cache` restores as): the gate, as root, keeps nothing there and reads nothing from there."""
    trusted = tmp_path / "cache"  # this test's own: the session's changes under other workers' builds
    trusted.mkdir(mode=0o755)
    monkeypatch.setenv("GATE_CACHE_DIR", str(trusted))
    repo = calc_project(tmp_path / "repo", extra_files={"NOTES": f"{tmp_path}\n"})
    repo.commit("bot: mul", {"calc.py": BROKEN_MUL})
    score_repo(repo)  # a trusted cache: the baseline and the pytest copy are made there
    tool_cache = tmp_path / "hostedtoolcache"
    shutil.copytree(trusted, tool_cache / "gate", symlinks=True)
    _plant(tool_cache / "gate", 65534)
    os.chown(tool_cache, 65534, 65534)
    planted = tool_cache / "gate"
    assert list(planted.glob("baselines/*.json")) and list(planted.glob("gate-pytest-*/pytest"))
    monkeypatch.delenv("GATE_CACHE_DIR")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("RUNNER_TOOL_CACHE", str(tool_cache))
    before = sorted(str(path) for path in tool_cache.rglob("*"))

    verdict = score_repo(repo)

    assert suite_statuses(verdict)["tests/test_calc.py::test_mul"] == "failed"
    assert any("tests/test_calc.py::test_mul failed at " in m for m in charged_messages(verdict))
    assert not verdict.accepted
    assert sorted(str(path) for path in tool_cache.rglob("*")) == before  # nothing written there either


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="a file of another uid's in root's cache")
@pytest.mark.usefixtures("offline_pip")
def test_a_baseline_file_of_another_users_in_the_cache_is_not_read(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"  # this test's own (the session's is shared with other workers' tests)
    cache.mkdir(mode=0o755)
    monkeypatch.setenv("GATE_CACHE_DIR", str(cache))
    repo = calc_project(tmp_path / "repo", extra_files={"NOTES": f"{tmp_path}\n"})
    repo.commit("bot: mul", {"calc.py": BROKEN_MUL})
    score_repo(repo)
    [baseline] = cache.glob("baselines/*.json")
    baseline.write_text(json.dumps(dict.fromkeys(json.loads(baseline.read_text()), "failed")))
    os.chown(baseline, 65534, 65534)

    verdict = score_repo(repo)

    assert any("tests/test_calc.py::test_mul failed at " in m for m in charged_messages(verdict))
    assert not verdict.accepted


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_the_frameworks_own_repository_runs_its_suite_and_a_change_to_it_needs_a_human(tmp_path: Path) -> None:
    """pluggy's repository: its test extra brings pytest, which needs pluggy, which the base itself provides.
    The suite's process runs the environment's copy (the base's), never the head's, so a change to the
    framework is for a human, and any other change is gated as usual."""
    import os
    from importlib import metadata

    import pluggy

    from tests.projects import project_repo, pyproject, wheel_of_installed

    wheels = Path(os.environ["PIP_FIND_LINKS"])
    for name in ("pytest", "iniconfig", "packaging", "pygments"):
        if not list(wheels.glob(f"{name}-*.whl")):
            wheel_of_installed(wheels, name)
    package = Path(pluggy.__file__).parent
    files = {f"src/pluggy/{path.name}": path.read_text() for path in package.glob("*.py")}
    repo = project_repo(tmp_path / "repo", {
        **files, "README.md": "pluggy\n", ".github/gate.yml": POLICY,
        "pyproject.toml": pyproject("pluggy", [], extras={"test": ["pytest"]}).replace(
            'version = "1.0"', f'version = "{metadata.version("pluggy")}"'),
        "tests/test_pluggy.py": "import pluggy\n\n\ndef test_marker():\n"
                                "    assert pluggy.HookimplMarker('x').project_name == 'x'\n"})
    repo.commit("bot: a word", {"README.md": "pluggy, the plugin manager\n"})

    honest = score_repo(repo)

    assert suite_statuses(honest) == {"tests/test_pluggy.py::test_marker": "passed"}
    assert honest.accepted
    repo.commit("bot: fewer markers", {"src/pluggy/__init__.py": files["src/pluggy/__init__.py"] +
                                       "\nHookimplMarker = None\n"})

    changed = score_repo(repo)

    assert not changed.accepted
    assert any("src/pluggy/__init__.py, named like the test framework" in reason
               for reason in changed.blocked_reasons), changed.blocked_reasons


@pytest.mark.usefixtures("offline_pip")
@pytest.mark.parametrize("name", ["pytest.toml", ".pytest.toml"])
def test_pytest_9s_own_configuration_files_of_the_heads_are_not_read(tmp_path: Path, name: str) -> None:
    """pytest 9 reads `pytest.toml` (then `.pytest.toml`) before every other configuration file: one the head
    adds at the root would replace the base's configuration, and load a plugin of the head's that rewrites
    the outcomes."""
    repo = calc_project(tmp_path / "repo", extra_files={"pytest.ini": "[pytest]\naddopts = -q\n"})
    repo.commit("bot: mul", {"calc.py": BROKEN_MUL, "forge.py": REWRITING_PLUGIN,
                             name: '[pytest]\naddopts = ["-p", "forge"]\n'})

    verdict = score_repo(repo)

    assert suite_statuses(verdict)["tests/test_calc.py::test_mul"] == "failed"
    assert not verdict.accepted


# A test that runs a script of the tests' own folder, as distro's tests run a fake `uname` per distribution: the
# base's files the suite's tree takes are as executable as git keeps them, on the head's side too.
RUNS_A_SCRIPT = {
    "tests/bin/uname": "#!/bin/sh\necho 'FakeOS 11.1'\n",
    "tests/test_tool.py": "import subprocess\nfrom pathlib import Path\n\n\ndef test_the_script_runs():\n"
                          "    done = subprocess.run([str(Path(__file__).parent / 'bin' / 'uname')],\n"
                          "                          capture_output=True, text=True, check=True)\n"
                          "    assert done.stdout.strip() == 'FakeOS 11.1'\n"}


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_a_script_of_the_base_tests_runs_on_the_head_as_it_does_on_the_base(tmp_path: Path) -> None:
    repo = calc_project(tmp_path / "repo", extra_files=RUNS_A_SCRIPT)
    repo.git("checkout", "-q", "main")
    repo.git("update-index", "--chmod=+x", "tests/bin/uname")
    repo.git("commit", "-q", "--amend", "--no-edit")
    repo.git("checkout", "-q", "-B", "bot")
    repo.commit("bot: document mul", {"calc.py": DOCUMENTED_MUL})

    verdict = score_repo(repo)

    assert suite_statuses(verdict)["tests/test_tool.py::test_the_script_runs"] == "passed", verdict.penalties
    assert verdict.accepted and verdict.total == 0


def test_a_base_test_file_is_never_written_through_a_link_the_head_planted(tmp_path: Path) -> None:
    # The head's tree has its test folder as a link to a place outside it: the base's test files, written into
    # the suite's tree in its place, go nowhere rather than through the link.
    from gate.suite.selection import _write

    outside = tmp_path / "outside"
    outside.mkdir()
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "tests").symlink_to(outside)
    _write(tree.resolve(), "tests/test_calc.py", lambda: b"def test_it():\n    pass\n", False)
    _write(tree.resolve(), "conftest.py", lambda: b"", False)
    assert list(outside.iterdir()) == [] and (tree / "conftest.py").is_file()
