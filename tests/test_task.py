"""Task files as a user writes them for `gate score REPLY.md --task TASK.yml`."""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.errors import EXIT_BAD_INPUT, BadInput
from gate.policy.model import CaseSpec
from gate.sources.task import load_task
from gate.subject import Task

TASK = """\
# yaml-language-server: $schema=task.schema.json
name: add two numbers
prompt: |
  Write add(a, b) and a script that adds the two numbers on stdin.
function: add
allowed_imports: [sys, math]
cases:
  - name: small
    args: [1, 2]
    expect: 3
  - args: [0.1, 0.2]
    expect: 0.3
    tol: 1.0e-9
  - args: ["1", 2]
    error: TypeError
  - stdin: "2 3\\n"
    stdout: "5"
"""


def test_a_task_file_gives_the_task_and_its_cases(tmp_path: Path) -> None:
    path = tmp_path / "task.yml"
    path.write_text(TASK)

    task, cases = load_task(path)

    prompt = "Write add(a, b) and a script that adds the two numbers on stdin.\n"
    assert task == Task(name="add two numbers", prompt=prompt, function="add",
                        allowed_imports=("sys", "math"))
    assert cases[0] == CaseSpec("call", "small", (("args", [1, 2]), ("expect", 3)))
    assert [(case.kind, case.name) for case in cases] == [("call", "small"), ("call", "case 2"),
                                                         ("call", "case 3"), ("stdio", "case 4")]
    assert cases[1].get("tol") == 1e-9 and cases[2].get("error") == "TypeError"
    assert cases[3].get("stdin") == "2 3\n"


def test_only_the_name_is_required(tmp_path: Path) -> None:
    path = tmp_path / "task.yml"
    path.write_text("name: t\n")
    assert load_task(path) == (Task(name="t"), ())
    # An empty allow-list means "no imports at all", which is not the same as no allow-list.
    path.write_text("name: t\nallowed_imports: []\n")
    assert load_task(path)[0].allowed_imports == ()


@pytest.mark.parametrize(("text", "line", "key", "words"), [
    pytest.param("prompt: hi\n", 1, None, "missing required key `name`", id="missing-name"),
    pytest.param("name: t\nfuncton: f\n", 2, "functon", "unknown key; did you mean `function`?",
                 id="unknown-key"),
    pytest.param("name: t\nallowed_imports: sys\n", 2, "allowed_imports", "expected a list or null, got the "
                 "string 'sys'", id="imports-not-a-list"),
    pytest.param("name: t\nallowed_imports: [sys, sys]\n", 2, "allowed_imports",
                 "lists the string 'sys' twice", id="imports-twice"),
    pytest.param("name: t\nfunction: 'my func'\n", 2, "function", "expected a function name",
                 id="bad-function"),
    pytest.param("name: t\ncases:\n  - args: [1]\n    expect: 2\n  - args: [2]\n    expected: 3\n", 6,
                 "cases[1].expected", "unknown key; did you mean `expect`?", id="case-unknown-key"),
    pytest.param("name: t\ncases:\n  - stdin: ''\n    exit_code: zero\n", 4, "cases[0].exit_code",
                 "expected an integer, got the string 'zero'", id="case-wrong-type"),
    pytest.param("name: t\ncases:\n  - args: [1]\n", 3, "cases[0]", "exactly one of `expect` or `error`",
                 id="call-without-expect"),
    pytest.param("name: t\ncases: {args: [1]}\n", 2, "cases", "expected a list, got a mapping",
                 id="cases-not-a-list"),
    pytest.param("name: t\n  prompt: x\n", 2, None, "YAML syntax error", id="yaml-syntax"),
    pytest.param("", None, None, "the task file is empty", id="empty"),
    pytest.param("[a, b]\n", 1, None, "expected a mapping with `name`", id="top-level-list"),
])
def test_each_task_error_is_one_line_naming_file_line_and_key(tmp_path: Path, text: str, line: int | None,
                                                              key: str | None, words: str) -> None:
    path = tmp_path / "task.yml"
    path.write_text(text)

    with pytest.raises(BadInput) as caught:
        load_task(path)

    error = caught.value
    assert error.exit_code == EXIT_BAD_INPUT
    assert (error.file, error.line, error.key) == (str(path), line, key)
    assert words in error.message
    assert "\n" not in error.render()


def test_a_missing_task_file_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput) as caught:
        load_task(tmp_path / "nope.yml")
    assert caught.value.render() == f"{tmp_path / 'nope.yml'}: no such task file"
