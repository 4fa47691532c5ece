"""`gate ci`: gate the pull request of the running GitHub Actions job.

Reads the event, decides from the policy on the base whether the PR is gated, scores it, and publishes the
sticky comment, the commit status and the check run on the PR's head SHA. The token comes from the
environment only (`GITHUB_TOKEN`), never from the command line.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import git
import github
from github.GithubException import GithubException
from requests import RequestException

from gate.commands.check import score_range
from gate.errors import BadInput, GateError, GateFailure
from gate.github.actions import append_summary, read_event
from gate.github.client import Connection, connect
from gate.github.deliver import Delivery, deliver, deliver_not_gated
from gate.github.gating import gate_decision, with_gating_notes
from gate.github.override import OverrideCheck, answer_command, find_override, overridden
from gate.github.publish import (
    COMMENT_MODES,
    Names,
    Publisher,
    Target,
    explain_read,
    failed_report,
    report_for,
)
from gate.policy.model import DEFAULT_POLICY_PATH
from gate.sandbox import MISSING_LAYERS, layers_found_ahead
from gate.sources.base import ScoreInput
from gate.sources.pullrequest import MergeGroup, PullRequest, pull_request_from_event, subject_from_pull_request
from gate.verdict import Note, Verdict, safe_text

DEFAULT_VERDICT = "gate-verdict.json"
# What candidate code needs around it in CI: a uid that holds no token, no network, no view of the runner's
# files, no sockets or ptrace (docs/github.md).
CI_LAYERS = ("uid", "no-new-privs", "netns", "mountns", "seccomp")
CI_LAYERS_HINT = ("gate ci runs a PR's code only with the layers " + ", ".join(CI_LAYERS) + ": run it as root "
                  "(the Action does, with sudo, on a Linux runner) with the seccomp extra installed "
                  "(`pip install 'gate[seccomp]'`), or set `allow_weaker_isolation: true` in the policy to "
                  "accept less")


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


def verdict_path(args: argparse.Namespace) -> Path:
    if args.verdict:
        return Path(args.verdict)
    return Path(os.environ.get("RUNNER_TEMP") or ".") / DEFAULT_VERDICT


@dataclass(frozen=True)
class Job:
    """What a GitHub Actions step of `gate ci` or `gate publish` starts from: the event, the repository, the
    API connection and client, and the names to publish under."""

    environ: Mapping[str, str]
    event: str
    payload: dict[str, Any]
    repo: str
    connection: Connection
    client: github.Github
    names: Names

    @classmethod
    def start(cls, args: argparse.Namespace) -> Job:
        """The job of this process's Actions environment."""
        environ = os.environ
        event, payload = read_event(environ)
        repo = environ.get("GITHUB_REPOSITORY") or str((payload.get("repository") or {}).get("full_name", ""))
        if not repo:
            raise BadInput("no repository: GITHUB_REPOSITORY is unset and the event names none",
                           key="GITHUB_REPOSITORY")
        connection = Connection.from_environment(environ)
        return cls(environ, event, payload, repo, connection, connect(connection),
                   Names(status=args.status_context, check=args.check_name))


def run(args: argparse.Namespace) -> int:
    """Gate the event's PR; see the module docstring."""
    job = Job.start(args)
    environ, name, payload, repo = job.environ, job.event, job.payload, job.repo
    connection, client, names = job.connection, job.client, job.names
    workspace = args.workspace or Path(environ.get("GITHUB_WORKSPACE") or ".")
    if name == "issue_comment":  # a maintainer's `/gate override`: checked, never scored (docs/github.md, "Overrides")
        try:
            return answer_command(client, repo, payload, names, environ)
        except (GithubException, RequestException) as exc:
            raise GateFailure(connection.token.redact(explain_read(exc, repo))) from None
    try:
        group = MergeGroup.from_event(payload) if name == "merge_group" else None
        pr = pull_request_from_event("workflow_dispatch" if group else name,
                                     {"inputs": {"pr": str(group.number)}} if group else payload, client, repo)
    except (GithubException, RequestException) as exc:
        raise GateFailure(connection.token.redact(explain_read(exc, repo))) from None
    # A merge group is scored as the commit the queue would merge, on top of the base; its status and check run
    # go on that commit, where the queue's required check looks for them (docs/github.md, "Merge queues").
    scored = replace(pr, head_sha=group.head_sha, base_sha=group.base_sha) if group else pr
    delivery = Delivery(environ, client, Target(repo, pr.number, scored.head_sha), names, connection.token,
                        verdict_path(args), read_only=pr.read_only_token and group is None)
    read_failure = functools.partial(explain_read, repo=repo, number=pr.number, head_sha=pr.head_sha)
    with failures_reported(delivery, read_failure), layers_found_ahead():
        with subject_from_pull_request(client, scored, workspace=workspace, policy_path=args.policy,
                                       api_url=connection.api_url, checkout_only=group is not None) as found:
            gating = gate_decision(client, pr, found.policy.bots)
            decision = gating.decision
            if not decision.gated:
                return deliver_not_gated(delivery, found.subject, found.policy, decision.reason,
                                         neutral=decision.opted_out, notes=gating.labels.ignored)
            _need_checkout_for_cases(found)
            verdict = with_gating_notes(score_in_ci(found), gating)
            if group:
                verdict = replace(verdict, facts=(*verdict.facts, ("merge group", group.head_ref)))
            # Inside the failure path too: a report that cannot be rendered or delivered still ends in a status.
            check = OverrideCheck() if verdict.accepted else _override(client, repo, pr, found, names, workspace,
                                                                       group)
        verdict = replace(verdict, notes=(*verdict.notes, *(Note("gate", n) for n in check.ignored)))
        report = report_for(verdict, found.overrides, comment="false" if group else args.comment,
                            gated_by=decision.reason)
        if check.override is not None:
            report = overridden(report, check.override)
        return deliver(delivery, verdict, report, found.overrides)


@contextmanager
def failures_reported(delivery: Delivery, read_failure: Callable[[Exception], str]) -> Iterator[None]:
    """Whatever fails inside, once the PR is known (`gate ci`, `gate publish`), still posts a failure status
    and check and leaves the reason in the job summary: a required check must never stay pending. GitHub's
    errors become a GateFailure that `read_failure` words; a bug in the gate an internal error (exit 3)."""
    try:
        yield
    except (GithubException, RequestException) as exc:
        failure = GateFailure(delivery.token.redact(read_failure(exc)))
        _report_failure(delivery, failure)
        raise failure from None
    except GateError as error:  # a bad policy on the base, a missing isolation layer, a refused artifact, ...
        _report_failure(delivery, error)
        raise
    except Exception as exc:  # a bug in the gate: still a failure status, never a check left pending
        failure = GateFailure(delivery.token.redact(f"internal error: {type(exc).__name__}: {exc}"))
        _report_failure(delivery, failure)
        raise


def _override(client: github.Github, repo: str, pr: PullRequest, found: ScoreInput, names: Names,
              workspace: Path, group: MergeGroup | None) -> OverrideCheck:
    """A maintainer's override of the PR's head. A merge group carries it when the group's commit holds that
    head: the PR that was overridden is the PR being merged, on top of the base."""
    check = find_override(client.get_repo(repo), pr.number, pr.head_sha, pr.author, pr.labels,
                          found.policy.bots.override_labels, names.check)
    if group is None or check.override is None:
        return check
    try:
        local = git.Repo(workspace)
        holds = local.is_ancestor(local.commit(pr.head_sha), local.commit(group.head_sha))
    except (git.GitCommandError, git.InvalidGitRepositoryError, git.NoSuchPathError, git.BadName, ValueError):
        holds = False
    if holds:
        return check
    return OverrideCheck(None, (*check.ignored, f"the override of PR #{pr.number}'s head {pr.head_sha[:12]} "
                                                "does not reach this merge group: its commit does not hold that head"))


def score_in_ci(found: ScoreInput) -> Verdict:
    """`score_range` with the layers that keep the token, the network and the runner's files from the code
    (CI_LAYERS) required on top of the policy's, unless the policy says `allow_weaker_isolation`, which every
    verdict then reports. A missing layer is a GateFailure (exit 3) that says how to get it."""
    policy = found.policy
    if policy.allow_weaker_isolation:
        verdict = score_range(found)
        off = [name for name, how in verdict.isolation if name in CI_LAYERS and how.startswith("off")]
        note = Note("isolation", "weaker isolation allowed by the policy (allow_weaker_isolation: true)"
                                 + (f"; off here: {', '.join(off)}" if off else ""))
        return replace(verdict, notes=(note, *verdict.notes))
    strict = replace(policy, require=tuple(dict.fromkeys((*policy.require, *CI_LAYERS))))
    try:
        return score_range(replace(found, policy=strict))
    except GateFailure as failure:
        if not failure.message.startswith(MISSING_LAYERS):
            raise
        raise GateFailure(f"{failure.message}. {CI_LAYERS_HINT}") from None


def _need_checkout_for_cases(found: ScoreInput) -> None:
    """Cases run against a clean export of the head's tree, which only a checkout with both commits gives."""
    policy = found.policy
    cases = policy.cases or any(scope.cases for scope in policy.scopes)
    if found.subject.tree is None and (cases or found.subject.cases or found.subject.hidden_cases):
        raise BadInput("the policy has cases, but the checkout does not hold the PR's base and head commits, so "
                       "there is no head tree to run them against; check out with `ref: ${{ "
                       "github.event.pull_request.head.sha }}` and `fetch-depth: 0`", key="GITHUB_WORKSPACE")


def _report_failure(delivery: Delivery, error: GateError) -> None:
    """The summary says why, and a failure status and check stand in for the verdict: a required check must
    never stay pending. Best effort: the exit code reports the error in any case."""
    reason = safe_text(error.render())
    try:
        append_summary(delivery.environ, f"> **gate could not score PR #{delivery.target.number}**: {reason}")
    except OSError as exc:  # the status below still says why
        print(f"gate: error: cannot write the job summary: {exc.strerror}", file=sys.stderr)
    if not delivery.read_only:
        Publisher(delivery.client, delivery.target, delivery.names).publish(failed_report(reason))
