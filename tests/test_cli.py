"""The command line's contract for failures: one line, and an exit code that never reads as "blocked"."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from gate import cli


def _crash(args: argparse.Namespace) -> int:
    empty: dict[str, int] = {}
    return empty["missing"]


def _parser_whose_command_crashes(command: str | None = None, version_only: bool = False) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gate")
    parser.set_defaults(func=_crash)
    return parser


def test_a_bug_in_a_command_exits_3_with_one_line(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cli, "build_parser", _parser_whose_command_crashes)
    monkeypatch.delenv("GATE_DEBUG", raising=False)
    assert cli.main([]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("gate: internal error: KeyError: 'missing'")
    assert "Traceback" not in err


def test_gate_debug_shows_the_traceback(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cli, "build_parser", _parser_whose_command_crashes)
    monkeypatch.setenv("GATE_DEBUG", "1")
    assert cli.main([]) == 3
    assert "Traceback" in capsys.readouterr().err


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["no-such-command"])
    assert exit_info.value.code == 2
    assert "gate: error:" in capsys.readouterr().err


def gate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gate", *args], capture_output=True, text=True, check=False)


@pytest.mark.parametrize(("argv", "said"), [
    (["chek"], "gate: error: unknown command 'chek': did you mean `check`?"),
    (["inti", "--workflow"], "gate: error: unknown command 'inti': did you mean `init`?"),
    (["policy", "chek"], "gate: error: unknown action 'chek': did you mean `check`?"),
    (["score", "r.md", "--task", "t.yml", "--color", "nevr"],
     "gate: error: argument --color: unknown choice 'nevr': did you mean `never`?"),
])
def test_a_mistyped_command_or_choice_gets_the_closest_one_and_exit_2(argv: list[str], said: str,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """(In this process: a start-up that imports every command saved for each; the next test runs the CLI.)"""
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)

    out, err = capsys.readouterr()
    assert exited.value.code == 2
    assert err.splitlines()[-1] == said, err
    assert out == ""


def test_a_word_like_no_command_lists_them_all() -> None:
    done = gate("xyzzy")
    assert done.returncode == 2
    assert "invalid choice: 'xyzzy' (choose from 'init', 'score', 'check'" in done.stderr
    assert "did you mean" not in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def _imported_after(code: str) -> list[str]:
    """The heavy libraries and gate modules a fresh interpreter holds after running `code`."""
    probe = (f"import sys\n{code}\n"
             "heavy = ('github', 'git', 'jinja2', 'jsonschema', 'yaml', 'gate.commands', 'gate.judge.client')\n"
             "print(' '.join(sorted(m for m in sys.modules if m.startswith(heavy))), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-P", "-c", probe], capture_output=True, text=True, check=True)
    return done.stderr.split()


def test_gate_version_loads_no_command() -> None:
    code = "from gate.cli import main\ntry:\n    main(['--version'])\nexcept SystemExit:\n    pass"
    assert _imported_after(code) == []


def test_scoring_a_range_loads_neither_jinja2_gitpython_nor_the_judge_client_until_they_are_used() -> None:
    # GitPython's import alone took a sixth of a PR verdict's fixed part: the range reads git itself.
    code = "from gate.cli import build_parser\nfrom gate.checks import all_checks\nbuild_parser('check')\nall_checks()"
    loaded = _imported_after(code)
    assert "gate.commands.check" in loaded and "yaml" in loaded  # (the probe sees what it looks for)
    assert [m for m in loaded if m.startswith(("jinja2", "gate.judge.client", "git"))] == []
