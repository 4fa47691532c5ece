"""The interface every check implements, the context the engine hands it, and the analysis the checks share.

A check declares what it `needs` from the analysis and what it `produces` into it: the extract check produces
the files under score, the parse check the Python trees, the smoke check the runs of every case. The engine
hands each check the analysis so far, adds what the check produced (only what it declared), and skips a check
whose needs no earlier check produced, saying why.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Literal, Protocol

from gate.cases.base import CaseOutcome
from gate.checks.trees import TreeCache
from gate.policy.keys import Charge
from gate.policy.model import Policy
from gate.subject import SourceFile, Subject
from gate.verdict import CaseReport, CheckReport, Note, Penalty

if TYPE_CHECKING:
    from gate.sandbox.base import Sandbox

# What a check can produce for the later checks: the names of `Analysis`'s fields.
Product = Literal["files", "conversations", "trees", "runs"]


@dataclass(frozen=True)
class CaseRuns:
    """One case and the outcome of each of its runs (one per hash seed)."""

    label: str
    outcomes: tuple[CaseOutcome, ...]


@dataclass(frozen=True)
class Analysis:
    """What the checks found out about the code, each field from the one check that produces it (None: not
    produced). A check's result carries what it produced in the same shape."""

    files: tuple[SourceFile, ...] | None = None  # the code under score (extract: the gated files, a reply's block)
    # The paths of `files` that still hold a chat reply (extract, which charged them; parse leaves them be).
    conversations: tuple[str, ...] | None = None
    trees: Mapping[str, ast.Module] | None = None  # the Python trees of `files` that parse, by path (parse)
    runs: tuple[CaseRuns, ...] | None = None  # every case's runs, in the order they ran (smoke)

    def produced(self) -> tuple[str, ...]:
        """The names of the fields this analysis holds."""
        return tuple(f.name for f in fields(self) if getattr(self, f.name) is not None)

    def merged(self, made: Analysis) -> Analysis:
        """This analysis with what a check produced in place of what was there."""
        return replace(self, **{name: getattr(made, name) for name in made.produced()})


@dataclass
class CheckContext:
    """What a check may read. Checks run in registry order; `analysis` holds what the earlier ones produced,
    `reports` how they went, and `trees` the syntax trees this scoring already built."""

    subject: Subject
    policy: Policy
    sandbox: Sandbox | None
    analysis: Analysis
    reports: dict[str, CheckReport] = field(default_factory=dict)
    trees: TreeCache = field(default_factory=TreeCache)

    @property
    def files(self) -> tuple[SourceFile, ...]:
        """The code under score."""
        return self.analysis.files or ()


@dataclass(frozen=True)
class CheckResult:
    """A check's findings. `skipped` holds the reason when the check could not run; `reason` is a one-line
    summary for a check that ran (the judge's verdict). `labels` are added to the verdict for the publisher,
    and `blocked_reasons` block the verdict for a human whatever the score (the judge's needs_review).
    `made` is what the check produced for the later checks."""

    penalties: tuple[Penalty, ...] = ()
    skipped: str = ""
    notes: tuple[Note, ...] = ()
    cases: tuple[CaseReport, ...] = ()
    reason: str = ""
    labels: tuple[str, ...] = ()
    blocked_reasons: tuple[str, ...] = ()
    # Entries the check adds to the verdict's isolation: what shared a process with the code under test.
    isolation: tuple[tuple[str, str], ...] = ()
    made: Analysis = Analysis()


def stopped(ctx: CheckContext) -> str:
    """Why the code under score cannot be run ("extract failed", "parse failed"), or "". The behavioural checks
    do not run then; what they would have run is not counted as passed (docs/how-it-works.md, "Penalty schedule")."""
    for name in ("extract", "parse"):
        report = ctx.reports.get(name)
        if report is not None and report.status == "failed":
            return f"{name} failed"
    return ""


class Check(Protocol):
    """A check turns (what is scored, policy, sandbox) into findings; it never posts or prints."""

    name: str
    # Checks that must have passed for this one to run; otherwise it is reported as skipped.
    requires: tuple[str, ...]
    # What it reads from the analysis, and what it adds to it.
    needs: tuple[Product, ...]
    produces: tuple[Product, ...]
    # Its findings follow from the files and the policy alone: no code runs, no service is asked. `gate
    # publish` recomputes these and `gate eval` runs them before a sample's cases.
    static: bool
    # The points it declares, each a key of the policy's `points:` (a check may charge another's too: the
    # compile check charges `parse`, the tests check `timeout`).
    charges: tuple[Charge, ...]

    def enabled(self, policy: Policy) -> bool:
        """Whether the policy turns this check on at all; a check that is off is left out of the verdict, not
        reported as skipped (nobody asked for it)."""
        ...

    def run(self, ctx: CheckContext) -> CheckResult: ...
