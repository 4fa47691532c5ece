"""What `gate COMMAND --help` tells a user: examples, the exit codes, and for `gate ci` what it reads."""

from __future__ import annotations

import pytest

from gate.cli import COMMANDS, main
from gate.github.client import WAIT_VARIABLES


def help_of(capsys: pytest.CaptureFixture[str], *words: str) -> str:
    with pytest.raises(SystemExit) as done:
        main([*words, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("words", [*([c] for c in COMMANDS), ["policy", "check"], ["policy", "show"],
                                   ["policy", "schema"], []])
def test_every_commands_help_gives_examples_and_its_exit_codes(capsys: pytest.CaptureFixture[str],
                                                                words: list[str]) -> None:
    text = help_of(capsys, *words)
    assert "examples" in text and "exit codes: 0 " in text
    examples = text.split("examples", 1)[1].split("exit codes", 1)[0]
    assert f"gate {words[0]}" in examples if words else "gate init" in examples


def test_gate_ci_help_lists_every_variable_it_reads(capsys: pytest.CaptureFixture[str]) -> None:
    text = help_of(capsys, "ci")
    for name in ("GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "GITHUB_REPOSITORY", "GITHUB_TOKEN", "GITHUB_API_URL",
                 "GITHUB_WORKSPACE", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "RUNNER_TEMP", "GATE_HIDDEN_CASES",
                 *WAIT_VARIABLES.values()):
        assert name in text, name
    assert "  gate ci --comment on-change" in text  # examples keep their indentation
