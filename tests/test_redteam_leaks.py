"""A hidden case's arguments and expected value never reach a report, whatever the candidate puts in its
exception, its output or a forged record on the result channel; and none of it scores a pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.cases.base import MAX_DETAIL
from tests.redteam_support import (
    HIDDEN_A,
    HIDDEN_B,
    HIDDEN_SUM,
    assert_hidden_values_absent,
    assert_not_passed,
    bot_repo,
    check,
    healthy_after,
)

# Each body of add(a, b) knows the right answer (a + b) and tries to get it, or the arguments, into a report
# while failing the case. `_fd()` finds the result channel the harness keeps open.
FIND_FD = """
import json, os, sys

def _forge(record):
    for fd in range(3, 64):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:") and fd not in (0, 1, 2):
                os.write(fd, json.dumps(record).encode())
        except OSError:
            pass
    os._exit(0)

"""
LEAKS = {
    "exception message": "def add(a, b):\n    raise ValueError(f'{a} {b} {a + b}')\n",
    "exception type named after the value": (
        "def add(a, b):\n    kind = type(f'E{a + b}', (Exception,), {'__qualname__': f'{a}_{b}_{a + b}'})\n"
        "    raise kind(str(a + b))\n"),
    "exception type's module": (
        "def add(a, b):\n    kind = type('E', (Exception,), {'__module__': f'{a} {b} {a + b}'})\n"
        "    raise kind()\n"),
    "printed": ("import sys\n\ndef add(a, b):\n    print(a, b, a + b)\n    print(a, b, a + b, file=sys.stderr)\n"
                "    return str(a + b)\n"),
    "forged load record": FIND_FD + "def add(a, b):\n    _forge({'load': f'{a} {b} {a + b}'})\n",
    "forged notdata record": FIND_FD + "def add(a, b):\n    _forge({'notdata': f'{a} {b} {a + b}'})\n",
    "forged raised record": FIND_FD + "def add(a, b):\n    _forge({'raised': f'{a} {b} {a + b}', 'message': ''})\n",
    "forged ok record of another type": (
        FIND_FD + "def add(a, b):\n    _forge({'ok': '\"%d %d %d\"' % (a, b, a + b)})\n"),
    "fake workflow commands": (
        "import sys\n\ndef add(a, b):\n    print(f'::error file=x.py,line=1::{a} {b} {a + b}')\n"
        "    print(f'::add-mask::x')\n    raise SystemExit(0)\n"),
}


@pytest.mark.slow
@pytest.mark.parametrize("attack", sorted(LEAKS))
def test_a_hidden_case_leaks_nothing(tmp_path: Path, attack: str) -> None:
    repo = bot_repo(tmp_path / "repo", LEAKS[attack])
    run = check(repo, tmp_path)
    assert_not_passed(run, "hidden case 1")
    assert_hidden_values_absent(run)
    healthy_after(run, repo, tmp_path)


# A hidden stdio case runs calc.py as a program with the case's arguments; a report that counted its lines or
# named its exit status or signal would carry numbers the program chose from them.
HIDDEN_STDIO = f"""\
cases:
  - name: secret sum over stdio
    kind: stdio
    program: calc.py
    args: ["{HIDDEN_A}", "{HIDDEN_B}"]
    stdout: "{HIDDEN_SUM}"
"""
STDIO_LEAKS = {
    "line count": "import sys\nif __name__ == '__main__':\n    sys.stdout.write('\\n.' * int(sys.argv[1]))\n",
    "exit status": "import sys\nif __name__ == '__main__':\n    sys.exit(int(sys.argv[2]) % 256)\n",
    "signal": "import os, sys\nif __name__ == '__main__':\n    os.kill(os.getpid(), int(sys.argv[2]) % 31 + 1)\n",
}


CALL_CHOSEN_NUMBERS = {
    "exit status": "import os\n\ndef add(a, b):\n    os._exit(b % 256)\n",
    "signal": "import os\n\ndef add(a, b):\n    os.kill(os.getpid(), b % 31 + 1)\n",
}


@pytest.mark.slow
@pytest.mark.parametrize("attack", sorted(CALL_CHOSEN_NUMBERS))
def test_a_hidden_call_case_reports_no_number_the_program_chose(tmp_path: Path, attack: str) -> None:
    repo = bot_repo(tmp_path / "repo", CALL_CHOSEN_NUMBERS[attack])
    run = check(repo, tmp_path)
    assert_not_passed(run, "hidden case 1")
    detail = run.case("hidden case 1")["detail"]
    assert not any(ch.isdigit() for ch in detail), detail
    healthy_after(run, repo, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("attack", sorted(STDIO_LEAKS))
def test_a_hidden_stdio_case_reports_no_number_the_program_chose(tmp_path: Path, attack: str) -> None:
    code = "def add(a, b):\n    return a + b\n\n" + STDIO_LEAKS[attack]
    repo = bot_repo(tmp_path / "repo", code, hidden=HIDDEN_STDIO)
    run = check(repo, tmp_path)
    assert_not_passed(run, "hidden case 1")
    assert_hidden_values_absent(run)
    detail = run.case("hidden case 1")["detail"]
    assert not any(ch.isdigit() for ch in detail), detail
    healthy_after(run, repo, tmp_path)


@pytest.mark.slow
def test_a_long_text_from_a_run_is_cut_in_every_report(tmp_path: Path) -> None:
    # A record the candidate wrote itself has no length of its own: a 3 KB file the run could read appeared
    # whole in the PR comment. Whatever a run sends back is cut before any report shows it.
    text = "".join(f"line {i:04d} of a file the run could read\n" for i in range(100))
    repo = bot_repo(tmp_path / "repo", FIND_FD + f"def add(a, b):\n    _forge({{'load': {text!r}}})\n")
    run = check(repo, tmp_path)
    assert_not_passed(run, "adds")
    detail = run.case("adds")["detail"]
    assert detail.startswith("the code does not load: line 0000") and len(detail) <= MAX_DETAIL + 40
    assert "more characters" in detail
    assert "line 0099" not in run.reports  # not in the JSON, the comment, the summary, the terminal, the log
    healthy_after(run, repo, tmp_path)
