"""`gate publish ARTIFACT`: post the verdict of a fork's (or Dependabot's) PR from a `workflow_run` workflow.

The scoring run had a read-only token and left its verdict as an artifact. This run has a writable token and
must never run the PR's code, so it treats the artifact as untrusted data: a size cap and the verdict's JSON
schema first, then the PR is found again through the API, its head must be the one the artifact names, and
the checks that need no execution are recomputed here from the PR's files (the policy from the base). An
artifact whose static findings differ from the recomputed ones was tampered with and is refused. Case results
exist only in the artifact, so they can block a PR but never pass it: with cases, the verdict needs a human.
"""

from __future__ import annotations

import argparse
import functools
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
from github.GithubException import GithubException
from requests import RequestException

from gate.checks import static_checks, static_names
from gate.commands.ci import Job, add_publishing_options, failures_reported, verdict_path
from gate.engine import score
from gate.errors import BadInput, GateFailure
from gate.github.deliver import Delivery, deliver, deliver_not_gated
from gate.github.gating import gate_decision, with_gating_notes
from gate.github.publish import Names, Publisher, Target, explain_read, failed_report, report_for
from gate.scopes import score_by_scope
from gate.sources.pullrequest import PullRequest, subject_from_pull_request
from gate.verdict import Note, Verdict, is_accepted

MAX_ARTIFACT_BYTES = 1024 * 1024
UNPRIVILEGED_CASES = ("the cases ran in the PR's own unprivileged run (a fork's or Dependabot's), whose results "
                      "the PR's code could forge; a human must review it, or gate it by hand with the gate "
                      "workflow's workflow_dispatch (README, \"PRs from forks and Dependabot\")")


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


def load_artifact(path: Path) -> Verdict:
    """The artifact as a verdict, or BadInput: too large, not JSON, not of the verdict schema."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise BadInput(f"cannot read the artifact: {exc.strerror}", file=str(path)) from None
    if size > MAX_ARTIFACT_BYTES:
        raise BadInput(f"the artifact is {size} bytes; a verdict is at most {MAX_ARTIFACT_BYTES}",
                       file=str(path))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadInput(f"the artifact is not JSON: {exc}", file=str(path)) from None
    except RecursionError:  # "[[[[..." deeper than the parser recurses: no verdict is nested like that
        raise BadInput("the artifact is not a verdict: it nests deeper than JSON can be read", file=str(path)) \
            from None
    if not isinstance(data, dict):
        raise BadInput("the artifact is not a verdict object", file=str(path))
    try:
        return Verdict.from_dict(data)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise BadInput(f"not a verdict: {exc.message}", file=str(path), key=where) from None


def run(args: argparse.Namespace) -> int:
    """Validate, recompute, publish; see the module docstring."""
    job = Job.start(args)
    environ, payload, repo = job.environ, job.payload, job.repo
    connection, client, names = job.connection, job.client, job.names
    try:
        claimed = load_artifact(args.artifact)
    except BadInput as exc:
        _refuse(client, repo, args.pr or _event_pr(payload), payload, names, exc.render())
        raise
    facts = dict(claimed.facts)
    number = args.pr or _event_pr(payload) or int(facts.get("pull request", "0") or 0)
    if not number:
        raise BadInput("no PR number in the event or the artifact; pass --pr N", key="--pr")
    try:
        pr = PullRequest.from_json(client.get_repo(repo).get_pull(number).raw_data, repo)
    except (GithubException, RequestException) as exc:
        raise GateFailure(connection.token.redact(explain_read(exc, repo, number))) from None
    target = Target(repo, number, pr.head_sha)
    delivery = Delivery(environ, client, target, names, connection.token, verdict_path(args), read_only=False)
    # From here on the PR's head is known: whatever fails posts a failure status saying why.
    with failures_reported(delivery, functools.partial(explain_read, repo=repo, number=number)):
        expected = (payload.get("workflow_run") or {}).get("head_sha") or pr.head_sha
        for what, sha in (("the artifact", facts.get("head", "")), ("the workflow run", expected)):
            if sha != pr.head_sha:
                raise BadInput(f"{what} is for head {sha[:12] or 'unknown'}, but PR #{number} is now at "
                               f"{pr.head_sha[:12]}; a newer run will publish", file=str(args.artifact),
                               key="facts.head")
        with subject_from_pull_request(client, pr, workspace=None, policy_path=args.policy,
                                       api_url=connection.api_url) as found:
            # Whether the PR is gated is decided here again, from the base's policy and the PR as the API
            # has it: the artifact's word counts for nothing.
            gating = gate_decision(client, pr, found.policy.bots)
            decision = gating.decision
            if not decision.gated:
                return deliver_not_gated(delivery, found.subject, found.policy, decision.reason,
                                         neutral=decision.opted_out, notes=gating.labels.ignored)
            # The checks that read the files only: recomputed here, no artifact's word taken for them.
            static = score_by_scope(found.subject, found.policy, lambda subject, policy: score(
                subject, policy, None, checks=static_checks(), reproduce=found.reproduce))
        mismatch = _tampered(claimed, static)
        if mismatch:
            raise BadInput(f"the artifact does not match the PR's files: {mismatch}; refusing it",
                           file=str(args.artifact), key="penalties")
        ran_cases = bool(found.policy.cases or any(scope.cases for scope in found.policy.scopes)
                         or found.subject.cases or found.subject.hidden_cases)
        verdict = with_gating_notes(combine(claimed, static, allowed_labels=(found.policy.judge.label,),
                                            ran_cases=ran_cases), gating)
        return deliver(delivery, verdict, report_for(verdict, found.overrides, comment=args.comment,
                                                     gated_by=decision.reason), found.overrides)


def _event_pr(payload: dict[str, Any]) -> int:
    pulls = (payload.get("workflow_run") or {}).get("pull_requests") or []
    return int(pulls[0]["number"]) if pulls else 0  # empty for a fork's PR, so the artifact names it


def _tampered(claimed: Verdict, static: Verdict) -> str:
    """What differs between the artifact's static findings and the recomputed ones ("" when nothing does)."""
    def findings(verdict: Verdict) -> list[tuple[str, int, str]]:
        return sorted((p.check, p.points, p.message) for p in verdict.penalties if p.check in static_names())

    mine, theirs = findings(static), findings(claimed)
    if mine != theirs:
        return f"it claims {len(theirs)} static finding(s) worth {sum(p for _, p, _ in theirs)} points, " \
               f"the files give {len(mine)} worth {sum(p for _, p, _ in mine)}"
    if set(static.blocked_reasons) - set(claimed.blocked_reasons):
        return "it leaves out that the PR edits the policy or the hidden cases"
    return ""


def combine(claimed: Verdict, static: Verdict, allowed_labels: tuple[str, ...], *, ran_cases: bool) -> Verdict:
    """The verdict to post: the recomputed static findings and the base's policy (budget, mode, blocked
    reasons), plus what the artifact says that can only make it stricter: its execution findings and
    blocked reasons. When the base's policy has cases (`ran_cases`), their results came from the PR's own
    unprivileged run, which the PR controls, so the verdict needs a human: a result from an unprivileged run
    never turns a PR green. Of the artifact's labels only those the base's policy can ask for are kept."""
    executed = tuple(p for p in claimed.penalties if p.check not in static_names())
    penalties = (*static.penalties, *executed)
    total = sum(p.points for p in penalties)
    # The artifact's own blocked reasons (a judge that needs review, mapped to `block`) can only make the
    # verdict stricter, so they are kept; the recomputed ones are there whatever the artifact says.
    blocked = tuple(dict.fromkeys((*static.blocked_reasons, *claimed.blocked_reasons,
                                   *((UNPRIVILEGED_CASES,) if ran_cases else ()))))
    checks = (*static.checks, *(c for c in claimed.checks if c.name not in static_names()))
    note = Note("publish", "static checks recomputed by the publish workflow from the PR's files"
                + ("; case results come from the PR's own unprivileged run and count only against it"
                   if ran_cases else ""))
    return replace(static, penalties=penalties, total=total, blocked_reasons=blocked,
                   # With `scopes:` each part has its own budget: a part over it blocks whatever the sum says.
                   accepted=is_accepted(total, static.budget, blocked, static.mode)
                   and (static.accepted or not static.scopes),
                   checks=checks, cases=claimed.cases, notes=(*static.notes, *claimed.notes, note),
                   labels=tuple(label for label in claimed.labels if label in allowed_labels),
                   isolation=claimed.isolation)


def _post(client: Any, target: Target, names: Names, reason: str) -> None:
    """A failure status and check saying why nothing better was posted; best effort (the exit code says)."""
    Publisher(client, target, names).publish(replace(failed_report(reason), title="verdict refused"))


def _refuse(client: Any, repo: str, number: int, payload: dict[str, Any], names: Names, reason: str) -> None:
    head = (payload.get("workflow_run") or {}).get("head_sha", "")
    if number and head:
        _post(client, Target(repo, number, head), names, f"verdict artifact refused: {reason}")

