"""The model judge: an optional second opinion on the code, from a chat model, against the policy's rubric.

A judge advises, tests decide (docs/judge.md). It runs last and only adds: a note with its verdict,
points when the policy sets `judge.add_points` and the verdict is `fail`, and for `needs_review` a label or a
blocked reason as `judge.needs_review` says. It cannot remove a penalty or change a case, so a judge that says
`pass` (or is talked into it by the code it reads) never turns a failed case into a pass. It is shown the code
under score, the task and the rubric; never the cases, hidden or not, nor their expected values.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from gate.checks.base import Check, CheckContext, CheckResult, Product
from gate.judge.prompt import CodeFile, JudgeRequest, Listing
from gate.policy.keys import Charge
from gate.policy.model import Judge, Policy
from gate.subject import Subject
from gate.verdict import Location, Note, Penalty, listing

if TYPE_CHECKING:  # the HTTP client is imported only when a policy enables the judge
    from gate.judge.client import JudgeClient, JudgeOutcome

MAX_REASON_CHARS = 300
MAX_LOCATIONS = 50  # GitHub takes 50 annotations a request


class JudgeService(Protocol):
    """Anything that answers a judge request; `gate.judge.client.JudgeClient` over HTTP."""

    def judge(self, request: JudgeRequest) -> JudgeOutcome: ...


# The points this check charges: keys of the policy's `points:` (gate/policy/keys.py's `Charge`).
JUDGE = Charge(
    "judge", 0,
    "the model judge found a problem (once; only with judge.add_points)")


class JudgeCheck(Check):
    """Asks the judge that `connect` builds from the policy, and turns its outcome into advice."""

    name: str = "judge"
    # A model reading code that did not parse, or a conversation instead of code, has nothing useful to add.
    needs: tuple[Product, ...] = ("code",)
    produces: tuple[Product, ...] = ()
    static = False
    charges: tuple[Charge, ...] = (JUDGE,)

    def enabled(self, policy: Policy) -> bool:
        """Only when the policy asks for a judge."""
        return policy.judge.enabled

    def __init__(self, connect: Callable[[Judge], JudgeService]) -> None:
        self.connect = connect

    def run(self, ctx: CheckContext) -> CheckResult:
        """Ask the judge (when the policy enables it) and report its verdict as advice."""
        settings = ctx.policy.judge
        if not ctx.code:
            return CheckResult(skipped="no code to judge")
        from gate.judge.client import JudgeOutcome

        files = tuple(CodeFile(f.path, f.text) for f in ctx.code)
        rubric = _rubric(settings, ctx.subject)
        if rubric is None:
            outcome = JudgeOutcome.needs_review(f"the judge was not asked: its rubric file "
                                                f"{settings.rubric_file} was not read from the base commit")
        else:
            task = ctx.subject.task
            request = JudgeRequest(task_name=task.name if task else "",
                                   task_prompt=task.prompt if task else "", rubric=rubric, files=files)
            outcome = self.connect(settings).judge(request)
        return advice(outcome, Listing(files), ctx.policy)


def _rubric(settings: Judge, subject: Subject) -> str | None:
    """The rubric text: the policy's `rubric`, then the rubric file's text that the source read from the base
    commit; None when a rubric file is named but the source did not read it."""
    if settings.rubric_file is None:
        return settings.rubric
    if subject.judge_rubric is None:
        return None
    return "\n\n".join(part for part in (settings.rubric, subject.judge_rubric) if part.strip())


def advice(outcome: JudgeOutcome, listing: Listing, policy: Policy) -> CheckResult:
    """The check's result for the judge's `outcome`: always a note; points, a label or a blocked reason
    only as the policy says."""
    settings = policy.judge
    reasons = _shown_reasons(outcome.reasons)
    locations = _locations(outcome.lines, listing)
    note = Note("judge", f"{outcome.verdict}: {reasons}", locations)
    if outcome.verdict == "pass":
        return CheckResult(notes=(note,), reason="the model judge says pass (advice)")
    if outcome.verdict == "fail":
        if not settings.add_points:
            return CheckResult(notes=(note,), reason="the model judge says fail (advice; no points)")
        penalty = Penalty(JUDGE.name, policy.points[JUDGE], f"the model judge says fail: {reasons}", locations)
        return CheckResult(penalties=(penalty,), notes=(note,), reason="the model judge says fail")
    if settings.needs_review == "label":
        return CheckResult(notes=(note,), labels=(settings.label,),
                           reason=f"the model judge needs a human review: labelled {settings.label!r}")
    if settings.needs_review == "block":
        blocked = f"the model judge needs a human review: {reasons}"
        return CheckResult(notes=(note,), blocked_reasons=(blocked,),
                           reason="the model judge needs a human review: blocked")
    return CheckResult(notes=(note,), reason="the model judge needs a human review (advice)")


def _shown_reasons(reasons: tuple[str, ...]) -> str:
    if not reasons:
        return "no reason given"
    return listing([r if len(r) <= MAX_REASON_CHARS else r[:MAX_REASON_CHARS] + "..." for r in reasons], "; ")


def _locations(lines: tuple[int, ...], listing: Listing) -> tuple[Location, ...]:
    # Lines the listing does not have (the model miscounted) are dropped rather than shown at a wrong place.
    found = (listing.locate(number) for number in sorted(set(lines)))
    return tuple(location for location in found if location is not None)[:MAX_LOCATIONS]


def connect_from_environment(settings: Judge) -> JudgeClient:
    """The production edge: an HTTP client whose key comes from this process's environment."""
    from gate.judge.client import JudgeClient

    return JudgeClient.from_environment(settings, os.environ)


CHECK = JudgeCheck(connect_from_environment)
