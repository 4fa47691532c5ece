"""What the gate says while it works (gate/progress.py): on a terminal, in a CI log, in GitHub Actions, and
nothing with --quiet; then `gate check` itself, on a real project, in each of those places."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gate.progress import QUIET, Progress, progress_for
from tests.projects import gate_cache, gate_cache_root, offline_pip, wheelhouse  # noqa: F401
from tests.suite_support import BROKEN_MUL, calc_project


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _steps(progress: Progress) -> None:
    with progress.step("environment: requirements.txt") as step:
        progress.say("uv builds it")
        step.done("8 packages")
    with progress.step("tests") as step:
        count = progress.count("the head's tests")
        count.expect(3)
        for _ in range(5):  # (a test the gate runs again counts once: never past the total)
            count.add()
        count.close()
        step.done("failed, +4 points")


def test_a_ci_log_gets_plain_lines_each_step_with_its_outcome_and_time() -> None:
    stream = io.StringIO()
    _steps(progress_for(stream, {}))
    lines = [re.sub(r"\d+\.\d s", "T s", line) for line in stream.getvalue().splitlines()]
    assert lines == ["gate: environment: requirements.txt...", "  uv builds it",
                     "gate: environment: requirements.txt: 8 packages (T s)", "gate: tests...",
                     "  the head's tests: 3 to run", "  the head's tests: 3/3 run in T s",
                     "gate: tests: failed, +4 points (T s)"]
    assert "\r" not in stream.getvalue() and "\x1b" not in stream.getvalue()


def test_github_actions_folds_each_steps_lines_under_its_title() -> None:
    stream = io.StringIO()
    _steps(progress_for(stream, {"GITHUB_ACTIONS": "true"}))
    lines = [re.sub(r"\d+\.\d s", "T s", line) for line in stream.getvalue().splitlines()]
    assert lines == ["::group::gate: environment: requirements.txt", "uv builds it", "::endgroup::",
                     "gate: environment: requirements.txt: 8 packages (T s)", "::group::gate: tests",
                     "the head's tests: 3 to run", "the head's tests: 3/3 run in T s", "::endgroup::",
                     "gate: tests: failed, +4 points (T s)"]


def test_a_terminal_gets_a_running_count_redrawn_in_place() -> None:
    stream = _Tty()
    progress = progress_for(stream, {})
    count = progress.count("the head's tests", 40)
    def ten() -> None:
        for _ in range(10):
            count.add()

    threads = [threading.Thread(target=ten) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    progress._drawn = 0.0  # (redraws are at most every 0.1 s)
    count.add(0)
    count.close()
    text = stream.getvalue()
    assert "\r\x1b[Kthe head's tests 40/40" in text  # the status line, redrawn, from four threads' counts
    assert text.endswith("\r\x1b[Kthe head's tests: 40/40 run in 0.0 s\n")  # cleared, then its end


def test_quiet_says_nothing() -> None:
    assert progress_for(_Tty(), {"GITHUB_ACTIONS": "true"}, quiet=True) is QUIET
    _steps(QUIET)  # (no stream to write to)


def test_a_hidden_cases_check_says_how_it_went_but_not_how_long() -> None:
    stream = io.StringIO()
    progress = progress_for(stream, {})
    with progress.step("smoke") as step:
        step.done("passed", timed=False)
    assert stream.getvalue().splitlines()[-1] == "gate: smoke: passed"


def _gate_check(root: Path, *args: str, env: dict[str, str], stderr: int = subprocess.PIPE
                ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gate", "check", "--base", "main", "--head", "bot", *args],
                          cwd=root, stdout=subprocess.PIPE, stderr=stderr, text=True, env={**os.environ, **env},
                          timeout=600)


@pytest.mark.usefixtures("offline_pip")
@pytest.mark.slow
def test_gate_check_says_each_step_counts_the_tests_and_times_the_whole_run(tmp_path: Path) -> None:
    repo = calc_project(tmp_path / "repo")
    repo.commit("bot: speed up mul", {"calc.py": BROKEN_MUL})
    out = tmp_path / "verdict.json"
    clean = {"GITHUB_ACTIONS": "", "NO_COLOR": "1"}

    # In GitHub Actions: each step folded under its title, its outcome after the fold; the report on stdout.
    actions = _gate_check(repo.root, "--json", str(out), env={**clean, "GITHUB_ACTIONS": "true"})
    assert actions.returncode == 1, actions.stderr
    log = actions.stderr
    # (the environment is the session's, maybe built by another test already: then it is said to be cached)
    assert re.search(r"^(::group::gate: environment: the base project with extras \[test\]\n(.*\n)*?::endgroup::\n"
                     r"gate: environment: the base project with extras \[test\]: \d+ packages? installed by \w+ "
                     r"\(\d+\.\d s\)|gate: environment: \d+ packages?, cached)$", log, re.M), log
    assert "::group::gate: tests\n" in log
    assert re.search(r"^the (head|base)'s tests: 4 to run$", log, re.M), log
    assert re.search(r"^the head's tests: 4/4 run in \d+\.\d s$", log, re.M), log
    assert re.search(r"^::endgroup::\ngate: tests: failed, \+4 points: 4 tests \(against the base\) \(\d+\.\d s\)$",
                     log, re.M), log
    assert "::group::" not in actions.stdout and "BLOCKED" in actions.stdout
    # The JSON's total is the whole run's: the environment and the suite within it.
    timings = json.loads(out.read_text())["timings"]
    assert timings["total"] >= timings["environment"] + timings["tests"] > 0

    # On a terminal: the count redrawn in place, on stderr.
    primary, secondary = os.openpty()
    try:
        tty = _gate_check(repo.root, env=clean, stderr=secondary)
        os.close(secondary)
        shown = b""
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(primary)
    assert tty.returncode == 1
    assert re.search(rb"\r\x1b\[Kthe (head|base)'s tests \d/4", shown), shown
    assert b"::group::" not in shown

    # --quiet: not a word on stderr; the report as ever.
    quiet = _gate_check(repo.root, "--quiet", env=clean)
    assert quiet.returncode == 1 and quiet.stderr == "" and "BLOCKED" in quiet.stdout
