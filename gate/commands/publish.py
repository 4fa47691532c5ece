"""`gate publish ARTIFACT`: post the verdict of a fork's (or Dependabot's) PR from a `workflow_run` workflow.

The scoring run had a read-only token and left its verdict as an artifact. This run has a writable token and
must never run the PR's code, so it treats the artifact as untrusted data: a size cap and the verdict's JSON
schema first, then the PR is found again through the API, its head must be the one the artifact names, and
the checks that need no execution are recomputed here from the PR's files (the policy from the base). An
artifact whose static findings differ from the recomputed ones was tampered with and is refused. Case results
exist only in the artifact, so they can block a PR but never pass it: with cases, the verdict needs a human
(gate/github/artifact.py, through the PR pipeline of gate/github/pipeline.py).
"""

from __future__ import annotations

import argparse
import functools
from pathlib import Path
from typing import Any

from github.GithubException import GithubException
from msgspec.structs import replace
from requests import RequestException

from gate.commands.ci import add_publishing_options, settings
from gate.errors import BadInput
from gate.github.artifact import check_head, load_artifact, recomputed
from gate.github.pipeline import GatedPR, Job, gate_pull_request
from gate.github.posting import Names, Poster, Target, failed_report
from gate.sources.pullrequest import pull_request_of


def register(subparsers: Any) -> None:
    """Add `gate publish` to the CLI."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "publish", help="post a fork PR's verdict artifact (from a workflow_run workflow)",
        description="Validate a verdict artifact left by `gate ci` on a read-only token, recompute its "
                    "static checks from the PR's files, and post the comment, status and check run. "
                    "Exit 0 accepted, 1 blocked, 2 artifact refused, 3 the gate could not do its job.")
    parser.add_argument("artifact", type=Path, help="the verdict JSON that `gate ci` wrote")
    parser.add_argument("--pr", type=int, default=None,
                        help="the PR number (default: from the workflow_run event, else from the artifact)")
    add_publishing_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Validate, recompute, publish; see the module docstring."""
    job, chosen = Job.start(), settings(args)
    workflow_run = job.payload.get("workflow_run") or {}
    try:
        claimed = load_artifact(args.artifact)
    except BadInput as exc:
        _refuse(job, args.pr or _event_pr(job.payload), str(workflow_run.get("head_sha", "")), chosen.names,
                exc.render())
        raise
    number = args.pr or _event_pr(job.payload) or int(dict(claimed.facts).get("pull request", "0") or 0)
    if not number:
        raise BadInput("no PR number in the event or the artifact; pass --pr N", key="--pr")
    try:
        pr = pull_request_of(job.client, job.repo, number)
    except (GithubException, RequestException) as exc:
        raise job.read_failure(exc, number) from None
    # Whether the PR is gated is decided again from the base's policy and the PR as the API has it: the
    # artifact's word counts for nothing. Nothing of the PR is checked out (workspace None).
    before = functools.partial(check_head, claimed, args.artifact, number, pr.head_sha,
                               str(workflow_run.get("head_sha") or pr.head_sha))
    return gate_pull_request(job, chosen, GatedPR(pr, workspace=None, overrides=False),
                             functools.partial(recomputed, claimed, args.artifact), before=before)


def _event_pr(payload: dict[str, Any]) -> int:
    pulls = (payload.get("workflow_run") or {}).get("pull_requests") or []
    return int(pulls[0]["number"]) if pulls else 0  # empty for a fork's PR, so the artifact names it


def _refuse(job: Job, number: int, head: str, names: Names, reason: str) -> None:
    """A failure status and check saying why the artifact was refused, when the event names the PR and head;
    best effort (the exit code says)."""
    if number and head:
        report = replace(failed_report(f"verdict artifact refused: {reason}"), title="verdict refused")
        Poster(job.client, Target(job.repo, number, head), names).post(report)
