"""The one pipeline of a pull request's run, for `gate ci` and `gate publish`.

In order: the policy is read from the trusted base; who is gated is decided from it and the API; only a gated
PR's subject is then built (the head's export, the repository's environment, the suite's trees) and scored;
the gating notes and a maintainer's override are added; the report is rendered and delivered. A PR that is not
gated (a human's, Dependabot's) costs the listing of its commits and nothing of the checkout.

What differs between the two commands is an input: how the subject is scored (`gate ci` runs the cases in the
sandbox; `gate publish` recomputes the static checks and takes an artifact's word only against the PR), the
merge group whose commit is scored, and whether a maintainer's override is looked for. Once the PR is known,
whatever fails still posts a failure status and check run, and says why in the job summary.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import github
import msgspec
from github.GithubException import GithubException
from msgspec.structs import replace
from requests import RequestException

from gate import DISTRIBUTION
from gate.engine import likely_hash_seeds, score, suite_framework
from gate.errors import BadInput, GateError, GateFailure, MissingLayers
from gate.github.actions import append_summary, read_event
from gate.github.client import Connection, connect
from gate.github.deliver import Delivery, deliver, deliver_not_gated
from gate.github.gating import gate_decision, with_gating_notes
from gate.github.override import OverrideCheck, find_override, gate_app, group_problem, overridden
from gate.github.posting import Names, Poster, Target, explain_read, failed_report, report_for
from gate.policy.model import changed
from gate.progress import QUIET, Progress
from gate.sandbox import layers_found_ahead
from gate.sources.base import ScoreInput
from gate.sources.pullrequest import (
    MergeGroup,
    PullRequest,
    pr_subject,
    protected_target,
    subject_from_pull_request,
    trusted_policy,
)
from gate.verdict import Note, Verdict, safe_text

# What candidate code needs around it in CI: a uid that holds no token, no network, no view of the runner's
# files, no sockets or ptrace (docs/github.md).
CI_LAYERS = ("uid", "no-new-privs", "netns", "mountns", "seccomp")


def ci_layers_fix(missing: Collection[str]) -> str:
    """How to get the layers of CI_LAYERS in `missing` on this machine (what each needs that it lacks here), or
    to do without them."""
    fixes = []
    if set(missing) - {"seccomp"}:
        fixes.append("run it as root (the Action does, with sudo, on a Linux runner)" if os.geteuid() != 0 else
                     "it runs as root, so the machine withholds them (the reason each gives): in a container, "
                     "run it in one allowed to make namespaces, or on the host")
    if "seccomp" in missing:
        fixes.append("make a seccomp binding importable by the gate's interpreter (pyseccomp, a dependency of "
                     f"{DISTRIBUTION} on Linux, with libseccomp2; or `apt install python3-seccomp`)")
    return (f"gate ci runs a PR's code only with the layers {', '.join(CI_LAYERS)}: {'; '.join(fixes)}; or set "
            "`allow_weaker_isolation: true` in the policy to accept less")

# How a gated PR's subject becomes a verdict: `ci_verdict`, or `gate publish`'s recomputation.
Scorer = Callable[[ScoreInput], Verdict]


class Settings(msgspec.Struct, frozen=True):
    """What the command line says about publishing (`gate ci` and `gate publish` share these options)."""

    policy_path: str | None
    comment: str  # a COMMENT_MODES value
    names: Names
    verdict_path: Path
    progress: Progress = QUIET  # the job's log hears of each long step (`--quiet`: nothing)


class Job(msgspec.Struct, frozen=True):
    """What a GitHub Actions step starts from: the event, the repository, the API connection and client."""

    environ: Mapping[str, str]
    event: str
    payload: dict[str, Any]
    repo: str
    connection: Connection
    client: github.Github

    @classmethod
    def start(cls) -> Job:
        """The job of this process's Actions environment, read once here."""
        environ = os.environ
        event, payload = read_event(environ)
        repo = environ.get("GITHUB_REPOSITORY") or str((payload.get("repository") or {}).get("full_name", ""))
        if not repo:
            raise BadInput("no repository: GITHUB_REPOSITORY is unset and the event names none",
                           key="GITHUB_REPOSITORY")
        connection = Connection.from_environment(environ)
        return cls(environ, event, payload, repo, connection, connect(connection))

    def read_failure(self, exc: Exception, number: int = 0) -> GateFailure:
        """A failure to read the PR or its base from GitHub, worded with its fix and the token hidden."""
        return GateFailure(self.connection.token.redact(explain_read(exc, self.repo, number)))


class GatedPR(msgspec.Struct, frozen=True):
    """What one run gates: the PR, and, in a merge queue, the group whose commit is scored in its stead."""

    pr: PullRequest
    group: MergeGroup | None = None
    workspace: Path | None = None  # the checkout; None: the API only (`gate publish` never checks out)
    overrides: bool = True  # whether a maintainer's override of a blocked verdict is looked for
    read_only: bool = False  # the token is known to be read-only (a fork's PR run): no write is tried

    @property
    def scored(self) -> PullRequest:
        """The PR as scored: a merge group is the commit the queue would merge, on top of the base; its status
        and check run go on that commit, where the queue's required check looks for them."""
        group = self.group
        return replace(self.pr, head_sha=group.head_sha, base_sha=group.base_sha) if group else self.pr


def gate_pull_request(job: Job, settings: Settings, gated: GatedPR, scorer: Scorer,
                      before: Callable[[], None] = lambda: None) -> int:
    """Gate `gated` and deliver its verdict; returns the exit code. `before` runs first inside the failure path
    (a check of the inputs that, failing, must still post a failure status)."""
    pr = gated.pr
    # A status or check run on a head is read for every PR with that head: until the PR is known to merge into
    # a protected branch, whatever is posted goes under names that branch's protection does not read.
    on_target = gated.group is not None or pr.base_ref == pr.default_branch
    names = settings.names if on_target else off_target(settings.names, pr.base_ref)
    delivery = Delivery(job.environ, job.client, Target(job.repo, pr.number, gated.scored.head_sha), names,
                        job.connection.token, settings.verdict_path, read_only=gated.read_only)
    read_failure = functools.partial(explain_read, repo=job.repo, number=pr.number, head_sha=pr.head_sha)
    with failures_reported(delivery, read_failure):
        before()
        if not on_target and protected_target(job.client, pr, policy_path=settings.policy_path):
            names, delivery = settings.names, replace(delivery, names=settings.names)
        note = "" if names == settings.names else (
            f"this PR merges into {pr.base_ref}, which is not a protected branch (the default branch "
            f"{pr.default_branch or '?'}, or one the default branch's policy lists under `protected_branches`): "
            f"its status and check run are `{names.status}`, which no protection of a protected branch reads")
        return _gate(job, settings, gated, scorer, delivery, note)


def posting_names(client: github.Github, names: Names, pr: PullRequest, policy_path: str | None) -> Names:
    """The names a run for `pr` posts under: `names` for a PR into a protected branch, else `off_target`'s."""
    if pr.base_ref == pr.default_branch or protected_target(client, pr, policy_path=policy_path):
        return names
    return off_target(names, pr.base_ref)


def off_target(names: Names, base_ref: str) -> Names:
    """The names a PR into `base_ref`, a branch no protection of the gate's reads, posts under."""
    return Names(status=f"{names.status} (into {base_ref})", check=f"{names.check} (into {base_ref})")


def _gate(job: Job, settings: Settings, gated: GatedPR, scorer: Scorer, delivery: Delivery, note: str) -> int:
    policy = trusted_policy(job.client, gated.scored, workspace=gated.workspace, policy_path=settings.policy_path)
    gating = gate_decision(job.client, gated.pr, policy.bots)
    decision = gating.decision
    if not decision.gated:
        return deliver_not_gated(delivery, pr_subject(gated.scored, job.connection.api_url), policy, decision.reason,
                                 neutral=decision.opted_out, notes=(*gating.labels.ignored, *((note,) if note else ())))
    with layers_found_ahead() as ahead:
        ahead.zygotes(likely_hash_seeds(policy))  # (the policy is read: its runs' zygotes start now)
        with subject_from_pull_request(
                job.client, gated.scored, workspace=gated.workspace, policy_path=settings.policy_path,
                api_url=job.connection.api_url, checkout_only=gated.group is not None,
                progress=settings.progress,
                on_framework=lambda path: ahead.framework(suite_framework(), path)) as found:
            verdict = with_gating_notes(scorer(found), gating)
            if note:
                verdict = replace(verdict, notes=(*verdict.notes, Note("gate", note)))
            if gated.group:
                verdict = replace(verdict, facts=(*verdict.facts, ("merge group", gated.group.head_ref)))
            check = _override(job, delivery.names, gated, found) if gated.overrides and not verdict.accepted \
                else OverrideCheck()
    verdict = replace(verdict, notes=(*verdict.notes, *(Note("gate", n) for n in check.ignored)))
    report = report_for(verdict, found.overrides, comment="false" if gated.group else settings.comment,
                        gated_by=decision.reason)
    if check.override is not None:
        report = overridden(report, check.override)
    return deliver(delivery, verdict, report, found.overrides)


def _override(job: Job, names: Names, gated: GatedPR, found: ScoreInput) -> OverrideCheck:
    """A maintainer's override of the PR's head (docs/github.md, "Overrides"): recorded on it, or the override
    label of this run's `labeled` event. A merge group carries it when its commit is that head merged into the
    group's base and nothing else (docs/github.md, "Merge queues")."""
    pr, group, payload = gated.pr, gated.group, job.payload
    label = str((payload.get("label") or {}).get("name", "")) if payload.get("action") == "labeled" else ""
    counted = label if group is None and label in found.policy.bots.labels.override else None
    check = find_override(job.client.get_repo(job.repo), gate_app(job.client), pr.number, pr.head_sha, pr.author,
                          counted, names.check)
    if group is None or check.override is None:
        return check
    problem = group_problem(gated.workspace, group.base_sha, group.head_sha, pr.head_sha)
    return OverrideCheck(None, (*check.ignored, problem)) if problem else check


def ci_verdict(found: ScoreInput, progress: Progress = QUIET, started: float | None = None) -> Verdict:
    """The verdict `gate ci` posts: `score` with the layers that keep the token, the network and the runner's files
    from the code (CI_LAYERS) required on top of the policy's, unless the policy says `allow_weaker_isolation`, which
    every verdict then reports. A missing layer is a GateFailure (exit 3) that says how to get it."""
    _need_checkout_for_cases(found)
    policy = found.policy
    if policy.allow_weaker_isolation:
        verdict = score(found, progress, started)
        off = [name for name, how in verdict.isolation if name in CI_LAYERS and how.startswith("off")]
        note = Note("isolation", "weaker isolation allowed by the policy (allow_weaker_isolation: true)"
                                 + (f"; off here: {', '.join(off)}" if off else ""))
        return replace(verdict, notes=(note, *verdict.notes))
    strict = changed(policy, require=tuple(dict.fromkeys((*policy.require, *CI_LAYERS))))
    try:
        return score(replace(found, policy=strict), progress, started)
    except MissingLayers as missing:
        raise MissingLayers(missing.layers, ci_layers_fix([name for name, _ in missing.layers])) from None


def _need_checkout_for_cases(found: ScoreInput) -> None:
    """Cases run against a clean export of the head's tree, which only a checkout with both commits gives."""
    cases = found.policy.has_cases or found.subject.cases or found.subject.hidden_cases
    if found.subject.tree is None and cases:
        raise BadInput("the policy has cases, but the checkout does not hold the PR's base and head commits, so "
                       "there is no head tree to run them against; check out with `ref: ${{ "
                       "github.event.pull_request.head.sha }}` and `fetch-depth: 0`", key="GITHUB_WORKSPACE")


@contextmanager
def failures_reported(delivery: Delivery, read_failure: Callable[[Exception], str]) -> Iterator[None]:
    """Whatever fails inside, once the PR is known, still posts a failure status and check and leaves the
    reason in the job summary: a required check must never stay pending. GitHub's errors become a GateFailure
    that `read_failure` words; a bug in the gate an internal error (exit 3)."""
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


def _report_failure(delivery: Delivery, error: GateError) -> None:
    """The summary says why, and a failure status and check stand in for the verdict: a required check must
    never stay pending. Best effort: the exit code reports the error in any case. The reason is redacted
    whatever its source: some quote other programs (git's own words)."""
    reason = safe_text(delivery.token.redact(error.render()))
    try:
        append_summary(delivery.environ, f"> **gate could not score PR #{delivery.target.number}**: {reason}")
    except OSError as exc:  # the status below still says why
        print(f"gate: error: cannot write the job summary: {exc.strerror}", file=sys.stderr)
    if not delivery.read_only:
        Poster(delivery.client, delivery.target, delivery.names).post(failed_report(reason))
