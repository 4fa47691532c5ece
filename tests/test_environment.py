"""The repository's environment: its dependencies, built from the base commit, cached, seen by the runs.

Real projects built in the test (an in-tree build backend), real pip against a local wheelhouse, the real
sandbox (as root: a dropped uid, no network).
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from gate.cli import main
from gate.engine import score
from gate.errors import GateFailure
from gate.sources import gitcli
from gate.sources.gitrange import subject_from_commits
from gate.verdict import Verdict
from tests.git_support import Repo
from tests.projects import (  # noqa: F401
    BACKEND,
    SLUGIFY,
    gate_cache,
    gate_cache_root,
    offline_pip,
    project_repo,
    pyproject,
    wheelhouse,
)

CASES = """\
cases:
  - name: accents
    function: "slugify:slugify"
    args: ["Héllo Wörld"]
    expect: "hello-world"
  - name: spaces
    function: "slugify:slugify"
    args: ["  a  b "]
    expect: "a-b"
"""


def _score(repo: Repo, base: str = "main", head: str = "bot") -> Verdict:

    handle = gitcli.Repo(repo.root)
    with subject_from_commits(handle, handle.commit(base).hexsha, handle.commit(head).hexsha) as found:
        return score(found)


def _slugify_repo(root: Path, policy: str, layout: str = "flat") -> Repo:
    module = "src/slugify.py" if layout == "src" else "slugify.py"
    return project_repo(root, {"pyproject.toml": pyproject("slugish", ["text-unidecode"]), module: SLUGIFY,
                               ".github/gate.yml": policy})


@pytest.mark.usefixtures("offline_pip")
def test_a_call_case_imports_the_dependency_the_base_declares(tmp_path: Path) -> None:
    repo = _slugify_repo(tmp_path / "repo", "environment: {}\n" + CASES)
    repo.commit("bot: a docstring", {"slugify.py": '"""Slugs."""\n' + SLUGIFY})

    verdict = _score(repo)

    assert [(c.name, c.status) for c in verdict.cases] == [("accents", "passed"), ("spaces", "passed")], verdict.cases
    assert verdict.accepted and verdict.total == 0
    assert "text-unidecode==1.0" in dict(verdict.facts)["environment"]


@pytest.mark.usefixtures("offline_pip")
def test_without_an_environment_key_the_dependencies_the_base_declares_are_installed(tmp_path: Path) -> None:
    """python-slugify's shape: one dependency, two call cases, no `environment:` key. Both cases failed with
    `No module named 'text_unidecode'`, charged to the bot."""
    repo = _slugify_repo(tmp_path / "repo", CASES)
    repo.commit("bot: a docstring", {"slugify.py": '"""Slugs."""\n' + SLUGIFY})

    verdict = _score(repo)

    assert [c.status for c in verdict.cases] == ["passed", "passed"], verdict.cases
    assert verdict.accepted and "text-unidecode==1.0" in dict(verdict.facts)["environment"]


@pytest.mark.usefixtures("offline_pip")
def test_environment_null_is_the_standard_library_only(tmp_path: Path) -> None:
    """The situation the environment exists for: the standard library only, every case fails."""
    repo = _slugify_repo(tmp_path / "repo", "environment: null\n" + CASES)
    repo.commit("bot: a docstring", {"slugify.py": '"""Slugs."""\n' + SLUGIFY})

    verdict = _score(repo)

    assert [c.status for c in verdict.cases] == ["failed", "failed"]
    assert "No module named 'text_unidecode'" in verdict.cases[0].detail
    assert "environment" not in dict(verdict.isolation)


@pytest.mark.usefixtures("offline_pip")
def test_a_base_that_declares_nothing_gets_no_environment_by_default(tmp_path: Path) -> None:
    """No project a build installs (a pyproject.toml of tool settings only), no requirements: nothing is
    built, the run sees the standard library, and a change that adds a requirements file is blocked for a
    human (scored without it)."""
    repo = project_repo(tmp_path / "repo", {"pyproject.toml": "[tool.ruff]\nline-length = 100\n",
                                            ".github/gate.yml": CASES,
                                            "slugify.py": SLUGIFY.replace("from text_unidecode import unidecode\n",
                                                                          "unidecode = str\n")})
    repo.commit("bot: needs a package", {"requirements.txt": "text-unidecode\n"})

    verdict = _score(repo)

    assert "environment" not in dict(verdict.isolation)
    assert any("adds requirements.txt" in reason for reason in verdict.blocked_reasons)


@pytest.mark.usefixtures("offline_pip")
def test_without_cases_a_dependency_change_is_not_blocked_by_default(tmp_path: Path) -> None:
    """No code runs, so no environment is built and a dependency bump is only a change like any other."""
    repo = project_repo(tmp_path / "repo", {"pyproject.toml": pyproject("slugish", ["text-unidecode"]),
                                            "slugify.py": SLUGIFY, ".github/gate.yml": "budget: 3\n"})
    repo.commit("bot: bump", {"pyproject.toml": pyproject("slugish", ["text-unidecode>=1.0"])})

    verdict = _score(repo)

    assert verdict.blocked_reasons == () and verdict.accepted


@pytest.mark.usefixtures("offline_pip")
def test_a_base_whose_version_comes_from_git_builds_without_its_git_directory(tmp_path: Path) -> None:
    """hatch-vcs / setuptools-scm's shape: the build asks git for the version, and the export it builds from
    has no .git; the gate passes the version git gives as SETUPTOOLS_SCM_PRETEND_VERSION."""
    from_git = BACKEND.replace("project['version']", "os.environ['SETUPTOOLS_SCM_PRETEND_VERSION']")
    repo = project_repo(tmp_path / "repo", {"_backend/backend.py": from_git, "slugify.py": SLUGIFY,
                                            "pyproject.toml": pyproject("slugish", ["text-unidecode"]),
                                            ".github/gate.yml": CASES})
    repo.git("tag", "v2.0.0", "main")
    repo.commit("bot: a docstring", {"slugify.py": '"""Slugs."""\n' + SLUGIFY})

    verdict = _score(repo)

    assert [c.status for c in verdict.cases] == ["passed", "passed"] and verdict.accepted


@pytest.mark.usefixtures("offline_pip")
def test_a_src_layout_is_imported_from_the_heads_tree(tmp_path: Path) -> None:
    repo = _slugify_repo(tmp_path / "repo", "environment: {}\n" + CASES, layout="src")
    broken = SLUGIFY.replace(".strip('-')", "")
    repo.commit("bot: break the ends", {"src/slugify.py": broken})

    verdict = _score(repo)

    # The head's src/slugify.py ran (not the base's, which the environment never holds).
    assert [(c.name, c.status) for c in verdict.cases] == [("accents", "passed"), ("spaces", "failed")]
    assert not verdict.accepted or verdict.total == 2


@pytest.mark.usefixtures("offline_pip")
def test_the_environment_is_cached_by_what_the_base_declares(tmp_path: Path) -> None:
    repo = _slugify_repo(tmp_path / "repo", "environment: {}\n" + CASES)
    repo.commit("bot: a docstring", {"slugify.py": '"""Slugs."""\n' + SLUGIFY})

    handle = gitcli.Repo(repo.root)
    with subject_from_commits(handle, handle.commit("main").hexsha, handle.commit("bot").hexsha) as first:
        assert first.subject.environment is not None
    with subject_from_commits(handle, handle.commit("main").hexsha, handle.commit("bot").hexsha) as second:
        assert second.subject.environment is not None
    assert second.subject.environment.cached
    assert second.subject.environment.root == first.subject.environment.root
    # The project itself is not in it: only its dependency.
    assert second.subject.environment.installed == ("text-unidecode==1.0",)
    assert not list(Path(second.subject.environment.site_packages[0]).glob("slugish*"))


@pytest.mark.usefixtures("offline_pip")
def test_an_install_that_fails_names_the_requirement_and_exits_3(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    repo = project_repo(tmp_path / "repo", {
        "pyproject.toml": pyproject("slugish", ["text-unidecode", "no-such-dependency>=2"]),
        "slugify.py": SLUGIFY, ".github/gate.yml": "environment: {}\n" + CASES})
    repo.commit("bot: a docstring", {"slugify.py": '"""Slugs."""\n' + SLUGIFY})

    handle = gitcli.Repo(repo.root)
    with pytest.raises(GateFailure, match="no-such-dependency"), \
            subject_from_commits(handle, handle.commit("main").hexsha, handle.commit("bot").hexsha):
        pass

    assert main(["check", "--repo", str(repo.root), "--base", "main", "--head", "bot"]) == 3
    err = capsys.readouterr().err
    assert "requirement no-such-dependency" in err
    assert "uv's last lines" in err


@pytest.mark.usefixtures("offline_pip")
@pytest.mark.parametrize(("files", "named"), [
    ({"pyproject.toml": pyproject("slugish", ["text-unidecode", "requests>=2"])},
     "edits pyproject.toml: [project] dependencies adds requests>=2"),
    ({"requirements-dev.txt": "checkhelp==1.0\n"}, "adds requirements-dev.txt"),
    ({"uv.lock": "version = 1\n"}, "adds uv.lock"),
], ids=["pyproject", "requirements", "lock"])
def test_a_dependency_change_is_blocked_for_a_human_and_scored_with_the_base(
        tmp_path: Path, files: dict[str, str], named: str) -> None:
    repo = _slugify_repo(tmp_path / "repo", "environment: {}\n" + CASES)
    repo.commit("bot: new dependencies", {**files, "slugify.py": '"""Slugs."""\n' + SLUGIFY})

    verdict = _score(repo)

    assert verdict.total == 0 and not verdict.accepted
    assert any(named in reason and "a human must review" in reason for reason in verdict.blocked_reasons), \
        verdict.blocked_reasons
    # Scored with the base's environment: the new requirement was never installed.
    assert "requests" not in dict(verdict.facts)["environment"]


@pytest.mark.usefixtures("offline_pip")
def test_a_pyproject_edit_outside_the_dependencies_is_not_a_dependency_change(tmp_path: Path) -> None:
    repo = _slugify_repo(tmp_path / "repo", "environment: {}\n" + CASES)
    repo.commit("bot: tool settings", {
        "pyproject.toml": pyproject("slugish", ["text-unidecode"], extra="\n[tool.ruff]\nline-length = 99\n"),
        "slugify.py": '"""Slugs."""\n' + SLUGIFY})

    verdict = _score(repo)
    assert verdict.accepted, verdict.blocked_reasons


@pytest.mark.usefixtures("offline_pip")
def test_dependency_changes_note_relaxes_the_block_to_a_fact(tmp_path: Path) -> None:
    repo = _slugify_repo(tmp_path / "repo", "environment: {dependency_changes: note}\n" + CASES)
    repo.commit("bot: new dependencies",
                {"pyproject.toml": pyproject("slugish", ["text-unidecode", "requests>=2"]),
                 "slugify.py": '"""Slugs."""\n' + SLUGIFY})

    verdict = _score(repo)

    assert verdict.accepted and not verdict.blocked_reasons
    assert any(key == "dependencies" and "adds requests>=2" in value for key, value in verdict.facts)


@pytest.mark.parametrize(("text", "line", "key", "words"), [
    ("budget: 1\ntests:\n  baseline: basee\n", 3, "tests.baseline", "expected one of"),
    ("environment:\n  requirements: [../reqs.txt]\n", 2, "environment.requirements[0]", "a path inside the repository"),
    ("environment:\n  extra: [test]\n", 2, "environment.extra", "did you mean `extras`"),
    ("tests:\n  workers: 0\n", 2, "tests.workers", "0"),
    ("tests:\n  paths: []\n", 2, "tests.paths", ""),
], ids=["baseline", "requirements-path", "extras-typo", "workers", "no-paths"])
def test_a_bad_environment_or_tests_key_is_one_line_with_file_line_and_key(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: int, key: str, words: str) -> None:
    policy = tmp_path / "gate.yml"
    policy.write_text(text)

    assert main(["policy", "check", str(policy)]) == 2

    error = capsys.readouterr().err.strip()
    assert error.startswith(f"gate: error: {policy}:{line}: {key}: "), error
    assert words in error and "\n" not in error


def test_extras_without_a_project_in_the_base_is_bad_input_at_its_line() -> None:
    from gate.errors import BadInput
    from gate.policy_file import load_policy
    from gate.sources.trust import check_against_base

    policy = load_policy(None, text="budget: 3\nenvironment:\n  extras: [test]\n", source="gate.yml@abc")
    with pytest.raises(BadInput, match="no project") as raised:
        check_against_base(policy, lambda path: None, lambda path: False)
    assert raised.value.render().startswith("gate.yml@abc:3: environment.extras: the base commit has no project")


POISON = '''\
import text_unidecode


def attack():
    """Write into the installed dependency, as a PR's code would to poison every later run."""
    try:
        with open(text_unidecode.__file__, "a") as f:
            f.write("\\nunidecode = lambda text: 'poisoned'\\n")
    except OSError as exc:
        return type(exc).__name__
    return "written"
'''


@pytest.mark.usefixtures("offline_pip")
def test_runs_see_the_environment_read_only(tmp_path: Path) -> None:
    policy = "environment: {}\ncases:\n  - name: poison\n    function: \"poison:attack\"\n    args: []\n" \
             "    expect: written\n" + CASES.removeprefix("cases:\n")
    repo = _slugify_repo(tmp_path / "repo", policy)
    repo.commit("bot: a helper", {"poison.py": POISON})

    verdict = _score(repo)

    poison = next(c for c in verdict.cases if c.name == "poison")
    assert poison.status == "failed", poison.detail
    assert poison.detail == "expected str 'written', got str 'PermissionError'", poison.detail
    # What the next run imports is the dependency as installed.
    assert [c.status for c in verdict.cases if c.name != "poison"] == ["passed", "passed"]


def _installed_by(python: str, project: Path, index: Path, target: Path) -> list[metadata.Distribution]:
    """The base project as `python`'s own pip installs it with its test extra (into the folder `target`)."""
    done = subprocess.run([python, "-m", "pip", "install", "--no-index", "--find-links", str(index), "--target",
                           str(target), ".[test]"], cwd=project, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "PIP_CONFIG_FILE": os.devnull, "HOME": str(target.parent)})
    assert done.returncode == 0, done.stdout + done.stderr
    return [dist for dist in metadata.distributions(path=[str(target)]) if dist.metadata["Name"] == "calc"]


DEBIAN_PYTHON = "/usr/bin/python3"


@pytest.mark.skipif(subprocess.run([DEBIAN_PYTHON, "-m", "pip", "--version"], capture_output=True).returncode != 0
                    if os.path.exists(DEBIAN_PYTHON) else True, reason="no pip of the system's Python here")
@pytest.mark.slow
def test_the_extras_plugins_are_found_with_every_pip(tmp_path: Path, wheelhouse: Path) -> None:  # noqa: F811
    """pip 23.0 (Debian 12's) leaves `requested_extras` out of its installation report; what the base declares
    (a test extra's pytest plugins) comes from the gate's own request and the installed metadata, the same
    whichever pip (or uv) installed it."""
    from gate.environment import build
    from gate.policy.model import Environment

    project = tmp_path / "calc"
    (project / "_backend").mkdir(parents=True)
    (project / "_backend" / "backend.py").write_text(BACKEND)
    (project / "pyproject.toml").write_text(pyproject("calc", ["text-unidecode"], extras={"test": ["checkhelp"]}))
    (project / "calc.py").write_text("X = 1\n")
    versions = {subprocess.run([python, "-m", "pip", "--version"], capture_output=True, text=True).stdout.split()[1]
                for python in (DEBIAN_PYTHON, sys.executable)}
    found = [build._declared(Environment(extras=("test",)), [],
                             _installed_by(python, project, wheelhouse, tmp_path / f"target-{index}"), project)
             for index, python in enumerate((DEBIAN_PYTHON, sys.executable))]

    assert len(versions) == 2, versions  # two pips, the system's older one among them
    assert found[0] == found[1] == {"calc", "text-unidecode", "checkhelp"}


def test_the_gates_pytest_copy_is_compiled_for_the_runs_that_read_it(gate_cache_root: Path) -> None:  # noqa: F811
    # The runs see the copy read-only: without its bytecode each suite process would compile pytest again.
    import importlib.util
    from importlib import metadata

    from gate.environment.build import gate_pytest

    copy = Path(gate_pytest(gate_cache_root))
    sources = list(copy.rglob("*.py"))
    # (named by the version installed, as importlib.metadata reads it: a new pytest gets a copy of its own)
    assert copy.name.startswith(f"gate-pytest-{metadata.version('pytest')}-py")

    assert sources and not [path for path in sources if not Path(importlib.util.cache_from_source(str(path))).is_file()]
    # An interpreter that reads the copy uses its bytecode as it is (none is stale), and the code names the copy's
    # files (pytest's tracebacks and its filtering of its own frames read them), not the gate's installation.
    probe = ("import sys; sys.dont_write_bytecode = True; sys.path.insert(0, sys.argv[1]); "
             "import _pytest.python, pygments.lexers.python as lexer; "
             "print(_pytest.python.Function.__init__.__code__.co_filename); print(lexer.__file__)")
    done = subprocess.run([sys.executable, "-v", "-c", probe, str(copy)], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == [str(copy / "_pytest" / "python.py"),
                                        str(copy / "pygments" / "lexers" / "python.py")]
    read = [line for line in done.stderr.splitlines() if line.startswith("# code object from")]
    assert any("/_pytest/__pycache__/python." in line for line in read) and all(str(copy) in line for line in read
                                                                                 if "_pytest" in line)
    assert "bytecode is stale" not in done.stderr


def test_the_interpreters_identity_follows_its_file(tmp_path: Path) -> None:
    # Part of every environment's key: remembered (as root) while the interpreter's file is the same, and found
    # again once the file changes (an upgrade in place).
    from gate import memo
    from gate.environment.build import _interpreter_id
    from gate.sandbox.detect import signature

    interpreter = tmp_path / "python3"
    interpreter.write_text("#!/bin/sh\necho '3.11.2 (main)'\n")
    interpreter.chmod(0o755)
    first = _interpreter_id(str(interpreter))
    assert first == f"{interpreter} 3.11.2 (main)"
    if os.geteuid() == 0:
        assert memo.recall("interpreter", [str(interpreter), signature(str(interpreter))]) == first
    interpreter.write_text("#!/bin/sh\necho '3.11.9 (main, upgraded)'\n")
    assert _interpreter_id(str(interpreter)) == f"{interpreter} 3.11.9 (main, upgraded)"
