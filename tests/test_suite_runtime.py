"""What a repository's suite meets at run time, as in the project's CI: the system data it reads (a time zone at
import and in a test), the interpreter its tests start (`sys.executable -m pkg`, with the head and the
environment importable), `site`'s builtins (`exit(2)`, `quit()`), its commands, spawned workers and user's home
(slow), with nothing of the head run as an interpreter starts. Gated end to end by `gate check` on a git range,
as root with every layer on, on the zygote and (slow) the fresh-interpreter backends (tests/test_sandbox_*.py
show each on both backends, directly). A test here must pass on the base and catch a regression in the head: one that
fails on both sides is never charged, and a base that cannot import stops the gate."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from gate import engine
from gate.cli import main
from gate.sandbox import open_sandbox
from tests.git_support import Repo
from tests.projects import (  # noqa: F401
    BACKEND,
    UNIDECODE,
    gate_cache,
    gate_cache_root,
    offline_pip,
    project_repo,
    pyproject,
    wheelhouse,
)

BACKENDS = ("zygote", pytest.param("fresh-interpreter", marks=pytest.mark.slow))
POLICY = """\
budget: 1
environment: null
tests:
  paths: [tests]
  test_timeout: 20
"""
# Reads a zone when imported (as marshmallow does) and in the function its tests call.
CLOCK = '''\
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

CHICAGO = ZoneInfo("America/Chicago")


def chicago_hour(utc_hour):
    return datetime(2024, 7, 1, utc_hour, tzinfo=timezone.utc).astimezone(CHICAGO).hour
'''
CLOCK_TESTS = '''\
from datetime import datetime
from zoneinfo import ZoneInfo

from clock import chicago_hour


def test_chicago_is_five_hours_behind_in_summer():
    assert chicago_hour(17) == 12


def test_paris_in_winter():
    assert datetime(2024, 1, 1, tzinfo=ZoneInfo("Europe/Paris")).utcoffset().total_seconds() == 3600
'''


def gate_check(repo: Repo, backend: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[int, dict[str, Any]]:
    """`gate check` of the range main..bot (exit code, verdict JSON), its sandbox on `backend`."""
    if backend != "zygote":
        monkeypatch.setattr(engine, "open_sandbox", functools.partial(open_sandbox, prefer_zygote=False))
    out = tmp_path / f"verdict-{repo.git('rev-parse', 'bot')[:12]}.json"
    code = main(["check", "--repo", str(repo.root), "--base", "main", "--head", "bot", "--json", str(out)])
    return code, json.loads(out.read_text()) if out.is_file() else {}


def charged(verdict: dict[str, Any], test: str) -> bool:
    """Whether the verdict charges `test` as a regression (it fails on the head, passes on the base)."""
    return any(f"{test} failed" in penalty["message"] and "(it passes on the base)" in penalty["message"]
               for penalty in verdict["penalties"])


def outcomes(verdict: dict[str, Any]) -> dict[str, str]:
    return {case["name"]: case["status"] for case in verdict["cases"] if case["kind"] == "pytest"}


@pytest.mark.usefixtures("gate_cache")
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_time_zone_read_at_import_and_in_a_test_gates_right(backend: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    repo = project_repo(tmp_path / "repo", {"clock.py": CLOCK, "tests/test_clock.py": CLOCK_TESTS,
                                            ".github/gate.yml": POLICY})
    repo.commit("bot: a comment", {"clock.py": "# Local hours of the company's offices.\n" + CLOCK})
    code, honest = gate_check(repo, backend, monkeypatch, tmp_path)
    assert code == 0, honest
    assert set(outcomes(honest).values()) == {"passed"} and len(outcomes(honest)) == 2

    repo.commit("bot: faster", {"clock.py": CLOCK.replace("    return datetime(", "    return None\n    datetime(")})
    code, regression = gate_check(repo, backend, monkeypatch, tmp_path)
    assert code == 1
    assert outcomes(regression) == {
        "tests/test_clock.py::test_chicago_is_five_hours_behind_in_summer": "failed",
        "tests/test_clock.py::test_paris_in_winter": "passed"}
    assert charged(regression, "test_chicago_is_five_hours_behind_in_summer")


# A command-line tool run by its tests as `python -m slugcli`, needing the environment's text_unidecode.
SLUGCLI = {
    "pyproject.toml": pyproject("slugcli", ["text-unidecode"]),
    "slugcli/__init__.py": ("from text_unidecode import unidecode\n\n\n"
                            "def slugify(text):\n    return '-'.join(unidecode(text).lower().split())\n"),
    "slugcli/__main__.py": "import sys\n\nfrom slugcli import slugify\n\nprint(slugify(' '.join(sys.argv[1:])))\n",
    "tests/test_cli.py": (
        "import subprocess\nimport sys\n\n\n"
        "def test_the_command_line_slugs():\n"
        "    done = subprocess.run([sys.executable, '-m', 'slugcli', 'Héllo', 'Wörld'], capture_output=True,\n"
        "                          text=True)\n"
        "    assert (done.returncode, done.stdout) == (0, 'hello-world\\n'), done.stderr\n"),
    ".github/gate.yml": "budget: 1\ntests:\n  paths: [tests]\n  test_timeout: 20\n",
}
BROKEN_SLUGIFY = SLUGCLI["slugcli/__init__.py"].replace("    return '-'", "    return None\n    '-'")
# What a head plants so that its code runs as any interpreter of the run starts: the output the test expects
# (the forging head of the last test here).
FORGE = "import builtins; builtins.print = lambda *args, _print=builtins.print, **kw: _print('hello-world')\n"
PLANTED = {"sitecustomize.py": FORGE, "usercustomize.py": FORGE, "slugcli_forge.pth": FORGE,
           "slugcli/forge.pth": FORGE}
# The head's own build backend, which writes the same into the wheel, so into the build's layer.
FORGING_BACKEND = BACKEND.replace(
    '        items += [(f"{info}/METADATA"',
    f'        items += [("sitecustomize.py", {FORGE.encode()!r}), ("zz_forge.pth", {FORGE.encode()!r})]\n'
    '        items += [(f"{info}/METADATA"')


@pytest.mark.usefixtures("offline_pip")
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.slow
def test_a_test_running_sys_executable_m_pkg_passes_on_the_base_and_charges_a_regression(
        backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = project_repo(tmp_path / "repo", SLUGCLI)
    repo.commit("bot: a comment", {"slugcli/__main__.py": "# The entry point.\n" + SLUGCLI["slugcli/__main__.py"]})
    code, honest = gate_check(repo, backend, monkeypatch, tmp_path)
    assert code == 0, honest
    assert outcomes(honest) == {"tests/test_cli.py::test_the_command_line_slugs": "passed"}

    repo.commit("bot: faster", {"slugcli/__init__.py": BROKEN_SLUGIFY})
    code, regression = gate_check(repo, backend, monkeypatch, tmp_path)
    assert code == 1
    assert outcomes(regression) == {"tests/test_cli.py::test_the_command_line_slugs": "failed"}
    assert charged(regression, "test_the_command_line_slugs")


TOOL = """\
def main(argv):
    if not argv:
        print("usage: tool NAME")
        exit(2)
    if argv == ["--version"]:
        quit()
    return f"hello {argv[0]}"
"""
TOOL_TESTS = """\
import pytest

from tool import main


def test_no_name_exits_with_status_2():
    with pytest.raises(SystemExit) as stopped:
        main([])
    assert stopped.value.code == 2


def test_version_quits():
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code is None


def test_greets():
    assert main(["ada"]) == "hello ada"
"""


@pytest.mark.usefixtures("gate_cache")
@pytest.mark.parametrize("backend", BACKENDS)
def test_code_calling_exit_and_quit_runs_as_in_ci(backend: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    repo = project_repo(tmp_path / "repo", {"tool.py": TOOL, "tests/test_tool.py": TOOL_TESTS,
                                            ".github/gate.yml": POLICY})
    repo.commit("bot: a comment", {"tool.py": "# Greets.\n" + TOOL})
    code, honest = gate_check(repo, backend, monkeypatch, tmp_path)
    assert code == 0, honest
    assert set(outcomes(honest).values()) == {"passed"} and len(outcomes(honest)) == 3

    repo.commit("bot: a gentler usage error", {"tool.py": TOOL.replace("exit(2)", "exit(1)")})
    code, regression = gate_check(repo, backend, monkeypatch, tmp_path)
    assert code == 1
    assert outcomes(regression)["tests/test_tool.py::test_no_name_exits_with_status_2"] == "failed"
    assert outcomes(regression)["tests/test_tool.py::test_version_quits"] == "passed"


# Styles its output on a terminal only, as coloredlogs and click do; its tests give it one through a pty.
STYLE = """\
def styled(text, stream):
    return f"\\033[1m{text}\\033[0m" if stream.isatty() else text
"""
STYLE_TESTS = """\
import io
import os
import pty

from style import styled


def test_plain_when_piped():
    assert styled("ok", io.StringIO()) == "ok"


def test_bold_on_a_terminal():
    main, secondary = pty.openpty()
    with os.fdopen(secondary, "w") as terminal:
        assert styled("ok", terminal) == "\\033[1mok\\033[0m"
    os.close(main)
"""


@pytest.mark.usefixtures("gate_cache")
def test_a_suite_that_gives_its_code_a_terminal_through_a_pty_gates_right(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    repo = project_repo(tmp_path / "repo", {"style.py": STYLE, "tests/test_style.py": STYLE_TESTS,
                                            ".github/gate.yml": POLICY})
    repo.commit("bot: a comment", {"style.py": "# Bold on a terminal.\n" + STYLE})
    code, honest = gate_check(repo, "zygote", monkeypatch, tmp_path)
    assert code == 0, honest
    assert outcomes(honest) == {"tests/test_style.py::test_plain_when_piped": "passed",
                                "tests/test_style.py::test_bold_on_a_terminal": "passed"}

    repo.commit("bot: never bold", {"style.py": STYLE.replace("stream.isatty()", "False")})
    code, regression = gate_check(repo, "zygote", monkeypatch, tmp_path)
    assert code == 1
    assert outcomes(regression)["tests/test_style.py::test_bold_on_a_terminal"] == "failed"


# A command-line project as real suites test one (docs/sandbox.md, "What a run has of CI's"): its own console
# script run by name, a dependency's command whose module is on a folder its .pth file adds, workers started
# with multiprocessing's spawn, settings in the user's home, the C library found by ctypes.
SLUGTOOL = {
    "pyproject.toml": pyproject("slugtool", ["text-unidecode", "acme-cli"],
                                extra='\n[project.scripts]\nslugtool = "slugtool.cli:main"\n'),
    "slugtool/__init__.py": SLUGCLI["slugcli/__init__.py"],
    "slugtool/cli.py": ("import sys\n\nfrom slugtool import slugify\n\n\n"
                        "def main():\n    print(slugify(' '.join(sys.argv[1:])))\n    return 0\n"),
    "tests/test_runtime.py": '''\
import ctypes.util
import getpass
import multiprocessing
import os
import pathlib
import subprocess

from slugtool import slugify


def test_the_command_slugs():
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    done = subprocess.run(["slugtool", "Héllo", "Wörld"], env=env, capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "hello-world\\n"), done.stderr


def test_workers_slug():
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        assert pool.map(slugify, ["ça va", "élan"]) == ["ca-va", "elan"]


def test_a_dependency_command_runs():
    done = subprocess.run(["acme", "ada"], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "hello ada\\n"), done.stderr


def test_settings_live_in_the_users_home():
    settings = pathlib.Path("~/.config/slugtool").expanduser()
    settings.mkdir(parents=True)
    (settings / "user").write_text(getpass.getuser())
    assert (pathlib.Path.home() / ".config/slugtool/user").read_text() == os.environ["USER"]


def test_the_c_library_is_found():
    assert ctypes.CDLL(ctypes.util.find_library("c")).strlen(b"four") == 4
''',
    ".github/gate.yml": "budget: 1\ntests:\n  paths: [tests]\n  test_timeout: 30\n",
}


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_a_suite_using_commands_workers_and_a_home_gates_right_and_a_forging_head_does_not_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = project_repo(tmp_path / "repo", SLUGTOOL)
    repo.commit("bot: a comment", {"slugtool/cli.py": "# The command.\n" + SLUGTOOL["slugtool/cli.py"]})
    code, honest = gate_check(repo, "zygote", monkeypatch, tmp_path)
    assert code == 0, honest
    assert set(outcomes(honest).values()) == {"passed"} and len(outcomes(honest)) == 5, outcomes(honest)

    # The regression, with what would print the expected output as the command's interpreter starts: at the
    # tree's top (a test that puts the tree on PYTHONPATH would find a module named like the gate's start-up
    # there first), in its package, and in what the head's build writes into the layer.
    repo.commit("bot: faster", {"slugtool/__init__.py": BROKEN_SLUGIFY, "_backend/backend.py": FORGING_BACKEND,
                                "_gate_run.py": "import os\nos.write(1, b'hello-world\\n')\nos._exit(0)\n",
                                **PLANTED})
    code, regression = gate_check(repo, "zygote", monkeypatch, tmp_path)
    assert code == 1, regression
    assert outcomes(regression) == {
        "tests/test_runtime.py::test_the_command_slugs": "failed",
        "tests/test_runtime.py::test_workers_slug": "failed",
        "tests/test_runtime.py::test_a_dependency_command_runs": "passed",
        "tests/test_runtime.py::test_settings_live_in_the_users_home": "passed",
        "tests/test_runtime.py::test_the_c_library_is_found": "passed"}
    assert charged(regression, "test_the_command_slugs") and charged(regression, "test_workers_slug")
