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


@pytest.mark.parametrize("value", sorted(RETURNS))
def test_a_value_too_big_to_show_is_a_failed_case(tmp_path: Path, value: str) -> None:
    task, expression = RETURNS[value]
    run = score(python_reply(f"def add(a, b):\n    return {expression}\n"), tmp_path, task)
    assert "Traceback" not in run.reports, run.reports[-2000:]
    assert run.code in (0, 1) and run.verdict["cases"][0]["status"] == "failed", run.reports[-2000:]
    assert not leftovers(run, tmp_path)
