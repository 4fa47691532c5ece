"""Post a verdict on a pull request: one sticky comment, a commit status and a check run on the head SHA,
and the labels the verdict asks for.

Each step is independent: a step that fails is turned into one line that says what to do, and the other steps
still run. The caller writes the job summary and the artifact whatever happens here (docs/github.md).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import github
import msgspec
import requests
from github.GithubException import GithubException, RateLimitExceededException

from gate.github.client import token_login
from gate.report.comment import CUT_NOTE, render_comment
from gate.report.context import MARKER, headline
from gate.report.markdown import code, cut
from gate.report.summary import render_summary
from gate.report.templating import Overrides
from gate.verdict import Verdict, listing

if TYPE_CHECKING:
    from github.Issue import Issue
    from github.IssueComment import IssueComment

CHECK_TEXT_LIMIT = 65_535  # characters in a check run's summary, and in its text
# Annotations a check run gets: what one request carries. More would cost a request per 50 (20,000 findings
# cost 400), against a token's 1,000 requests an hour; the places beyond are listed in the summary instead.
MAX_ANNOTATIONS = 50
# Room in the check run's summary for the places that are not annotated.
UNANNOTATED_LIMIT = 8_000
_RANGES_SHOWN = 20  # line ranges listed per file
STATUS_DESCRIPTION_LIMIT = 140
# What each step needs in the workflow's `permissions:`.
PERMISSION = {"comment": "pull-requests: write", "labels": "pull-requests: write",
              "status": "statuses: write", "check run": "checks: write",
              "read": "contents: read` and `pull-requests: read"}
WHAT = {"comment": "post the PR comment", "status": "set the commit status",
        "check run": "create the check run", "labels": "add the labels", "read": "read the PR from GitHub"}
PERMISSIONS_YAML = ("permissions:\n  contents: read\n  pull-requests: write\n  statuses: write\n"
                    "  checks: write")
FULL_REPORT_NOTE = "> The full report is in the job summary."
VERDICT_KEY = "<!-- gate:verdict {} -->"

# A check run's conclusion; `neutral` (a maintainer's override or opt-out) satisfies a required check without
# claiming the gate accepted. A commit status has no neutral: it says success, with the reason in its line.
State = Literal["success", "failure", "neutral"]
# When the sticky comment is written (the `comment` input): `true` every run, `on-change` only when the verdict
# differs from the one the comment shows, `blocked-only` created only for a blocked verdict (an existing comment
# is still kept current); the status and the check run are posted every run whatever the mode.
CommentMode = Literal["true", "on-change", "blocked-only"]
COMMENT_MODES = ("true", "false", "on-change", "blocked-only")
Problem = Literal["permission", "rate limit", "gone", "too long", "server", "other"]


class Target(msgspec.Struct, frozen=True):
    """Where to post: the repository (`owner/name`), the PR number and its head SHA."""

    repo: str
    number: int
    head_sha: str


class Names(msgspec.Struct, frozen=True):
    """The commit status context and the check run name (required checks refer to them)."""

    status: str = "gate"
    check: str = "gate"


class Report(msgspec.Struct, frozen=True):
    """Everything that is posted, already rendered."""

    state: State
    description: str  # the commit status line
    title: str  # the check run's title
    summary: str  # the check run's summary (Markdown)
    comment: str | None  # the sticky comment's body; None posts no comment
    annotations: tuple[dict[str, Any], ...] = ()
    labels: tuple[str, ...] = ()
    comment_mode: CommentMode = "true"
    verdict_key: str = ""  # a digest of what the verdict says, kept hidden in the comment for `on-change`


class Outcome(msgspec.Struct):
    """What posting did: the steps done, and one line per step that failed (with the fix)."""

    done: list[str] = msgspec.field(default_factory=list)
    failures: list[tuple[str, Problem, str]] = msgspec.field(default_factory=list)  # (step, kind, message)
    left: list[str] = msgspec.field(default_factory=list)  # one line per step left undone on purpose, and why

    @property
    def read_only(self) -> bool:
        """Every write was refused for lack of permission: a read-only token (a fork's or Dependabot's PR)."""
        return not self.done and bool(self.failures) and all(k == "permission" for _, k, _ in self.failures)

    @property
    def messages(self) -> list[str]:
        lines = [message for _, _, message in self.failures]
        if any(kind == "permission" for _, kind, _ in self.failures) and not self.read_only:
            lines.append("add to the workflow job:\n" + _indent(PERMISSIONS_YAML))
        return lines


def report_for(verdict: Verdict, overrides: Overrides | None = None, *, comment: str = "true",
               gated_by: str = "") -> Report:
    """The report for a scored PR (templates overridden from the base commit): failure when blocked.
    `comment` is the mode (COMMENT_MODES); `gated_by` (what made the PR gated) ends the status line."""
    head = headline(verdict)
    state: State = "success" if verdict.accepted else "failure"
    places = check_annotations(verdict)
    rest = _unannotated(places[MAX_ANNOTATIONS:], len(places))
    return Report(
        state=state,
        description=status_line(f"{head.label}: {head.text}" + (f"; gated: {gated_by}" if gated_by else "")),
        title=f"{head.label}: {verdict.total} points, budget {verdict.budget}",
        summary=cut(render_summary(verdict, overrides), CHECK_TEXT_LIMIT - len(rest), FULL_REPORT_NOTE) + rest,
        comment=render_comment(verdict, overrides) if comment != "false" else None,
        annotations=tuple(places[:MAX_ANNOTATIONS]),
        labels=verdict.labels,
        comment_mode=_comment_mode(comment),
        verdict_key=verdict_digest(verdict),
    )


def _unannotated(rest: list[dict[str, Any]], total: int) -> str:
    """The places beyond the annotated ones, as line ranges per file (line numbers; 1 for a place without
    one), for the end of the check run's summary."""
    if not rest:
        return ""
    lines: dict[str, list[int]] = {}
    for place in rest:
        lines.setdefault(place["path"], []).append(place["start_line"])
    rows = []
    for path, numbers in lines.items():
        spans = _ranges(numbers)
        rows.append(f"- {code(path)}: {listing(spans, ', ', shown=_RANGES_SHOWN)}")
    text = (f"\n\n**{MAX_ANNOTATIONS} of the {total} places that cost points are annotated; the others:**\n\n"
            + "\n".join(rows))
    return cut(text, UNANNOTATED_LIMIT, "> ... and more: the verdict's JSON lists every place.")


def _ranges(numbers: list[int]) -> list[str]:
    """`[1, 2, 3, 7]` as `["1-3", "7"]`."""
    spans: list[list[int]] = []
    for n in sorted(set(numbers)):
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return [f"{a}-{b}" if b > a else str(a) for a, b in spans]


def _comment_mode(comment: str) -> CommentMode:
    if comment == "on-change":
        return "on-change"
    if comment == "blocked-only":
        return "blocked-only"
    return "true"


def verdict_digest(verdict: Verdict) -> str:
    """What a reader of the comment would see change: the outcome, the points, each penalty and case result,
    the blocked reasons. Not the head SHA or the timings, so a push that changes nothing leaves it."""
    said = [verdict.accepted, verdict.total, verdict.budget, list(verdict.blocked_reasons),
            [[p.check, p.points, p.message] for p in verdict.penalties],
            [[c.name, c.status] for c in verdict.cases]]
    return hashlib.sha256(json.dumps(said).encode()).hexdigest()[:16]


def not_gated_report(reason: str, *, neutral: bool = False, notes: tuple[str, ...] = ()) -> Report:
    """Success with the reason, and no comment: a required check must never stay pending. `neutral` when a
    maintainer's label opted out a PR that would be gated."""
    summary = f"Nothing to gate: {reason}." + "".join(f"\n\n> {note}" for note in notes)
    return Report(state="neutral" if neutral else "success", description=status_line(f"not gated: {reason}"),
                  title="not gated (a maintainer opted it out)" if neutral else "not gated", summary=summary,
                  comment=None)


def failed_report(reason: str) -> Report:
    """The gate could not score the PR: a failure with the reason, no comment."""
    return Report(state="failure", description=status_line(f"gate failed: {reason}"), title="the gate failed",
                  summary=reason, comment=None)


def check_annotations(verdict: Verdict) -> list[dict[str, Any]]:
    """Check run annotations on the lines that cost points: failures when enforced, warnings when advisory."""
    level = "failure" if verdict.mode == "enforce" else "warning"
    found = []
    for penalty in verdict.penalties:
        for loc in penalty.locations:
            line = loc.line or 1
            found.append({"path": loc.path, "start_line": line, "end_line": line, "annotation_level": level,
                          "title": f"gate {penalty.check}: +{penalty.points}",
                          "message": penalty.message[:CHECK_TEXT_LIMIT]})
    return found


class Poster:
    """Posts reports on one PR through one PyGithub client."""

    def __init__(self, client: github.Github, target: Target, names: Names = Names()) -> None:
        self.client = client
        self.target = target
        self.names = names
        self.repo = client.get_repo(target.repo)  # lazy: no request

    def post(self, report: Report) -> Outcome:
        """Run every step; a failed step is recorded in the outcome, never raised."""
        outcome = Outcome()
        # Each step returns None when done, or why it was left undone on purpose.
        steps: list[tuple[str, Callable[[], str | None]]] = []
        if report.comment is not None:
            steps.append(("comment", lambda: self._comment_if_current(report)))
        steps.append(("status", lambda: self.status(report)))
        steps.append(("check run", lambda: self.check_run(report)))
        if report.labels:
            steps.append(("labels", lambda: self.labels(report.labels)))
        for step, action in steps:
            try:
                left = action()
            except (GithubException, requests.RequestException) as exc:
                kind, message = explain(step, exc, self.target)
                outcome.failures.append((step, kind, message))
            else:
                (outcome.left if left else outcome.done).append(left or step)
        return outcome

    def _comment_if_current(self, report: Report) -> str | None:
        """The sticky comment, when the head this run scored is still the PR's: runs of two pushes can finish
        out of order, and the older one must not put its verdict back over the newer one's. (Its status and
        check run still go on its own head, where they are right.)"""
        current = self.repo.get_pull(self.target.number).head.sha
        if current != self.target.head_sha:
            return (f"the comment is left to the newer run: PR #{self.target.number} is now at {current[:12]}, "
                    f"and this run scored {self.target.head_sha[:12]}")
        self.comment(report.comment or "", report)
        return None

    def comment(self, body: str, report: Report | None = None) -> None:
        """Edit the gate's comment (found by its marker on any page) or create it, as the report's comment mode
        says; cut it once on a 422."""
        issue = self.repo.get_issue(self.target.number)
        mine = self._own_comment(issue)
        key = VERDICT_KEY.format(report.verdict_key) if report is not None and report.verdict_key else ""
        if report is not None and key:
            if report.comment_mode == "on-change" and mine is not None and key in (mine.body or ""):
                return  # the comment already shows this verdict
            if report.comment_mode == "blocked-only" and mine is None and report.state != "failure":
                return  # nothing to say until a run is blocked
            body = body.replace(MARKER, f"{key}\n{MARKER}", 1)  # the marker stays the last line
        try:
            self._write_comment(issue, mine, body)
        except GithubException as exc:
            if exc.status != 422:
                raise
            tail = "\n" + (key + "\n" if key else "") + MARKER + "\n"
            shorter = cut(body, len(body) // 2, CUT_NOTE.format(limit="GitHub's")) + tail
            self._write_comment(issue, mine, shorter)

    def annotate_comment(self, markdown: str) -> bool:
        """Open the gate's comment with a quoted line (an override, or why one was ignored), once; False when
        there is no comment of the gate's to open."""
        issue = self.repo.get_issue(self.target.number)
        mine = self._own_comment(issue)
        if mine is None:
            return False
        if markdown not in (mine.body or ""):
            mine.edit(f"> {markdown}\n\n{mine.body}")
        return True

    def _own_comment(self, issue: Issue) -> IssueComment | None:
        """The gate's comment: the oldest that holds the marker AND was written by this token's identity (anyone
        can paste the marker); later copies by the same identity are deleted."""
        login = token_login(self.client).casefold()
        own = [c for c in issue.get_comments() if MARKER in (c.body or "") and c.user.login.casefold() == login]
        for duplicate in own[1:]:
            duplicate.delete()
        return own[0] if own else None

    @staticmethod
    def _write_comment(issue: Issue, mine: IssueComment | None, body: str) -> None:
        if mine is None:
            issue.create_comment(body)
        else:
            mine.edit(body)

    def status(self, report: Report) -> None:
        state = "success" if report.state == "neutral" else report.state
        self.repo.get_commit(self.target.head_sha).create_status(
            state, description=report.description, context=self.names.status)

    def check_run(self, report: Report) -> None:
        """A completed check run, in one request: at most MAX_ANNOTATIONS annotations."""
        self.repo.create_check_run(name=self.names.check, head_sha=self.target.head_sha, status="completed",
                                   conclusion=report.state,
                                   output={"title": report.title, "summary": report.summary,
                                           "annotations": list(report.annotations[:MAX_ANNOTATIONS])})

    def labels(self, names: Sequence[str]) -> None:
        self.repo.get_issue(self.target.number).add_to_labels(*names)


def explain(step: str, exc: Exception, target: Target) -> tuple[Problem, str]:
    """One line for a failed step: what happened and what to do."""
    what = WHAT[step]
    if isinstance(exc, requests.RequestException):
        text = str(exc)
        if "too many 403" in text or "too many 429" in text:
            return "rate limit", (f"could not {what}: GitHub's rate limit held after every retry; rerun the "
                                  "job later (GATE_GITHUB_RETRIES and GATE_GITHUB_MAX_WAIT set the waits)")
        if "too many 5" in text:
            return "server", f"could not {what}: GitHub kept answering with a server error; rerun the job"
        return "other", f"could not {what}: GitHub could not be reached ({type(exc).__name__})"
    assert isinstance(exc, GithubException)
    message = _message(exc)
    if isinstance(exc, RateLimitExceededException) or "rate limit" in message.lower():
        return "rate limit", (f"could not {what}: GitHub's rate limit asks for a longer wait than allowed "
                              "(GATE_GITHUB_MAX_WAIT); rerun the job later")
    if exc.status == 403:
        return "permission", (f"could not {what}: the token lacks `{PERMISSION[step]}` ({message}); "
                              f"add `{PERMISSION[step]}` under the job's `permissions:`")
    if exc.status in (404, 410):
        return "gone", (f"could not {what}: PR #{target.number} or its head {target.head_sha[:12]} is gone "
                        "(branch deleted, PR closed or force-pushed while the gate ran); nothing to do")
    if exc.status == 422:
        return "too long", f"could not {what}: GitHub refused it as invalid or too long ({message})"
    if exc.status >= 500:
        return "server", f"could not {what}: GitHub answered {exc.status} ({message}); rerun the job"
    return "other", f"could not {what}: GitHub answered {exc.status} ({message})"


def explain_read(exc: Exception, repo: str, number: int = 0, head_sha: str = "") -> str:
    """One line for a failure while reading the PR, its files or its base's policy."""
    return explain("read", exc, Target(repo, number, head_sha or "?"))[1]


def _message(exc: GithubException) -> str:
    data = exc.data
    if isinstance(data, dict):
        details = "; ".join(str(e.get("message", e)) for e in data.get("errors", []) if isinstance(e, dict))
        return str(data.get("message", "")) + (f": {details}" if details else "")
    return str(data)[:200]


def status_line(text: str) -> str:
    """`text` cut to fit a commit status's description."""
    return text if len(text) <= STATUS_DESCRIPTION_LIMIT else text[:STATUS_DESCRIPTION_LIMIT - 1] + "…"


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())
