"""`gate replay`: score a branch's last changes as they merged, to tune the budget and the points on the
repository's own history (docs/replay.md)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path

from gate.errors import EXIT_ACCEPTED, EXIT_GATE_FAILED, BadInput, GateFailure
from gate.progress import add_quiet_option, progress_for

EXIT_INTERRUPTED = 130  # what a shell reports for a process stopped by Ctrl-C


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `gate replay` to the CLI."""
    parser = subparsers.add_parser(
        "replay", help="score a branch's last changes as they merged, to tune the budget",
        description="Score the last N changes of a branch as they merged (each first-parent commit as "
                    "parent..commit; a merge as its first parent against its second), each under the policy of "
                    "its base, and with --policy also under a candidate policy; mark the changes a later commit "
                    "reverted, and show how many changes each budget would have blocked.")
    parser.add_argument("branch", nargs="?", default="HEAD", metavar="BRANCH",
                        help="the branch (any revision git accepts; default: HEAD)")
    parser.add_argument("-n", "--last", type=int, default=20, metavar="N",
                        help="how many of the branch's newest changes (default: 20)")
    parser.add_argument("--repo", default=".", metavar="DIR", help="the repository (default: the current one)")
    parser.add_argument("--policy", metavar="FILE", type=Path,
                        help="a candidate policy file to compare with the policy of each change's base")
    parser.add_argument("--bots-only", action="store_true",
                        help="score only the changes the policy gates (its bots: decision, from the commits)")
    parser.add_argument("--json", metavar="FILE", type=Path, help="also write the rows and budgets as JSON here")
    parser.add_argument("-j", "--jobs", type=int, default=min(4, os.cpu_count() or 1), metavar="J",
                        help="changes scored at once (default: the cores, at most 4)")
    add_quiet_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Walk, decide, score in parallel, and report; Ctrl-C reports what was scored (exit 130)."""
    from gate.policy_file import load_policy
    from gate.replay import replay
    from gate.sources.gitcli import NotARepository, Repo, available
    from gate.sources.gitrange import readable

    if args.last <= 0:
        raise BadInput(f"expected a number of changes of at least 1, got {args.last}", key="--last")
    if args.jobs <= 0:
        raise BadInput(f"expected at least 1 job, got {args.jobs}", key="--jobs")
    if args.json and not args.json.parent.is_dir():  # said now, not after the changes are scored
        raise BadInput("no such folder to write it in", file=str(args.json), key="--json")
    candidate = load_policy(args.policy) if args.policy else None  # a broken one stops here: file, line, key
    if not available():
        raise GateFailure("git is not installed (or not on PATH); gate replay reads the history with it")
    try:
        repo = Repo(args.repo, search_parent_directories=True)
    except NotARepository as exc:
        raise BadInput("not a git repository", file=str(args.repo), key="--repo") from exc
    with contextlib.closing(repo):
        readable(repo)
        report = replay(repo, args.branch, args.last, candidate=candidate,
                        candidate_path=str(args.policy) if args.policy else None,
                        bots_only=args.bots_only, jobs=args.jobs,
                        progress=progress_for(sys.stderr, os.environ, args.quiet))
    sys.stdout.write(report.text)
    if args.json:
        try:
            args.json.write_text(report.json + "\n", encoding="utf-8")
        except OSError as exc:
            raise BadInput(f"cannot write: {exc.strerror}", file=str(args.json), key="--json") from exc
    if report.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_GATE_FAILED if report.failed else EXIT_ACCEPTED
