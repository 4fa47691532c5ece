"""`gate score` runs the task's cases in the sandbox: the examples in examples/ end to end through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from gate.sandbox import open_sandbox
from gate.sandbox.base import Limits

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _score(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["score", *argv, "--json", "-"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def test_third_seed_demo_is_accepted_with_total_zero(capsys: pytest.CaptureFixture[str]) -> None:
    folder = EXAMPLES / "sum-two-numbers"
    code, verdict = _score(capsys, str(folder / "reply.md"), "--task", str(folder / "task.yml"))
    assert (code, verdict["total"], verdict["accepted"]) == (0, 0, True)
    assert [(c["name"], c["status"]) for c in verdict["cases"]] == [("five plus seven", "passed")]
    assert verdict["isolation"]["zygote"] == "on"
    assert {c["name"]: c["status"] for c in verdict["checks"]}["smoke"] == "passed"


def test_first_seed_is_even_fails_on_true(capsys: pytest.CaptureFixture[str]) -> None:
    folder = EXAMPLES / "is_even"
    code, verdict = _score(capsys, str(folder / "reply.md"), "--task", str(folder / "task.yml"))
    assert code == 1
    smoke = [p["message"] for p in verdict["penalties"] if p["check"] == "smoke"]
    assert smoke == ["case 3 (a bool is not an integer) failed: expected TypeError, returned bool False"]


def test_hidden_cases_from_the_environment(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    hidden = tmp_path / "hidden.yml"
    hidden.write_text("- stdin: '2 2'\n  stdout: '4'\n- stdin: '-3 3'\n  stdout: '1'\n")
    monkeypatch.setenv("GATE_HIDDEN_CASES", str(hidden))
    folder = EXAMPLES / "sum-two-numbers"
    code, verdict = _score(capsys, str(folder / "reply.md"), "--task", str(folder / "task.yml"))
    assert (code, verdict["total"]) == (0, 2)  # one failed case is within the budget of 3
    messages = [p["message"] for p in verdict["penalties"]]
    assert messages == ["hidden case 2 failed: stdout differs"]
    assert "'1'" not in json.dumps(verdict["cases"])


def test_a_required_layer_that_is_missing_fails_closed(capsys: pytest.CaptureFixture[str],
                                                       tmp_path: Path) -> None:
    sandbox = open_sandbox(Limits())
    missing = [name for name, how in sandbox.isolation.items() if how.startswith("off")]
    sandbox.close()
    if not missing:
        pytest.skip("every isolation layer is present on this machine")
    policy = tmp_path / "gate.yml"
    policy.write_text(f"require: [{missing[0]}]\n")
    folder = EXAMPLES / "sum-two-numbers"
    argv = ["score", str(folder / "reply.md"), "--task", str(folder / "task.yml"), "--policy", str(policy)]
    code = main(argv)
    assert code == 3
    assert f"required isolation layer(s) not available here: {missing[0]}" in capsys.readouterr().err
