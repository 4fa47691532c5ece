"""`gate check`: score a local git range the way the PR gate scores a pull request, and write the reports."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from gate.engine import likely_hash_seeds, score, suite_framework
from gate.errors import EXIT_ACCEPTED, EXIT_BLOCKED, BadInput
from gate.policy.model import DEFAULT_POLICY_PATH
from gate.progress import add_quiet_option, progress_for
from gate.report.terminal import add_color_option, add_verbose_option, render_terminal, use_color
from gate.sandbox import layers_found_ahead
from gate.sources.gitrange import DEFAULT_BRANCHES, subject_from_range


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `gate check` to the CLI."""
    parser = subparsers.add_parser(
        "check", help="score a git range (base..head) of a local repository",
        description="Score the files a git range adds, modifies or renames, with the policy and hidden cases "
                    "of the base commit. Exit 0 accepted, 1 blocked, 2 bad input, 3 the gate failed.")
    parser.add_argument("--repo", default=".", metavar="DIR",
                        help="the repository (default: the current one)")
    branches = " or ".join(DEFAULT_BRANCHES)
    parser.add_argument("--base", metavar="REF",
                        help=f"where the range starts (default: the merge base with {branches})")
    parser.add_argument("--head", default="HEAD", metavar="REF", help="where the range ends (default: HEAD)")
    parser.add_argument("--policy", metavar="FILE",
                        help=f"the policy's path in the base commit (default: {DEFAULT_POLICY_PATH})")
    parser.add_argument("--comment", metavar="FILE", type=Path, help="write the PR comment's Markdown here")
    parser.add_argument("--summary", metavar="FILE", type=Path, help="write the job summary's Markdown here")
    parser.add_argument("--json", metavar="FILE", help="write the verdict's JSON here ('-' for stdout)")
    parser.add_argument("--annotations", action="store_true",
                        help="print GitHub workflow commands (::error file=...,line=...::) for what cost "
                             "points")
    add_color_option(parser)
    add_verbose_option(parser)
    add_quiet_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Score the range, write what was asked for, and return the exit code."""
    progress = progress_for(sys.stderr, os.environ, args.quiet)
    # The zygotes for the policy's seeds start as soon as it is read, and the suite's imports its pytest as soon as
    # the environment is known, while the gate reads the range and the code.
    with layers_found_ahead() as ahead, subject_from_range(
            args.repo, args.base, args.head, policy_path=args.policy, progress=progress,
            on_policy=lambda policy: ahead.zygotes(likely_hash_seeds(policy)),
            on_framework=lambda path: ahead.framework(suite_framework(), path)) as found:
        verdict = score(found, progress, args.started)
        overrides = found.overrides
    # The Markdown reporters and the annotations are imported only when asked for (start-up time).
    if args.comment:
        from gate.report.comment import render_comment

        _write(args.comment, render_comment(verdict, overrides), "--comment")
    if args.summary:
        from gate.report.summary import render_summary

        _write(args.summary, render_summary(verdict, overrides), "--summary")
    # With `--json -` stdout carries only the JSON; the human report goes to stderr.
    human = sys.stderr if args.json == "-" else sys.stdout
    if args.json == "-":
        print(verdict.to_json())
    elif args.json:
        _write(Path(args.json), verdict.to_json() + "\n", "--json")
    if args.annotations:
        from gate.report.annotations import workflow_commands

        for line in workflow_commands(verdict):
            print(line, file=human)
    human.write(render_terminal(verdict, use_color(human, args.color), args.verbose))
    return EXIT_ACCEPTED if verdict.accepted else EXIT_BLOCKED


def _write(path: Path, text: str, option: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"cannot write: {exc.strerror}", file=str(path), key=option) from exc
