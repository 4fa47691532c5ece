"""The extract check: one solution per reply, only gated code and no chat transcript in a change."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Literal

import pytest

from gate.globs import compile_glob, is_gated, matches
from gate.policy.model import Paths, Policy
from gate.subject import SourceFile, Task
from gate.verdict import Location
from tests.helpers_static import DEMO_REPLY, check, fenced, penalty, score_files, score_reply


def test_seed_demo_reply_scores_zero_on_extract_parse_and_imports() -> None:
    verdict = score_reply(DEMO_REPLY, task=Task("sum-two-numbers", allowed_imports=("sys",)))
    for name in ("extract", "parse", "imports"):
        assert check(verdict, name).status == "passed"
        assert check(verdict, name).points == 0
    assert verdict.total == 0
    assert verdict.accepted


def test_reply_without_a_block_costs_extract_five() -> None:
    verdict = score_reply("Just add the two numbers with a + b and print them.")
    found = penalty(verdict, "extract")
    assert found.points == 5
    assert "no Python code block" in found.message
    assert check(verdict, "parse").status == "skipped"
    assert not verdict.accepted


def test_two_competing_blocks_cost_extract_five_and_name_their_lines() -> None:
    reply = "First try:\n\n" + fenced("print(1)\n") + "\nOr better:\n\n" + fenced("print(2)\n", "py")
    found = penalty(score_reply(reply), "extract")
    assert found.points == 5
    assert "2 competing code blocks (lines 3, 9)" in found.message
    assert [loc.line for loc in found.locations] == [3, 9]
    assert {loc.path for loc in found.locations} == {"reply.md"}


def test_points_come_from_the_policy() -> None:
    from gate.policy.model import Points

    verdict = score_reply("no code", Policy(points=Points(extract=7)))
    assert penalty(verdict, "extract").points == 7


@pytest.mark.parametrize("reply", [
    "Here:\r\n\r\n```python\r\nimport sys\r\nprint(sys.argv)\r\n```\r\n",
    "1. Save this:\n\n    ```py\n    import sys\n    if sys.argv:\n        print(1)\n    ```\n",
    "Code:\n```\nimport sys\nprint(sys.argv)\n```\n",
    "Code:\n~~~python\nimport sys\nprint(sys.argv)\n~~~\n",
    "Code:\n````python\nprint('```')\n````\n",
], ids=["crlf", "indented", "bare", "tilde", "long-fence"])
def test_tolerant_of_crlf_indentation_bare_and_tilde_fences(reply: str) -> None:
    verdict = score_reply(reply)
    assert check(verdict, "extract").status == "passed"
    assert check(verdict, "parse").status == "passed", verdict.penalties


def test_a_block_in_another_language_is_not_the_solution_nor_a_competitor() -> None:
    reply = "Run it with:\n" + fenced("python3 sum.py < input.txt\n", "bash") + fenced("print(1 + 2)\n")
    assert score_reply(reply).total == 0


def test_only_a_block_in_another_language_costs_extract() -> None:
    found = penalty(score_reply("Run:\n\n" + fenced("echo 12\n", "bash")), "extract")
    assert "```bash at line 3" in found.message


def test_bare_output_block_next_to_a_python_block_is_not_a_competitor() -> None:
    reply = fenced("print(5 + 7)\n") + "Output:\n" + fenced("12\n", "")
    assert score_reply(reply).total == 0


def test_two_bare_blocks_compete() -> None:
    assert penalty(score_reply(fenced("print(1)\n", "") + fenced("print(2)\n", "")), "extract").points == 5


def test_an_unclosed_block_is_scored_with_a_note() -> None:
    verdict = score_reply("Here:\n```python\nprint(1)\n")
    assert check(verdict, "extract").status == "passed"
    assert any("never closed" in note.message for note in verdict.notes)


def _policy(include: tuple[str, ...] = ("**/*.py",), exclude: tuple[str, ...] = ()) -> Policy:
    return Policy(paths=Paths(include=include, exclude=exclude))


def test_a_change_that_touches_no_gated_file_is_not_an_extract_failure() -> None:
    # A docs or config change is not a reply without code: no points, a note that says why nothing was parsed.
    verdict = score_files([SourceFile("README.md", "# hi\n"), SourceFile("docs/x.py", "x = 1\n")],
                          _policy(exclude=("docs/",)))
    assert verdict.accepted and verdict.total == 0 and check(verdict, "extract").status == "passed"
    [note] = [n for n in verdict.notes if n.source == "extract"]
    assert "none of the 2 changed files matches" in note.message and "cases and tests run" in note.message


def test_a_reply_without_code_still_costs_extract() -> None:
    assert penalty(score_reply("I cannot do that."), "extract").points == 5


def test_only_gated_files_reach_the_later_checks() -> None:
    files = [SourceFile("src/ok.py", "x = 1\n"), SourceFile("vendor/broken.py", "def (:\n")]
    assert score_files(files, _policy(exclude=("vendor/**",))).total == 0
    assert penalty(score_files(files, _policy()), "parse").locations[0].path == "vendor/broken.py"


def test_gated_file_holding_a_chat_reply_costs_extract_with_path_and_line() -> None:
    text = "Here is the code:\n\n```python\ndef f():\n    return 1\n```\n"
    found = penalty(score_files([SourceFile("src/f.py", text)]), "extract")
    assert "chat reply" in found.message
    assert [(loc.path, loc.line) for loc in found.locations] == [("src/f.py", 1), ("src/f.py", 3),
                                                                  ("src/f.py", 6)]
    assert "src/f.py:1" in found.message


def test_markdown_inside_a_docstring_is_not_a_chat_reply() -> None:
    text = '"""Usage:\n\n```python\nf()\n```\n\nHere is the code:\n"""\n\n\ndef f() -> int:\n    return 1\n'
    assert score_files([SourceFile("src/f.py", text)]).total == 0


@pytest.mark.parametrize("python", ["3.9", "3.11"])
def test_markdown_in_a_docstring_of_code_newer_than_the_policys_python_is_only_a_parse_failure(
        python: Literal["3.9", "3.11"]) -> None:
    """The file parses as the gate's Python, not as the policy's 3.9: it does not parse (the parse check's),
    and is no chat reply (extract's), whichever version it is read as first."""
    text = ('"""Usage:\n\nHere is the code:\n"""\n\n\ndef f(x):\n    match x:\n        case 1:\n'
            '            return 1\n    return 0\n')
    scored = score_files([SourceFile("src/f.py", text)], Policy(python=python))
    assert not [p for p in scored.penalties if p.check == "extract"], scored.penalties
    assert [p.check for p in scored.penalties] == (["parse"] if python == "3.9" else [])


@pytest.mark.parametrize(("path", "pattern", "expected"), [
    ("a.py", "**/*.py", True),
    ("src/pkg/a.py", "**/*.py", True),
    ("src/pkg/a.pyc", "**/*.py", False),
    ("deep/er/a.py", "*.py", True),  # no slash: any depth, as in gitignore
    ("src/a.py", "src/*.py", True),
    ("src/pkg/a.py", "src/*.py", False),  # `*` never crosses a `/`
    ("src/pkg/a.py", "src/**", True),
    ("srcx/a.py", "src/**", False),
    ("a/x/y/b/c.py", "a/**/b/*.py", True),
    ("a/b/c.py", "a/**/b/*.py", True),
    ("setup.py", "/setup.py", True),
    ("pkg/setup.py", "/setup.py", False),
    ("build/lib/x.py", "build", True),  # a matching directory matches everything under it
    ("vendor/x.py", "vendor/", True),
    ("tests/test_a.py", "tests/test_?.py", True),
    ("tests/test_ab.py", "tests/test_[a-c].py", False),
    ("tests/test_b.py", "tests/test_[!a].py", True),
])
def test_globs_have_gitignore_semantics(path: str, pattern: str, expected: bool) -> None:
    assert matches(path, pattern) is expected


def test_exclude_wins_over_include() -> None:
    assert is_gated("src/a.py", ["**/*.py"], [])
    assert not is_gated("src/gen/a.py", ["**/*.py"], ["src/gen/**"])
    assert not is_gated("tests/test_a.py", ["**/*.py"], ["test_*.py"])


@pytest.mark.parametrize("pattern", ["", "src/[abc.py", "!*.py", "a\\"])
def test_bad_globs_are_rejected_with_a_reason(pattern: str) -> None:
    with pytest.raises(ValueError):
        compile_glob(pattern)


def test_a_bad_glob_in_a_policy_built_in_code_is_bad_input_not_a_traceback() -> None:
    from gate.errors import BadInput

    with pytest.raises(BadInput, match=r"bad glob '\[oops'"):
        score_files([SourceFile("a.py", "x = 1\n")], _policy(include=("[oops",)))


def test_a_gated_markdown_file_may_hold_fences_but_a_gated_js_file_may_not() -> None:
    from gate.policy.model import Language

    policy = Policy(paths=Paths(include=("**/*",)), languages=(Language(".js", ("true", "{path}")),))
    chat = "Here is the code:\n```js\nlet x = 1;\n```\n"
    assert score_files([SourceFile("docs/guide.md", chat)], policy).total == 0
    found = penalty(score_files([SourceFile("web/app.js", chat)], policy), "extract")
    assert found.locations[0] == Location("web/app.js", 1)


def test_a_megabyte_line_that_almost_opens_a_fence_is_read_in_linear_time(tmp_path: Path) -> None:
    # Each line nearly opens a fence and fails at its last character: the opening-fence regex used to try every
    # split of the blanks between fence, info string and line end (38 s for 3,000 characters). Run in a child
    # with a generous timeout, so that a regression fails instead of hanging the suite.
    hostile = "```" + " " * 1_000_000 + "`\n" + "~~~" + " \t" * 500_000 + "`\n"
    reply = tmp_path / "reply.md"
    reply.write_text(hostile + "\n" + fenced("print(1)\n") + hostile, encoding="utf-8")
    task = tmp_path / "task.yml"
    task.write_text("name: t\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "gate", "score", str(reply), "--task", str(task), "--json", "-"],
                          capture_output=True, text=True, timeout=20, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    verdict = json.loads(done.stdout)
    assert verdict["accepted"] is True
    assert {c["name"]: c["status"] for c in verdict["checks"]}["extract"] == "passed"
