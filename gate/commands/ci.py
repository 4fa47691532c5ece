"""`gate ci`: gate the pull request of the running GitHub Actions job.

Reads the event, decides from the policy on the base whether the PR is gated, scores it, and publishes the
sticky comment, the commit status and the check run on the PR's head SHA (gate/github/pipeline.py). The token
comes from the environment only (`GITHUB_TOKEN`), never from the command line.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from github.GithubException import GithubException
from requests import RequestException

from gate.github.override import answer_command
from gate.github.pipeline import GatedPR, Job, Settings, ci_verdict, gate_pull_request, posting_names
from gate.github.posting import COMMENT_MODES, Names
from gate.policy.model import DEFAULT_POLICY_PATH
from gate.progress import add_quiet_option, progress_for
from gate.sources.pullrequest import MergeGroup, PullRequest, pull_request_from_event, pull_request_of

DEFAULT_VERDICT = "gate-verdict.json"


def register(subparsers: Any) -> None:
    """Add `gate ci` to the CLI."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "ci", help="gate the pull request of a GitHub Actions run",
        description="Inside GitHub Actions: score the event's pull request and post the comment, status and "
                    "check run. Exit 0 accepted, 1 blocked, 2 bad input, 3 the gate could not do its job.")
    add_publishing_options(parser)
    parser.add_argument("--workspace", type=Path, default=None,
                        help="the checkout (default: $GITHUB_WORKSPACE); used when it has both commits")
    parser.set_defaults(func=run)


def add_publishing_options(parser: argparse.ArgumentParser) -> None:
    """Options `gate ci` and `gate publish` share."""
    parser.add_argument("--policy", default=None, metavar="PATH",
                        help=f"the policy's path in the base commit (default: {DEFAULT_POLICY_PATH}, or the "
                             "default preset when it is absent)")
    parser.add_argument("--comment", choices=COMMENT_MODES, default="true",
                        help="the sticky PR comment: true (every run), false (never), on-change (edited only when "
                             "the verdict changes), blocked-only (created only when blocked); the status and check "
                             "run are posted every run (default: true)")
    parser.add_argument("--check-name", default="gate", help="the check run's name (default: gate)")
    parser.add_argument("--status-context", default="gate", help="the commit status context (default: gate)")
    parser.add_argument("--verdict", type=Path, default=None, metavar="FILE",
                        help=f"where to write the verdict JSON for upload-artifact (default: "
                             f"{DEFAULT_VERDICT} in $RUNNER_TEMP, else here)")
    add_quiet_option(parser)


def settings(args: argparse.Namespace) -> Settings:
    """The publishing options as the pipeline takes them."""
    verdict = Path(args.verdict) if args.verdict else Path(os.environ.get("RUNNER_TEMP") or ".") / DEFAULT_VERDICT
    return Settings(policy_path=args.policy, comment=args.comment,
                    names=Names(status=args.status_context, check=args.check_name), verdict_path=verdict,
                    progress=progress_for(sys.stderr, os.environ, args.quiet))


def run(args: argparse.Namespace) -> int:
    """Gate the event's PR; see the module docstring."""
    job, chosen = Job.start(), settings(args)
    workspace = args.workspace or Path(job.environ.get("GITHUB_WORKSPACE") or ".")
    try:
        # A maintainer's `/gate override`: checked, never scored (docs/github.md, "Overrides").
        if job.event == "issue_comment":
            return answer_command(job.client, job.repo, job.payload,
                                  lambda pr: posting_names(job.client, chosen.names, pr, chosen.policy_path),
                                  job.environ)
        group = MergeGroup.from_event(job.payload) if job.event == "merge_group" else None
        pr = _pull_request(job, group)
    except (GithubException, RequestException) as exc:
        raise job.read_failure(exc) from None
    # A fork's PR, and Dependabot's, run with a read-only token; a merge group's run is the base repository's.
    read_only = pr.read_only_token and group is None
    return gate_pull_request(job, chosen, GatedPR(pr, group, workspace, read_only=read_only),
                             lambda found: ci_verdict(found, chosen.progress, args.started))


def _pull_request(job: Job, group: MergeGroup | None) -> PullRequest:
    """The event's PR: a merge group's is the PR its branch is named after, as the API has it."""
    if group is not None:
        return pull_request_of(job.client, job.repo, group.number)
    return pull_request_from_event(job.event, job.payload, job.client, job.repo)
