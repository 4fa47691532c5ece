"""`gate score REPLY.md --task TASK.yml`: score one model reply against its task."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from gate.engine import run_sandboxed
from gate.errors import EXIT_ACCEPTED, EXIT_BLOCKED, BadInput
from gate.report.terminal import add_color_option, add_verbose_option, render_terminal, use_color
from gate.sources.reply import reply_input
from gate.verdict import Verdict


def register(subparsers: Any) -> None:
    """Add `gate score` to the CLI."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "score", help="score one model reply against a task",
        description="Score a model reply (Markdown with one fenced Python block) against a task file. "
                    "Exit 0 accepted, 1 blocked, 2 bad input, 3 the gate failed.")
    parser.add_argument("reply", type=Path, metavar="REPLY.md", help="the model's reply")
    parser.add_argument("--task", type=Path, required=True, metavar="TASK.yml", help="the task file")
    parser.add_argument("--policy", type=Path, metavar="FILE",
                        help="a policy file (default: the default preset)")
    parser.add_argument("--json", metavar="FILE",
                        help="also write the verdict as JSON to FILE; '-' writes it to stdout instead of the table")
    add_color_option(parser)
    add_verbose_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Score the reply, print the report, write the JSON; the exit code says accepted (0) or blocked (1)."""
    found = reply_input(args.reply, args.task, args.policy)
    verdict = run_sandboxed(found.subject, found.policy, reproduce=found.reproduce, hide=found.private)
    _emit(verdict, args.json, args.color, args.verbose)
    return EXIT_ACCEPTED if verdict.accepted else EXIT_BLOCKED


def _emit(verdict: Verdict, json_target: str | None, color: str, verbose: bool) -> None:
    if json_target == "-":
        sys.stdout.write(verdict.to_json() + "\n")
        return
    # The file first: when it cannot be written, the one error line is all the output.
    if json_target:
        try:
            Path(json_target).write_text(verdict.to_json() + "\n", encoding="utf-8")
        except OSError as exc:
            raise BadInput(f"cannot write the JSON verdict: {exc.strerror}", file=json_target) from None
    sys.stdout.write(render_terminal(verdict, use_color(sys.stdout, color), verbose))
