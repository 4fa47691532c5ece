"""`gate score REPLY.md --task TASK.yml`: score one model reply, the third seed's scorer done right."""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from gate.cases.hidden import load_hidden
from gate.engine import score_running_cases
from gate.errors import EXIT_ACCEPTED, EXIT_BLOCKED, BadInput, read_input
from gate.policy.loader import load_policy
from gate.policy.model import Policy
from gate.report.terminal import render_terminal, use_color
from gate.sources.reply import subject_from_reply
from gate.sources.task import load_task
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
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Score the reply, print the report, write the JSON; the exit code says accepted (0) or blocked (1)."""
    reply = read_input(args.reply, "reply file")
    task, cases = load_task(args.task)
    policy = load_policy(args.policy)
    subject = subject_from_reply(reply, args.reply, task, cases)
    subject = dataclasses.replace(subject, hidden_cases=load_hidden(policy, None))
    verdict = score_running_cases(subject, policy, reproduce=_reproduce(args), hide=_hidden_file(policy))
    _emit(verdict, args.json)
    return EXIT_ACCEPTED if verdict.accepted else EXIT_BLOCKED


def _hidden_file(policy: Policy) -> tuple[str, ...]:
    """The hidden cases' file and its directory, which no run may read (a file outside a worktree may still
    be world-readable)."""
    named = os.environ.get(policy.hidden.env) or policy.hidden.path
    if not named:
        return ()
    path = Path(named).expanduser().resolve()
    return (str(path.parent), str(path))


def _reproduce(args: argparse.Namespace) -> str:
    argv = ["gate", "score", str(args.reply), "--task", str(args.task)]
    if args.policy:
        argv += ["--policy", str(args.policy)]
    return shlex.join(argv)


def _emit(verdict: Verdict, json_target: str | None) -> None:
    if json_target == "-":
        sys.stdout.write(verdict.to_json() + "\n")
        return
    # The file first: when it cannot be written, the one error line is all the output.
    if json_target:
        try:
            Path(json_target).write_text(verdict.to_json() + "\n", encoding="utf-8")
        except OSError as exc:
            raise BadInput(f"cannot write the JSON verdict: {exc.strerror}", file=json_target) from None
    sys.stdout.write(render_terminal(verdict, use_color(sys.stdout)))
