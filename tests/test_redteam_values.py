"""Values that break a naive report: an int too long for a decimal string (Python refuses to print more than
4300 digits), one too big for a float when the case has a tolerance, and one inside a list. The case fails
with a report, never a traceback in the gate."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.redteam_support import leftovers, python_reply, score

TASK = "name: add\nfunction: add\ncases:\n  - args: [2, 3]\n    expect: 5\n"
TOL_TASK = "name: add\nfunction: add\ncases:\n  - args: [2, 3]\n    expect: 5.0\n    tol: 0.5\n"
RETURNS = {
    "a huge int": (TASK, "1 << 200000"),
    "a huge int with a tolerance": (TOL_TASK, "1 << 200000"),
    "a huge int in a list": ("name: add\nfunction: add\ncases:\n  - args: [2, 3]\n    expect: [5]\n",
                             "[1 << 200000]"),
    "a huge int as a dict key": ("name: add\nfunction: add\ncases:\n  - args: [2, 3]\n    expect: {}\n",
                                 "{1 << 200000: 1}"),
}


@pytest.mark.slow
@pytest.mark.parametrize("value", sorted(RETURNS))
def test_a_value_too_big_to_show_is_a_failed_case(tmp_path: Path, value: str) -> None:
    task, expression = RETURNS[value]
    run = score(python_reply(f"def add(a, b):\n    return {expression}\n"), tmp_path, task)
    assert "Traceback" not in run.reports, run.reports[-2000:]
    assert run.code in (0, 1) and run.verdict["cases"][0]["status"] == "failed", run.reports[-2000:]
    assert not leftovers(run, tmp_path)


DEEP = """\
import os, socket, stat

def add(a, b):
    for fd in range(3, 64):
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISSOCK(mode):
                os.write(fd, b"[" * 100000 + b"\\n")
            elif stat.S_ISFIFO(mode) and os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
                os.write(fd, b"[" * 100000)
        except OSError:
            pass
    os._exit(0)
"""
SAFE_TEST = ("cases:\n  - kind: mbpp\n    tests: [\"try:\\n    add(1, 2)\\nexcept Exception:\\n    pass\"]\n")


@pytest.mark.parametrize("hidden", [None, SAFE_TEST])
def test_json_nested_too_deep_on_a_channel_is_no_result(tmp_path: Path, hidden: str | None) -> None:
    """On the result channel (a call case) or the pair's socket (an MBPP test that catches any Exception)."""
    run = score(python_reply(DEEP), tmp_path, TASK, hidden)
    assert "Traceback" not in run.reports, run.reports[-2000:]
    assert "passed" not in [c["status"] for c in run.verdict["cases"]], run.reports[-2000:]
    assert not leftovers(run, tmp_path)


def test_a_lone_surrogate_in_an_exception_message_is_printable(tmp_path: Path) -> None:
    """JSON carries a lone surrogate (\\ud800) that no UTF-8 stream can print: the terminal report and the JSON
    file are written all the same."""
    reply = python_reply("def add(a, b):\n    raise ValueError('bad \\ud800 text')\n")
    run = score(reply, tmp_path, TASK)
    assert "Traceback" not in run.reports, run.reports[-2000:]
    assert run.verdict["cases"][0]["status"] == "failed"
    assert "bad \ufffd text" in run.verdict["cases"][0]["detail"]
