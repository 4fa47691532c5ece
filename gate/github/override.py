"""A maintainer's override of a blocked verdict, for one head SHA (docs/github.md, "Overrides").

A `/gate override <reason>` comment, or a label the policy names under `bots.labels.override`, overrides the
gate's blocked verdict on the PR's current head when:

- a human with write access who is not the PR's author applied it (gate.github.authority, through the API);
- it came after the gate's first blocked check run on this head (GitHub's own times): an override answers a
  verdict someone saw, and one made before a push cannot reach the head that push brought, so a new push
  voids it;
- a comment was not edited since it was posted (anyone with write access, a bot's app too, can edit a
  comment while its author stays the same).

The check run then concludes `neutral`, never `success`, and the comment says who, when and why.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from gate.errors import EXIT_ACCEPTED, EXIT_GATE_FAILED
from gate.github.actions import append_summary
from gate.github.authority import Actor, refusal
from gate.github.publish import CHECK_TEXT_LIMIT, FULL_REPORT_NOTE, Names, Publisher, Report, Target, status_line
from gate.report.markdown import cut, escape

COMMAND = re.compile(r"\A\s*/gate[ \t]+override\b[ \t]*(?P<reason>[^\n]*)")


@dataclass(frozen=True)
class Override:
    by: str
    at: datetime
    reason: str
    via: str  # "comment" or "label 'x'"
    head: str

    def sentence(self) -> str:
        reason = self.reason or "no reason given"
        return (f"overridden by {self.by} ({self.via}, {self.at:%Y-%m-%d %H:%M} UTC) for head {self.head[:12]}: "
                f"{reason}")


@dataclass(frozen=True)
class OverrideCheck:
    """The override that counts for the head, if any, and one sentence for each that was ignored."""

    override: Override | None = None
    ignored: tuple[str, ...] = ()


def command_reason(body: str) -> str | None:
    """The reason of a `/gate override <reason>` comment, or None when the comment is not one."""
    found = COMMAND.match(body or "")
    return found["reason"].strip() if found else None


def blocked_since(repo: Any, head_sha: str, check_name: str) -> datetime | None:
    """When the gate's check run first said failure on this head, or None when it never did."""
    times = [run.completed_at or run.started_at
             for run in repo.get_commit(head_sha).get_check_runs(check_name=check_name)
             if run.conclusion == "failure"]
    return min((t for t in times if t is not None), default=None)


def find_override(repo: Any, number: int, head_sha: str, pr_author: str, labels: tuple[str, ...],
                  override_labels: tuple[str, ...], check_name: str) -> OverrideCheck:
    """Whether a maintainer overrode the blocked verdict on `head_sha`; the newest valid override counts."""
    since = blocked_since(repo, head_sha, check_name)
    if since is None:
        return OverrideCheck()
    candidates: list[tuple[datetime, Actor, str, str, str]] = []  # (when, who, via, reason, problem)
    issue = repo.get_issue(number)
    for comment in issue.get_comments(since=since):
        reason = command_reason(comment.body)
        if reason is None or comment.created_at <= since:
            continue
        edited = comment.updated_at is not None and comment.updated_at > comment.created_at
        candidates.append((comment.created_at, Actor.of(comment.user), "comment", reason,
                           "the comment was edited after it was posted; post a new one" if edited else ""))
    wanted = [label for label in labels if label in override_labels]
    if wanted:
        for event in issue.get_events():
            if (event.event == "labeled" and event.label is not None and event.label.name in wanted
                    and event.created_at > since):
                candidates.append((event.created_at, Actor.of(event.actor), f"label {event.label.name!r}", "", ""))
    found: Override | None = None
    ignored: list[str] = []
    for when, actor, via, reason, problem in sorted(candidates, key=lambda c: c[0], reverse=True):
        problem = problem or refusal(repo, actor, pr_author)
        if problem:
            ignored.append(f"the override by {actor.login} ({via}) is ignored: {problem} (only a human with "
                           "write access who is not the PR's author can override)")
        elif found is None:
            found = Override(actor.login, when, reason, via, head_sha)
    return OverrideCheck(found, tuple(ignored))


def overridden(report: Report, override: Override) -> Report:
    """The blocked report as a maintainer overrode it: a neutral check run, and the comment and the check run's
    summary that open with who, when and why."""
    said = "**gate: overridden**: " + escape(override.sentence()) + (
        ". The check run is neutral, not a pass; a new push voids the override.")
    return replace(report, state="neutral", description=status_line(override.sentence()),
                   title=f"overridden by {override.by}: {report.title}",
                   summary=cut(f"{said}\n\n{report.summary}", CHECK_TEXT_LIMIT, FULL_REPORT_NOTE),
                   comment=f"> {said}\n\n{report.comment}" if report.comment is not None else None)


def answer_command(client: Any, repo_name: str, payload: dict[str, Any], names: Names,
                   environ: Mapping[str, str]) -> int:
    """An `issue_comment` event: when it is a `/gate override` comment on a PR, check it and, when it counts,
    post the neutral check run and status on the PR's head and open the gate's comment with it. Nothing of the
    PR is scored or run here: this event runs with the base repository's token and secrets."""
    issue, comment = payload.get("issue") or {}, payload.get("comment") or {}
    if (payload.get("action") != "created" or not issue.get("pull_request")
            or command_reason(str(comment.get("body", ""))) is None):
        print("gate: not a `/gate override` comment on a pull request; nothing to do")
        return EXIT_ACCEPTED
    repo = client.get_repo(repo_name)
    pull = repo.get_pull(int(issue["number"]))
    head, author = pull.head.sha, pull.user.login
    check = find_override(repo, pull.number, head, author, (), (), names.check)
    publisher = Publisher(client, Target(repo_name, pull.number, head), names)
    if check.override is None:
        why = check.ignored[0] if check.ignored else (
            f"the override is ignored: the gate has no blocked verdict on head {head[:12]} that it came after")
        print(f"gate: {why}")
        append_summary(environ, f"**gate**: {why}")
        publisher.annotate_comment("**gate**: " + escape(why))
        return EXIT_ACCEPTED
    blocked = Report(state="failure", description="", title="blocked",
                     summary="The blocked verdict is in the PR's comment and in the check run before this one.",
                     comment=None)
    report = overridden(blocked, check.override)
    outcome = publisher.publish(report)
    publisher.annotate_comment(report.summary.split("\n\n", 1)[0])
    print(f"gate: {check.override.sentence()}")
    append_summary(environ, f"**gate**: {escape(check.override.sentence())}")
    return EXIT_GATE_FAILED if outcome.failures else EXIT_ACCEPTED
