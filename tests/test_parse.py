"""The parse check (Python through ast.parse at the policy's version) and the compile check (other languages
through the policy's compiler, in the sandbox)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from gate.cases.base import MAX_DETAIL
from gate.checks import static_checks, static_names
from gate.engine import run_checks, run_sandboxed
from gate.policy.model import Language, Paths, Points, Policy
from gate.subject import SourceFile, Subject
from gate.verdict import Location
from tests.helpers_static import check, fenced, penalty, score_files, score_reply


def test_syntax_error_costs_parse_five_and_later_checks_are_skipped_not_crashed() -> None:
    reply = "Here:\n" + fenced('def is_even(n):\n    """O(1)."""\n    for i in range(n)\n        pass\n')
    verdict = score_reply(reply)
    found = penalty(verdict, "parse")
    assert found.points == 5
    assert found.locations[0].path == "solution.py"
    assert found.locations[0].line == 3
    assert found.locations[0].column is not None
    assert "solution.py:3" in found.message
    for name in ("imports", "claims"):
        assert check(verdict, name).status == "skipped"
        assert check(verdict, name).reason == "parse failed"
    assert verdict.total == 5


def test_target_python_version_comes_from_the_policy() -> None:
    code = "match 1:\n    case 1:\n        pass\n"
    assert score_reply(fenced(code), Policy(python="3.11")).total == 0
    assert "Python 3.9" in penalty(score_reply(fenced(code), Policy(python="3.9")), "parse").message


def test_a_changed_file_is_parsed_at_the_policy_version_not_only_the_gates_own() -> None:
    # The extract check parses a changed .py file at the gate's own Python (3.11 here) and keeps the tree;
    # the parse check must not take that tree for another version's.
    files = [SourceFile("a.py", "match 1:\n    case 1:\n        pass\n")]
    assert score_files(files, Policy(python="3.11")).total == 0
    assert "Python 3.9" in penalty(score_files(files, Policy(python="3.9")), "parse").message


def test_nul_bytes_and_deep_nesting_are_parse_failures_not_crashes() -> None:
    for text in ("x = 1\0\n", "x = " + "(" * 300 + ")" * 300 + "\n"):
        assert penalty(score_files([SourceFile("a.py", text)]), "parse").points == 5


def test_every_broken_file_is_listed_once_in_one_penalty() -> None:
    files = [SourceFile("a.py", "def (:\n"), SourceFile("b.py", "x = 1\n"), SourceFile("c.py", "x = = 2\n")]
    found = penalty(score_files(files, Policy(points=Points(parse=6))), "parse")
    assert found.points == 6
    assert [loc.path for loc in found.locations] == ["a.py", "c.py"]
    assert "2 files do not parse" in found.message


def test_many_broken_files_keep_a_readable_message_and_every_location() -> None:
    files = [SourceFile(f"pkg/m{i:04}.py", "def f(:\n") for i in range(1500)]
    found = penalty(score_files(files), "parse")
    assert len(found.locations) == 1500
    assert found.message.startswith("1500 files do not parse: pkg/m0000.py:1:7: invalid syntax")
    assert found.message.endswith("pkg/m0009.py:1:7: invalid syntax (Python 3.11) and 1490 more")


def _fake_compiler(script: str, extension: str = ".js", timeout: float = 10.0) -> Policy:
    """A policy whose compiler for `extension` is a small Python program given as `script`."""
    command = (sys.executable, "-c", script, "{path}")
    return Policy(paths=_all(), languages=(Language(extension, command, timeout),))


def _all() -> Paths:
    return Paths(include=("**/*",))


def test_other_languages_go_through_the_policy_compiler_with_line_and_column() -> None:
    script = ("import sys; src = open(sys.argv[1]).read()\n"
              "if 'oops' in src: print(sys.argv[1] + ':2:7: error: unexpected oops'); sys.exit(1)")
    policy = _fake_compiler(script)
    assert score_files([SourceFile("web/app.js", "let x = 1;\n")], policy).total == 0
    found = penalty(score_files([SourceFile("web/app.js", "let x = 1;\noops\n")], policy), "compile")
    assert (found.locations[0].path, found.locations[0].line, found.locations[0].column) == ("web/app.js", 2, 7)
    assert "unexpected oops" in found.message
    assert "/tmp" not in found.message  # the private copy's path is replaced by the file's own


def test_a_checkers_long_output_is_cut_in_the_message() -> None:
    # The checker runs the head's code (a perl BEGIN block): what it prints is the run's text, cut as a case's.
    script = "import sys; print(sys.argv[1] + ':1:1: ' + 'leaked ' * 500); sys.exit(1)"
    found = penalty(score_files([SourceFile("web/app.js", "1\n")], _fake_compiler(script)), "compile")
    assert found.message.startswith("does not parse: web/app.js:1:1: leaked leaked")
    assert len(found.message) < MAX_DETAIL + 100 and "more characters" in found.message


def test_a_missing_compiler_leaves_the_language_unparsed_with_a_clear_note() -> None:
    policy = Policy(paths=_all(), languages=(Language(".c", ("/nonexistent/gcc", "-fsyntax-only", "{path}")),))
    verdict = score_files([SourceFile("main.c", "int main(void) { return 0; }\n")], policy)
    assert check(verdict, "compile").status == "passed"  # nothing failed to compile: the later checks run
    assert any("/nonexistent/gcc` is not installed" in note.message for note in verdict.notes)
    both = score_files([SourceFile("main.c", "int x;\n"), SourceFile("a.py", "x = 1\n")], policy)
    assert check(both, "parse").status == "passed"


def test_a_hanging_compiler_is_killed_and_charged() -> None:
    script = ("import subprocess, sys, time\n"
              "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
              "time.sleep(600)")
    found = penalty(score_files([SourceFile("x.js", "1\n")], _fake_compiler(script, timeout=0.5)), "compile")
    assert "did not finish within 0.5 s" in found.message


def test_the_compiler_sees_no_secrets_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_secret")
    script = "import os, sys; sys.exit(1 if 'GITHUB_TOKEN' in os.environ else 0)"
    assert score_files([SourceFile("x.js", "1\n")], _fake_compiler(script)).total == 0


def test_files_with_no_parser_are_not_parsed() -> None:
    assert score_files([SourceFile("notes.txt", "def (:\n")], Policy(paths=_all())).total == 0


@pytest.mark.parametrize(("extension", "command", "bad", "line"), [
    (".c", ("gcc", "-fsyntax-only", "{path}"), "int main(void) {\n  return 0\n}\n", 2),
    (".js", ("node", "--check", "{path}"), "let x = ;\n", 1),
], ids=["gcc", "node"])
def test_real_compilers_when_installed(extension: str, command: tuple[str, ...], bad: str, line: int) -> None:
    if shutil.which(command[0]) is None:
        pytest.skip(f"{command[0]} is not installed here")
    policy = Policy(paths=_all(), languages=(Language(extension, command),))
    found = penalty(score_files([SourceFile(f"src/main{extension}", bad)], policy), "compile")
    assert found.locations[0].path == f"src/main{extension}"
    assert found.locations[0].line == line
    assert "error" in found.message.lower()


@pytest.mark.parametrize(("data", "problem"), [
    (b"# coding: klingon\nx = 1\n", ("unknown encoding: klingon", 1)),
    (b"x = 1\n\xff\n", ("not valid utf-8 text: byte 0xff at offset 6", 2)),
])
def test_python_bytes_that_python_cannot_read_are_a_parse_failure(data: bytes, problem: tuple[str, int]) -> None:
    source = SourceFile.from_bytes("bad.py", data)
    assert source.undecodable == problem
    verdict = score_files([source])
    assert penalty(verdict, "parse").locations == (Location("bad.py", problem[1]),)


# A checker that is on every machine the tests run on: Python's own compiler, for files named `.js`.
PY_COMPILE = Language(".js", ("/usr/bin/python3", "-m", "py_compile", "{path}"))


@pytest.mark.skipif(not Path("/usr/bin/python3").exists(), reason="no /usr/bin/python3")
@pytest.mark.parametrize("files", [
    {"web/app.js": "let x = ;\n", "lib.py": "import subprocess\n\n\ndef f():\n    \"\"\"O(1).\"\"\"\n"
                                            "    for i in range(9):\n        pass\n"},
    {"web/app.js": "x = 1\n", "broken.py": "def f(:\n", "ok.py": "import os\n"},
    {"notes.md": "Here:\n```python\nx = 1\n```\n", "web/app.js": "x = 1\n"},
], ids=["compile-fails", "parse-fails", "fences"])
def test_every_static_check_finds_the_same_with_and_without_a_sandbox(files: dict[str, str]) -> None:
    """`gate publish` recomputes the static checks with no sandbox and refuses an artifact whose static findings
    differ: whatever a sandbox adds (the `languages:` checkers) must be a check that is not static."""
    policy = Policy(paths=_all(), languages=(PY_COMPILE,))
    subject = Subject(kind="range", label="main..HEAD", files=tuple(SourceFile(p, t) for p, t in files.items()))
    sandboxed = run_sandboxed(subject, policy)
    alone = run_checks(subject, policy, None, checks=static_checks())
    assert sandboxed.isolation != alone.isolation  # the sandbox did run: the compile check's checker
    names = static_names()
    assert "compile" not in names and "parse" in names
    assert [p for p in sandboxed.penalties if p.check in names] == list(alone.penalties)
    assert [(c.name, c.status, c.points, c.reason) for c in sandboxed.checks if c.name in names] == \
        [(c.name, c.status, c.points, c.reason) for c in alone.checks]


def test_a_change_whose_files_do_not_parse_pays_once_whatever_the_language() -> None:
    policy = Policy(paths=_all(), languages=(PY_COMPILE,))
    js_only = score_files([SourceFile("web/app.js", "let x = ;\n")], policy)
    assert penalty(js_only, "compile").message.startswith("does not parse: web/app.js:")
    assert js_only.total == 5 and check(js_only, "parse").status == "passed"
    both = score_files([SourceFile("web/app.js", "let x = ;\n"), SourceFile("a.py", "def f(:\n")], policy)
    assert both.total == 5 and penalty(both, "parse").points == 5
    assert (check(both, "compile").status, check(both, "compile").reason) == ("skipped", "parse failed")
