"""What the Markdown report templates see: the verdict, and its parts already escaped and linked.

Built-in and repository templates (`.github/gate/templates/*.md.j2`, read from the base commit) get the
same variables; every string in them that came from the candidate is already escaped Markdown, so a template
can place it anywhere inline without further care. `verdict` is the raw `gate.verdict.Verdict` for the rest.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import msgspec

from gate import HOME
from gate.report.markdown import blob_url, code, escape, fence
from gate.verdict import NO_CODE, CaseReport, Location, Penalty, Verdict, listing, within_budget

# The hidden marker that identifies the gate's own PR comment; the GitHub publisher looks for it to edit the
# comment in place instead of adding a new one.
MARKER = "<!-- gate:report -->"


# The kind of the verdict's cases that are the repository's own tests (gate/checks/tests.py), which the reports
# call tests, keeping "case" for what the policy, a task or the hidden cases define.
TEST_KIND = "pytest"

# What the headline says beside the status when the repository's tests did not run (Verdict.untested).
UNTESTED = "no test of the repository ran"


class Headline(msgspec.Struct, frozen=True):
    """The first line's content, shared by every shape of the report."""

    status: str  # "accepted" or "blocked"
    text: str  # "7 points against a budget of 3" or "blocked for a human: ..."
    qualifier: str = ""  # UNTESTED, said with the status wherever it is shown

    @property
    def label(self) -> str:
        """The status with its qualifier: "accepted, no test of the repository ran"."""
        return f"{self.status}, {self.qualifier}" if self.qualifier else self.status


def headline(verdict: Verdict) -> Headline:
    """Accepted or blocked, and the total against the budget, in words."""
    unit = "point" if verdict.total == 1 else "points"
    points = f"{verdict.total} {unit} against a budget of {verdict.budget}"
    if verdict.scopes:  # each scope has its own budget: say each one
        points = "; ".join(f"{s.name} {s.total} of {s.budget}" + ("" if s.accepted else " (over)")
                           for s in verdict.scopes)
    if verdict.blocked_reasons:
        points += f"; needs a human ({len(verdict.blocked_reasons)} reason"
        points += "s)" if len(verdict.blocked_reasons) > 1 else ")"
    elif verdict.mode == "advisory" and not within_budget(verdict.total, verdict.budget, ()):
        points += " (advisory: over budget, not enforced)"
    return Headline("accepted" if verdict.accepted else "blocked", points, UNTESTED if verdict.untested else "")


def location_markdown(location: Location, facts: dict[str, str]) -> str:
    """`[path:line](https://…/blob/SHA/path#Lline)` when the repository URL and head are known, else
    `path:line` as code."""
    label = location.path + (f":{location.line}" if location.line else "")
    repo_url, head = facts.get("repo", ""), facts.get("head", "")
    if repo_url.startswith(("https://", "http://")) and head:
        return f"[{escape(label)}]({blob_url(repo_url, head, location.path, location.line)})"
    return code(label)


def _locations(locations: tuple[Location, ...], facts: dict[str, str]) -> str:
    return listing([location_markdown(loc, facts) for loc in locations], ", ")


def _penalty(penalty: Penalty, facts: dict[str, str]) -> dict[str, Any]:
    """A penalty row: each place once, as a link where the message already says `path:line`; after it (`at
    ...`) the places, when the message names none (a message that lists some says how many more there are)."""
    message = escape(penalty.message)
    rest = []
    for location in penalty.locations:
        label = escape(location.path + (f":{location.line}" if location.line else ""))
        # (a pattern only where the message holds the label: 20,000 places compiled one each took 15 s)
        named = re.compile(re.escape(label) + r"(?![\d\w])") if location.line and label in message else None
        if named is not None and named.search(message):  # calc.py:1 is not the start of calc.py:17
            message = named.sub(_literal(location_markdown(location, facts)), message)
        else:
            rest.append(location)
    where = _locations(tuple(rest), facts) if len(rest) == len(penalty.locations) else ""
    return {"check": escape(penalty.check), "points": penalty.points, "message": message, "where": where}


def _literal(text: str) -> Callable[[re.Match[str]], str]:
    """A replacement for `re.sub` that inserts `text` as it is (a link holds backslashes from escaping)."""
    return lambda _match: text


def _failed(cases: list[CaseReport]) -> list[dict[str, Any]]:
    return [{"index": c.index, "name": escape(c.name), "kind": escape(c.kind), "hidden": c.hidden,
             "status": c.status, "detail": fence(c.detail) if c.detail else ""}
            for c in cases if c.status != "passed"]


def _unsaid(case: CaseReport, verdict: Verdict) -> bool:
    """Whether a failed case's detail says more than its penalty's line (a diff over several lines does; the
    one-line `expected int 5, got int 6` already in the table does not)."""
    said = [p.message for p in verdict.penalties if p.case == case.index]
    return bool(case.detail) and ("\n" in case.detail.strip() or not any(case.detail in m for m in said))


# Layer values that say a layer is not in use, and why that costs nothing.
_NOT_NEEDED = ("off: not preferred",)


def weaker(how: str) -> bool:
    """Whether an isolation layer was off, or weaker than its full form, for this verdict."""
    return (how.startswith("off") and not how.startswith(_NOT_NEEDED)) or "weaker" in how


def _next_steps(verdict: Verdict, facts: dict[str, str]) -> dict[str, str]:
    """Where a reader goes from here: the PR's checks (the check run and its annotations), the docs."""
    repo, head, number = facts.get("repo", ""), facts.get("head", ""), facts.get("pull request", "")
    checks = ""
    if repo.startswith(("https://", "http://")):
        checks = f"{repo}/pull/{number}/checks" if number else f"{repo}/commit/{head}/checks" if head else ""
    return {"checks": checks, "docs": f"{HOME}/blob/main/docs/how-it-works.md"}


def _head(facts: dict[str, str]) -> str:
    """The scored head commit, short, linked to the commit when the repository is known."""
    head, repo = facts.get("head", ""), facts.get("repo", "")
    if not head:
        return ""
    short = code(head[:12])
    return f"[{short}]({repo.rstrip('/')}/commit/{head})" if repo.startswith(("https://", "http://")) else short


def report_context(verdict: Verdict) -> dict[str, Any]:
    """The template variables for `verdict` (see the module docstring)."""
    facts = dict(verdict.facts)
    head = headline(verdict)
    return {
        "verdict": verdict,
        "marker": MARKER,
        "status": head.status,
        "status_label": escape(head.label),
        "untested": escape(verdict.untested),
        # Each suite's tests that could not catch a regression ("42 of 71 tests could not ...").
        "blind": [escape(part.sentence()) for part in verdict.blind],
        "headline": escape(head.text),
        "subject": code(verdict.subject_label),
        "facts": [(escape(k), code(v)) for k, v in verdict.facts],
        "blocked_reasons": [escape(r) for r in verdict.blocked_reasons],
        "head": _head(facts),
        "penalties": [_penalty(p, facts) for p in verdict.penalties],
        # The cases (the policy's, the task's, hidden ones) and the repository's tests (`tests:`) apart.
        "failed_cases": _failed([c for c in verdict.cases if c.kind != TEST_KIND]),
        "cases_run": sum(c.kind != TEST_KIND for c in verdict.cases),
        "failed_tests": _failed([c for c in verdict.cases if c.kind == TEST_KIND]),
        "tests_run": sum(c.kind == TEST_KIND for c in verdict.cases),
        # The failed cases and tests whose detail the penalty table does not already give in full.
        "unsaid_cases": [c.index for c in verdict.cases if c.status != "passed" and _unsaid(c, verdict)],
        "checks": [
            {"name": escape(c.name), "status": c.status, "points": c.points, "reason": escape(c.reason)}
            for c in verdict.checks
        ],
        "checks_have_reasons": any(c.reason for c in verdict.checks),
        "notes": [
            {"source": escape(n.source), "message": escape(n.message),
             "where": _locations(n.locations, facts)}
            for n in verdict.notes
        ],
        # No code of the change ran (no case, no test): no layer was needed, and none is listed as off.
        "no_code_ran": dict(verdict.isolation).get(NO_CODE) is not None,
        "isolation": [(escape(k), escape(v)) for k, v in verdict.isolation if k != NO_CODE],
        # The comment shows only these; the job summary every layer.
        "isolation_weaker": [(escape(k), escape(v)) for k, v in verdict.isolation if weaker(v) and k != NO_CODE],
        "isolation_on": [escape(k) for k, v in verdict.isolation if not weaker(v) and k != NO_CODE],
        "next": _next_steps(verdict, facts),
        # The override that names the scored head, so a push in the seconds before the gate answers is not
        # taken for it (docs/github.md, "Overrides").
        "override_command": code(f"/gate override {facts['head'][:12]} <reason>" if facts.get("head")
                                 else "/gate override <reason>"),
        "policy_source": code(verdict.policy_source),
        "reproduce": code(verdict.reproduce) if verdict.reproduce else "",
        "scopes": [{"name": escape(s.name), "files": s.files, "total": s.total, "budget": s.budget,
                    "accepted": s.accepted} for s in verdict.scopes],
        "gate_version": escape(verdict.gate_version),
    }
