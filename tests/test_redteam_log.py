"""The candidate's text reaches the gate's terminal report (a public case's detail quotes what it printed or
raised), and on GitHub that report is the job's log, where the runner obeys any line that starts with `::`
or `##[` after leading spaces: a fake annotation, or `::stop-commands::` to silence the gate's own. No line
of the report may start that way, whatever the candidate writes, and no control character from it reaches
the terminal."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.redteam_support import HONEST, bot_repo, check, healthy_after, python_reply, score

TASK = "name: add\nfunction: add\ncases:\n  - args: [2, 3]\n    expect: 5\n"
STDIO_TASK = "name: echo\ncases:\n  - stdin: \"\"\n    stdout: \"5\"\n"
INJECTION = ("x\\n::error title=PWNED::fake\\n  ::stop-commands::abc " + "y " * 20 + "::warning::WRAPPED"
             "\\n##[error]v1 \\r\\x1b[2KACCEPTED  total 0")
REPLIES = {
    "exception message": (TASK, f"def add(a, b):\n    raise ValueError('{INJECTION}')\n"),
    "stdout of a program": (STDIO_TASK, f"print('{INJECTION}')\n"),
}


@pytest.mark.parametrize("where", sorted(REPLIES))
def test_no_report_line_is_a_workflow_command(tmp_path: Path, where: str) -> None:
    task, code = REPLIES[where]
    run = score(python_reply(code), tmp_path, task)
    assert run.verdict["cases"][0]["status"] == "failed", run.reports
    commands = [line for line in run.reports.splitlines() if line.lstrip().startswith(("::", "##["))]
    assert not commands, commands
    assert "\x1b" not in run.reports and "\r" not in run.reports


@pytest.mark.slow
def test_a_file_name_that_is_not_utf8_is_reported_not_a_crash(tmp_path: Path) -> None:
    """Git allows any bytes in a name; the bot's file `bad<FF><ESC>[31m.py` does not parse and is reported."""
    repo = bot_repo(tmp_path / "repo", HONEST)
    name = b"bad\xff\x1b[31m.py"
    with open(os.path.join(os.fsencode(repo.root), name), "wb") as source:
        source.write(b"x = (\n")
    subprocess.run([b"git", b"add", name], cwd=repo.root, check=True)
    repo.git("commit", "-q", "-m", "bot: odd name")
    run = check(repo, tmp_path)
    assert "Traceback" not in run.reports, run.reports[-2000:]
    # The parse failure is charged; the cases it kept from running cost as not run (docs/how-it-works.md).
    penalties = run.verdict["penalties"]
    assert [p["check"] for p in penalties if p["check"] != "timeout"] == ["parse"], penalties
    assert all("not run: parse failed" in p["message"] for p in penalties if p["check"] == "timeout"), penalties
    terminal = [line for line in run.reports.splitlines() if not line.startswith("::")]
    assert not any("\x1b" in line for line in terminal)
    healthy_after(run, repo, tmp_path)
