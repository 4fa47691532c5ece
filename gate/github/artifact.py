"""A verdict artifact left by an unprivileged `gate ci` run (a fork's PR, Dependabot's), as `gate publish`
takes it: untrusted data, checked against what the PR's files give and never turning the PR green on the
strength of what only the artifact says (docs/github.md, "PRs from forks and Dependabot").
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from msgspec.structs import replace

from gate.checks import static_checks, static_names
from gate.checks.compile import language_for
from gate.engine import run_checks
from gate.errors import BadInput
from gate.scopes import by_scope
from gate.sources.base import ScoreInput
from gate.verdict import Note, Verdict, is_accepted

MAX_ARTIFACT_BYTES = 1024 * 1024
UNPRIVILEGED_CASES = ("the cases ran in the PR's own unprivileged run (a fork's or Dependabot's), whose results "
                      "the PR's code could forge; a human must review it, or gate it by hand with the gate "
                      "workflow's workflow_dispatch (README, \"PRs from forks and Dependabot\")")
UNPRIVILEGED_CHECKERS = ("the `languages:` checkers ran in the PR's own unprivileged run (a fork's or "
                         "Dependabot's), whose results the PR's code could forge; a human must review it, or gate "
                         "it by hand with the gate workflow's workflow_dispatch (README, \"PRs from forks and "
                         "Dependabot\")")


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


def check_head(claimed: Verdict, path: Path, number: int, head_sha: str, run_head: str) -> None:
    """BadInput unless the artifact and the workflow run that left it (`run_head`) are both for the PR's
    current head: a verdict belongs to the head it scored."""
    for what, sha in (("the artifact", dict(claimed.facts).get("head", "")), ("the workflow run", run_head)):
        if sha != head_sha:
            raise BadInput(f"{what} is for head {sha[:12] or 'unknown'}, but PR #{number} is now at "
                           f"{head_sha[:12]}; a newer run will publish", file=str(path), key="facts.head")


def recomputed(claimed: Verdict, path: Path, found: ScoreInput) -> Verdict:
    """The verdict to post for `claimed`: the checks that read the files only are recomputed here from `found`
    (no artifact's word taken for them); an artifact whose static findings differ was tampered with and is
    refused (BadInput)."""
    static = by_scope(found.subject, found.policy, lambda subject, policy: run_checks(
        subject, policy, None, checks=static_checks(), reproduce=found.reproduce))
    mismatch = _tampered(claimed, static)
    if mismatch:
        raise BadInput(f"the artifact does not match the PR's files: {mismatch}; refusing it", file=str(path),
                       key="penalties")
    policy = found.policy
    ran_cases = bool(policy.has_cases or found.subject.cases or found.subject.hidden_cases)
    # A checker runs the head's file (the compile check is not static): only the PR's own run ran it.
    ran_checkers = any(language_for(source.path, policy) for source in found.subject.files)
    unverified = (*((UNPRIVILEGED_CASES,) if ran_cases else ()), *((UNPRIVILEGED_CHECKERS,) if ran_checkers else ()))
    return combine(claimed, static, allowed_labels=(policy.judge.label,), unverified=unverified)


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


def combine(claimed: Verdict, static: Verdict, allowed_labels: tuple[str, ...], *,
            unverified: tuple[str, ...] = ()) -> Verdict:
    """The verdict to post: the recomputed static findings and the base's policy (budget, mode, blocked
    reasons), plus what the artifact says that can only make it stricter: its execution findings and
    blocked reasons. When the base's policy ran code (its cases, a `languages:` checker), the results came
    from the PR's own unprivileged run, which the PR controls, so the verdict needs a human (`unverified`, one
    reason each): a result from an unprivileged run never turns a PR green. Of the artifact's labels only
    those the base's policy can ask for are kept."""
    executed = tuple(p for p in claimed.penalties if p.check not in static_names())
    penalties = (*static.penalties, *executed)
    total = sum(p.points for p in penalties)
    # The artifact's own blocked reasons (a judge that needs review, mapped to `block`) can only make the
    # verdict stricter, so they are kept; the recomputed ones are there whatever the artifact says.
    blocked = tuple(dict.fromkeys((*static.blocked_reasons, *claimed.blocked_reasons, *unverified)))
    checks = (*static.checks, *(c for c in claimed.checks if c.name not in static_names()))
    note = Note("publish", "static checks recomputed by the publish workflow from the PR's files"
                + ("; what ran the PR's code (cases, `languages:` checkers) comes from the PR's own "
                   "unprivileged run and counts only against it" if unverified else ""))
    return replace(static, penalties=penalties, total=total, blocked_reasons=blocked,
                   # With `scopes:` each part has its own budget: a part over it blocks whatever the sum says.
                   accepted=is_accepted(total, static.budget, blocked, static.mode)
                   and (static.accepted or not static.scopes),
                   checks=checks, cases=claimed.cases, notes=(*static.notes, *claimed.notes, note),
                   labels=tuple(label for label in claimed.labels if label in allowed_labels),
                   isolation=claimed.isolation)
