"""Hidden cases: read from the base commit or from outside the worktree, validated, unseen by the code."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from gate.cases.hidden import load_hidden
from gate.checks.parse import Parse
from gate.checks.smoke import Smoke
from gate.engine import run_checks
from gate.errors import BadInput
from gate.policy.model import CaseSpec, Hidden, Policy
from gate.sandbox.base import Sandbox
from gate.subject import SourceFile, Subject
from tests.cases_support import HUNT

CASES = "cases:\n  - name: secret\n    args: [2]\n    expect: true\n  - stdin: '1 2'\n    stdout: '3'\n"


def test_from_the_base_commit() -> None:
    read: list[str] = []

    def base_reader(path: str) -> str | None:
        read.append(path)
        return CASES

    cases = load_hidden(Policy(), base_reader, environ={})
    assert read == [".github/gate-hidden.yml"]
    assert [(c.kind, c.name, c.hidden) for c in cases] == [
        ("call", "secret", True), ("stdio", "case 2", True)]
    assert cases[0].get("args") == [2] and cases[0].get("expect") is True


def test_none_when_the_base_has_no_file() -> None:
    assert load_hidden(Policy(), lambda path: None, environ={}) == ()


def test_from_a_file_an_environment_variable_names(tmp_path: Path) -> None:
    hidden = tmp_path / "hidden.yml"
    hidden.write_text("- args: [1]\n  error: TypeError\n")
    worktree = tmp_path / "repo"
    worktree.mkdir()
    cases = load_hidden(Policy(), None, worktree, environ={"GATE_HIDDEN_CASES": str(hidden)})
    assert [(c.kind, c.get("error")) for c in cases] == [("call", "TypeError")]


@pytest.mark.parametrize("planted", ["cases: []\n", "- args: [1]\n  expect: 1\n"])
def test_with_a_base_the_variable_replaces_nothing(tmp_path: Path, planted: str) -> None:
    hidden = tmp_path / "hidden.yml"
    hidden.write_text(planted)
    cases = load_hidden(Policy(), lambda path: CASES, None, environ={"GATE_HIDDEN_CASES": str(hidden)})
    assert [c.name for c in cases] == ["secret", "case 2"]


def test_a_hidden_file_that_is_not_utf8_is_bad_input_naming_the_variable(tmp_path: Path) -> None:
    hidden = tmp_path / "hidden.yml"
    hidden.write_bytes(b"- args: [1]\n  expect: \xff\n")
    with pytest.raises(BadInput) as error:
        load_hidden(Policy(), None, None, environ={"GATE_HIDDEN_CASES": str(hidden)})
    assert error.value.key == "GATE_HIDDEN_CASES" and error.value.line == 2
    assert "not UTF-8" in error.value.message and error.value.file == str(hidden.resolve())


def test_a_missing_hidden_file_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="no such hidden cases file"):
        load_hidden(Policy(), None, None, environ={"GATE_HIDDEN_CASES": str(tmp_path / "gone.yml")})


def test_a_file_inside_the_worktree_is_refused(tmp_path: Path) -> None:
    (tmp_path / "hidden.yml").write_text(CASES)
    with pytest.raises(BadInput, match="inside the worktree") as raised:
        load_hidden(Policy(), None, tmp_path, environ={"GATE_HIDDEN_CASES": str(tmp_path / "hidden.yml")})
    assert raised.value.key == "GATE_HIDDEN_CASES"


def test_the_heads_copy_is_never_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "gate-hidden.yml").write_text(CASES)
    monkeypatch.chdir(tmp_path)
    assert load_hidden(Policy(), None, tmp_path, environ={}) == ()


def test_a_local_path_outside_the_worktree(tmp_path: Path) -> None:
    (tmp_path / "hidden.yml").write_text(CASES)
    worktree = tmp_path / "repo"
    worktree.mkdir()
    policy = Policy(hidden=Hidden(path=str(tmp_path / "hidden.yml")))
    assert len(load_hidden(policy, None, worktree, environ={})) == 2


@pytest.mark.parametrize(("text", "key", "message"), [
    ("cases:\n  - args: [1]\n    expect: 1\n    error: E\n", "cases[0]", "one of `expect` or `error`"),
    ("cases:\n  - kind: mbpp\n    tests: ['assert f(1) ==']\n", "cases[0].tests", "does not parse"),
    ("cases:\n  - stdin: x\n    stdout_regex: '('\n", "stdout_regex", "regular expression"),
    ("other: 1\n", None, "only `cases:`"),
    ("cases: [\n", None, "YAML syntax error"),
])
def test_bad_hidden_files_are_bad_input(tmp_path: Path, text: str, key: str | None, message: str) -> None:
    path = tmp_path / "hidden.yml"
    path.write_text(text)
    with pytest.raises(BadInput, match=message) as raised:
        load_hidden(Policy(), None, None, environ={"GATE_HIDDEN_CASES": str(path)})
    assert raised.value.file == str(path)
    if key:
        assert key in str(raised.value.key)


def test_the_code_cannot_find_the_hidden_file(sandbox: Sandbox, tmp_path: Path) -> None:
    secret = "gate-secret-" + secrets.token_hex(16)
    path = tmp_path / "hidden.yml"
    path.write_text(f"- function: f\n  expect: {secret}\n- stdout: {secret}\n")
    cases = load_hidden(Policy(), None, None, environ={"GATE_HIDDEN_CASES": str(path)})
    code = HUNT + "\ndef f():\n    return _hunt()\n\nif __name__ == '__main__':\n    print(f())\n"
    subject = Subject(kind="reply", label="reply", files=(SourceFile("solution.py", code),), reply=code,
                      hidden_cases=cases)
    verdict = run_checks(subject, Policy(), sandbox, checks=(Parse(), Smoke()))
    assert [(c.name, c.status) for c in verdict.cases] == [
        ("hidden case 1", "failed"), ("hidden case 2", "failed")]
    assert secret not in verdict.to_json()


def test_no_time_in_the_verdict_tells_a_hidden_input(sandbox: Sandbox, tmp_path: Path) -> None:
    # A candidate that sleeps `arg / 100` s turned each hidden case's `seconds` back into its argument.
    path = tmp_path / "hidden.yml"
    path.write_text("- function: f\n  args: [40]\n  expect: 40\n- function: f\n  args: [90]\n  expect: 90\n")
    cases = load_hidden(Policy(), None, None, environ={"GATE_HIDDEN_CASES": str(path)})
    code = "import time\n\ndef f(x):\n    time.sleep(x / 100)\n    return x\n"
    public = Policy(cases=(CaseSpec("call", "public", (("function", "f"), ("args", [20]), ("expect", 20))),))
    subject = Subject(kind="reply", label="reply", files=(SourceFile("solution.py", code),), reply=None,
                      hidden_cases=cases)
    data = run_checks(subject, public, sandbox).to_dict()
    assert [(c["name"], c["status"]) for c in data["cases"]] == [
        ("public", "passed"), ("hidden case 1", "passed"), ("hidden case 2", "passed")]
    assert data["cases"][0]["seconds"] > 0  # a public case's time is kept
    assert [c["seconds"] for c in data["cases"] if c["hidden"]] == [0, 0]
    # Nor the time of the check that ran them, nor the total, from which the rest would give it away.
    assert {c["name"]: c["seconds"] for c in data["checks"]}["smoke"] == 0
    assert "smoke" not in data["timings"] and "total" not in data["timings"]
