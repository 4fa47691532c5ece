"""A maintainer's override of a blocked verdict, for one head SHA (docs/github.md, "Overrides").

An override is given two ways, and each names its head:

- a `/gate override [HEAD] <reason>` comment, answered on its `issue_comment` `created` event: the body is the
  event's (what the comment said when it was posted; an edit, even within the same second, is another event
  and changes nothing), the author comes from the API, and the head is the one the comment names, else the
  PR's head when the gate answers;
- a label the policy names under `bots.labels.override`, on its `labeled` event: the head is the event's
  (the PR's head when the label was applied), the actor the issue's last `labeled` event of that label.

It counts when a human with write access who is not the PR's author gave it (gate.github.authority), after
the gate's first blocked check run on that head: only check runs of the gate's own app count (any app with
`checks: write` can post a run named `gate`, with the times it likes). The gate then posts a neutral check
run on that head whose summary carries a record of the override; that record, in a check run of the gate's own
app (which no other app can write), is what every later run on the same head reads, so an override covers
exactly the head it was given for: a push, or a force-push back to an older head, finds no record there.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec.structs import replace

from gate.errors import EXIT_ACCEPTED, EXIT_GATE_FAILED
from gate.github.actions import append_summary
from gate.github.authority import Actor, refusal
from gate.github.client import token_login
from gate.github.posting import CHECK_TEXT_LIMIT, FULL_REPORT_NOTE, Names, Poster, Report, Target, status_line
from gate.report.markdown import cut, escape
from gate.sources.gitcli import GitError, NotARepository, Repo
from gate.sources.pullrequest import PullRequest

if TYPE_CHECKING:
    import github
    from github.CheckRun import CheckRun
    from github.PullRequest import PullRequest as ApiPullRequest
    from github.Repository import Repository

COMMAND = re.compile(r"\A\s*/gate[ \t]+override\b[ \t]*(?P<rest>[^\n]*)")
# A first word of 7 to 40 hex digits names the head (a SHA's prefix, as GitHub shows it).
NAMED_HEAD = re.compile(r"(?P<head>[0-9a-f]{7,40})(?:[ \t]+|\Z)")
RECORD = re.compile(r"<!-- gate:override (?P<data>[A-Za-z0-9_=-]+) -->")


class Command(msgspec.Struct, frozen=True):
    """A `/gate override [HEAD] <reason>` comment: the head it names (a prefix, or "") and the reason."""

    head: str
    reason: str


class Override(msgspec.Struct, frozen=True):
    by: str
    at: datetime
    reason: str
    via: str  # "comment" or "label 'x'"
    head: str

    def sentence(self) -> str:
        reason = self.reason or "no reason given"
        return (f"overridden by {self.by} ({self.via}, {self.at:%Y-%m-%d %H:%M} UTC) for head {self.head[:12]}: "
                f"{reason}")

    def record(self) -> str:
        """The override as a hidden line of the check run's summary, for later runs on the same head."""
        data = {"by": self.by, "at": self.at.isoformat(), "reason": self.reason, "via": self.via,
                "head": self.head}
        return f"<!-- gate:override {base64.urlsafe_b64encode(json.dumps(data).encode()).decode()} -->"

    @classmethod
    def from_record(cls, text: str) -> Override | None:
        """The override a check run's summary records, or None."""
        found = RECORD.search(text or "")
        if found is None:
            return None
        try:
            data = json.loads(base64.urlsafe_b64decode(found["data"]))
            return cls(str(data["by"]), datetime.fromisoformat(str(data["at"])), str(data["reason"]),
                       str(data["via"]), str(data["head"]))
        except (binascii.Error, ValueError, KeyError, TypeError):
            return None


class OverrideCheck(msgspec.Struct, frozen=True):
    """The override that counts for the head, if any, and one sentence for each that was ignored."""

    override: Override | None = None
    ignored: tuple[str, ...] = ()


def parse_command(body: str) -> Command | None:
    """The head and reason of a `/gate override [HEAD] <reason>` comment, or None when it is not one."""
    found = COMMAND.match(body or "")
    if found is None:
        return None
    rest = found["rest"].strip()
    named = NAMED_HEAD.match(rest)
    return Command(named["head"], rest[named.end():].strip()) if named else Command("", rest)


def gate_app(client: github.Github) -> str:
    """The slug of the app whose check runs are the gate's: the one this token writes as (`github-actions`
    for GITHUB_TOKEN); "" for a user's token, which cannot create check runs."""
    login = token_login(client)
    return login[:-len("[bot]")] if login.endswith("[bot]") else ""


def own_runs(repo: Repository, head_sha: str, check_name: str, app: str) -> list[CheckRun]:
    """Every check run named `check_name` that `app` posted on the head. `filter=all`: GitHub's default lists
    only the newest run of a name in each check suite, which after an override is the neutral one."""
    return [run for run in repo.get_commit(head_sha).get_check_runs(check_name=check_name, filter="all")
            if app and run.app is not None and run.app.slug == app]


def blocked_since(runs: list[CheckRun]) -> datetime | None:
    """When the gate's check run first said failure, or None when it never did."""
    times = [run.completed_at or run.started_at for run in runs if run.conclusion == "failure"]
    return min((t for t in times if t is not None), default=None)


def recorded(runs: list[CheckRun], head_sha: str) -> Override | None:
    """The newest override that the gate's own neutral check runs on the head record for that head."""
    for run in sorted(runs, key=lambda r: (r.completed_at or r.started_at, r.id), reverse=True):
        found = Override.from_record(run.output.summary or "") if run.conclusion == "neutral" else None
        if found is not None and found.head == head_sha:
            return found
    return None


def find_override(repo: Repository, app: str, number: int, head_sha: str, pr_author: str, label: str | None,
                  check_name: str) -> OverrideCheck:
    """The override that covers `head_sha`: one the gate recorded on it, else the override label of this run's
    `labeled` event (`label`, when the policy names it as one)."""
    runs = own_runs(repo, head_sha, check_name, app)
    found = recorded(runs, head_sha)
    if found is not None or label is None:
        return OverrideCheck(found)
    via = f"label {label!r}"
    since = blocked_since(runs)
    events = [e for e in repo.get_issue(number).get_events()
              if e.event == "labeled" and e.label is not None and e.label.name == label]
    if since is None or not events or events[-1].created_at <= since:
        return OverrideCheck(None, (_before_blocked(via, head_sha),))
    actor = Actor.of(events[-1].actor)
    problem = refusal(repo, actor, pr_author)
    if problem:
        return OverrideCheck(None, (_refused(actor, via, problem),))
    return OverrideCheck(Override(actor.login, events[-1].created_at, "", via, head_sha))


def _refused(actor: Actor, via: str, problem: str) -> str:
    return (f"the override by {actor.login} ({via}) is ignored: {problem} (only a human with write access who is "
            "not the PR's author can override)")


def _before_blocked(via: str, head_sha: str) -> str:
    return (f"the override ({via}) is ignored: the gate has no blocked verdict on head {head_sha[:12]} that it "
            "came after")


def overridden(report: Report, override: Override) -> Report:
    """The blocked report as a maintainer overrode it: a neutral check run whose summary records the
    override, and the comment and the check run's summary that open with who, when and why."""
    said = "**gate: overridden**: " + escape(override.sentence()) + (
        ". The check run is neutral, not a pass; it covers this head only.")
    return replace(report, state="neutral", description=status_line(override.sentence()),
                   title=f"overridden by {override.by}: {report.title}",
                   summary=cut(f"{said}\n{override.record()}\n\n{report.summary}", CHECK_TEXT_LIMIT,
                               FULL_REPORT_NOTE),
                   comment=f"> {said}\n\n{report.comment}" if report.comment is not None else None)


def check_comment(client: github.Github, repo: Repository, pull: ApiPullRequest, payload: Mapping[str, Any],
                  command: Command, check_name: str) -> OverrideCheck:
    """The event's `/gate override` comment as an override of the PR's head now (`pull`, from the API)."""
    head = pull.head.sha
    if command.head and not head.startswith(command.head):
        return OverrideCheck(None, (f"the override names head {command.head}, but the PR's head is {head[:12]}: "
                                    f"to override it, comment `/gate override {head[:12]} <reason>`",))
    comment = repo.get_issue(pull.number).get_comment(int(payload["comment"]["id"]))
    actor = Actor.of(comment.user)
    since = blocked_since(own_runs(repo, head, check_name, gate_app(client)))
    if since is None or comment.created_at <= since:
        return OverrideCheck(None, (_before_blocked("comment", head),))
    problem = refusal(repo, actor, pull.user.login)
    if problem:
        return OverrideCheck(None, (_refused(actor, "comment", problem),))
    return OverrideCheck(Override(actor.login, comment.created_at, command.reason, "comment", head))


def answer_command(client: github.Github, repo_name: str, payload: dict[str, Any],
                   names_for: Callable[[PullRequest], Names], environ: Mapping[str, str]) -> int:
    """An `issue_comment` event: when it is a `/gate override` comment on a PR, check it and, when it counts,
    post the neutral check run (with the record) and status on the head and open the gate's comment with it.
    `names_for` gives the names a run for the PR posts under (a PR into a branch no protection of the gate's
    reads has names of its own). Nothing of the PR is scored or run here: this event runs with the base
    repository's token and secrets."""
    issue, comment = payload.get("issue") or {}, payload.get("comment") or {}
    command = parse_command(str(comment.get("body", "")))
    if payload.get("action") != "created" or not issue.get("pull_request") or command is None:
        print("gate: not a `/gate override` comment on a pull request; nothing to do")
        return EXIT_ACCEPTED
    repo = client.get_repo(repo_name)
    pull = repo.get_pull(int(issue["number"]))
    names = names_for(PullRequest.from_json(pull.raw_data, repo_name))
    check = check_comment(client, repo, pull, payload, command, names.check)
    poster = Poster(client, Target(repo_name, pull.number, pull.head.sha), names)
    if check.override is None:
        why = check.ignored[0]
        print(f"gate: {why}")
        append_summary(environ, f"**gate**: {why}")
        poster.annotate_comment("**gate**: " + escape(why))
        return EXIT_ACCEPTED
    blocked = Report(state="failure", description="", title="blocked",
                     summary="The blocked verdict is in the PR's comment and in the check run before this one.",
                     comment=None)
    report = overridden(blocked, check.override)
    outcome = poster.post(report)
    poster.annotate_comment(report.summary.split("\n", 1)[0])
    print(f"gate: {check.override.sentence()}")
    append_summary(environ, f"**gate**: {escape(check.override.sentence())}")
    return EXIT_GATE_FAILED if outcome.failures else EXIT_ACCEPTED


def group_problem(workspace: Path | None, base_sha: str, group_sha: str, head_sha: str) -> str:
    """Why an override of `head_sha` does not carry over to the merge group's commit, or "" when it does: the
    group must hold that head's change and nothing else on top of its base, so its tree must be the one that
    merging the head into the base gives (a group that also queued another PR holds that PR's change too)."""
    if workspace is None:
        return "the override does not reach this merge group: there is no checkout to compare its commit with"
    try:
        local = Repo(workspace)
        with contextlib.closing(local):
            merged = local.run("merge-tree", "--write-tree", base_sha, head_sha).split("\n", 1)[0]
            holds_only = merged == local.run("rev-parse", "--verify", "--end-of-options",
                                             f"{group_sha}^{{commit}}^{{tree}}")
    except (GitError, NotARepository):
        holds_only = False
    return "" if holds_only else (
        f"the override of head {head_sha[:12]} does not reach this merge group: its commit holds more than that "
        "head merged into the group's base (another PR's change), or the checkout cannot tell")
