"""The `gate` command line: one subcommand per module in `gate/commands/`."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from gate import __version__
from gate.errors import EXIT_BAD_INPUT, EXIT_GATE_FAILED, GateError

# Each module in gate/commands/ has `register(subparsers)`, which adds its parser and sets `func`.
COMMANDS = ("init", "score", "check", "replay", "ci", "publish", "eval", "diff", "merge", "policy", "doctor")


EXAMPLES = """\
examples:
  gate init                                  # a starter .github/gate.yml for this repository
  gate check                                 # this branch, as the PR gate would score it
  gate replay main -n 50                     # the last 50 changes of main, to tune the budget
  gate score reply.md --task task.yml        # one model reply
  gate eval --dataset humaneval --samples samples.jsonl
  gate doctor                                # the isolation layers on this machine

exit codes: 0 accepted, 1 blocked, 2 bad input (file, line and key), 3 the gate could not do its job.
`gate COMMAND --help` for each command's options, examples and exit codes."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"gate: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """A word that is not one of the choices (a command, `--color`'s modes) names the closest one."""
        choices = action.choices
        if choices is None or value in choices or not isinstance(value, str):
            return
        import difflib  # (only for a word that is wrong)

        [*close] = difflib.get_close_matches(value, [str(choice) for choice in choices], n=1, cutoff=0.6)
        if not close:
            super()._check_value(action, value)
        if isinstance(action, argparse._SubParsersAction):  # `gate chek`, `gate policy chek`
            self.error(f"unknown {str(action.metavar or 'command').lower()} {value!r}: did you mean `{close[0]}`?")
        raise argparse.ArgumentError(action, f"unknown choice {value!r}: did you mean `{close[0]}`?")


def build_parser(command: str | None = None, version_only: bool = False) -> argparse.ArgumentParser:
    """The parser; with a known `command`, only that command's module is imported (each module brings its own
    dependencies, PyGithub among them, and start-up should not pay for commands that do not run), and with
    `version_only` (`gate --version`) none."""
    parser = _Parser(prog="gate", description="An error-budget merge gate for pull requests written by AI bots.",
                     epilog=EXAMPLES)
    parser.add_argument("--version", action="version", version=f"gate {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    for name in () if version_only else (command,) if command in COMMANDS else COMMANDS:
        importlib.import_module(f"gate.commands.{name}").register(sub)
    if not version_only:  # (`gate --version` prints no help: it imports no command module)
        from gate.commands.help import HelpFormatter, add_epilogs

        parser.formatter_class = HelpFormatter
        add_epilogs(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 accepted, 1 blocked, 2 bad input, 3 the gate failed)."""
    started = time.perf_counter()  # (a verdict's total time counts from here: `args.started`)
    words = list(sys.argv[1:] if argv is None else argv)
    command = next((word for word in words if not word.startswith("-")), None)
    # `gate --version` prints and exits while parsing; other words without a command (`--help`) list them all.
    args = build_parser(command, version_only=words == ["--version"]).parse_args(words)
    args.started = started
    try:
        code: int = args.func(args)
    except GateError as exc:
        print(f"gate: error: {exc.render()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`gate check | head`): say so once, and point stdout at /dev/null so that the
        # interpreter's flush at exit does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print("gate: error: the output was closed before the report was written (broken pipe)", file=sys.stderr)
        return EXIT_GATE_FAILED
    except Exception as exc:  # a bug in the gate: exit 3 ("could not do its job"), never 1, which reads as blocked
        print(f"gate: internal error: {type(exc).__name__}: {exc} (a bug in the gate; set GATE_DEBUG=1 for the "
              "traceback)", file=sys.stderr)
        if os.environ.get("GATE_DEBUG"):
            import traceback

            traceback.print_exc()
        return EXIT_GATE_FAILED
    return code
