"""What a repository's suite meets at run time, as in the project's CI: the system data it reads (a time zone at
import and in a test), gated end to end by `gate check` on a git range, as root with every layer on, on the
zygote and the fresh-interpreter backends. A test here must pass on the base and catch a regression in the
head: one that fails on both sides is never charged, and a base that cannot import stops the gate."""

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
from tests.projects import gate_cache, gate_cache_root, offline_pip, project_repo, wheelhouse  # noqa: F401

BACKENDS = ("zygote", "fresh-interpreter")
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
    assert any("test_chicago_is_five_hours_behind_in_summer failed at " in penalty["message"]
               for penalty in regression["penalties"])
