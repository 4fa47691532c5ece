"""The command line's contract for failures: one line, and an exit code that never reads as "blocked"."""

from __future__ import annotations

import argparse

import pytest

from gate import cli


def _crash(args: argparse.Namespace) -> int:
    empty: dict[str, int] = {}
    return empty["missing"]


def _parser_whose_command_crashes(command: str | None = None) -> argparse.ArgumentParser:
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
