"""The interface every check implements, and the context the engine hands it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from gate.policy.model import Policy
from gate.subject import SourceFile, Subject
from gate.verdict import CaseReport, CheckReport, Note, Penalty

if TYPE_CHECKING:
    from gate.sandbox.base import Sandbox


@dataclass
class CheckContext:
    """What a check may read. Checks run in registry order; `files` is the code under score, which the
    extract check fills in for a model reply. `state` carries data between related checks (the smoke runs
    that the nondeterminism check compares)."""

    subject: Subject
    policy: Policy
    sandbox: Sandbox | None
    files: list[SourceFile]
    reports: dict[str, CheckReport] = field(default_factory=dict)
    state: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class CheckResult:
    """A check's findings. `skipped` holds the reason when the check could not run; `reason` is a one-line
    summary for a check that ran (the judge's verdict). `labels` are added to the verdict for the publisher,
    and `blocked_reasons` block the verdict for a human whatever the score (the judge's needs_review)."""

    penalties: tuple[Penalty, ...] = ()
    skipped: str = ""
    notes: tuple[Note, ...] = ()
    cases: tuple[CaseReport, ...] = ()
    reason: str = ""
    labels: tuple[str, ...] = ()
    blocked_reasons: tuple[str, ...] = ()
    # Entries the check adds to the verdict's isolation: what shared a process with the code under test.
    isolation: tuple[tuple[str, str], ...] = ()


class Check(Protocol):
    """A check turns (what is scored, policy, sandbox) into findings; it never posts or prints."""

    name: str
    # Checks that must have passed for this one to run; otherwise it is reported as skipped.
    requires: tuple[str, ...]

    def enabled(self, policy: Policy) -> bool:
        """Whether the policy turns this check on at all; a check that is off is left out of the verdict, not
        reported as skipped (nobody asked for it)."""
        ...

    def run(self, ctx: CheckContext) -> CheckResult: ...
