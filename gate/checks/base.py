"""The interface every check implements, the context the engine hands it, and the analysis the checks share.

A check says what it depends on one way: what it `needs` from the analysis, and what it `produces` into it. The
extract check produces the files under score, the parse check the Python trees and, when every file is whole (no
chat left in one, each parses), the code (the checks that run or judge it need that), the smoke check the runs
of every case. The engine hands each check the analysis so far and adds what the check produced (only what it
declared); a check whose needs were not produced is `unmet`: skipped by default, saying why (`X failed` for the
first check that failed on the way to what it needs).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal, Protocol

import msgspec
from msgspec.structs import replace

from gate.cases.base import CaseOutcome
from gate.checks.trees import TreeCache
from gate.policy.keys import Charge
from gate.policy.model import Policy
from gate.progress import QUIET, Progress
from gate.subject import SourceFile, Subject
from gate.verdict import Blind, CaseReport, CheckReport, Note, Penalty

if TYPE_CHECKING:
    from gate.sandbox.base import RunRequest, Sandbox

# What a check can produce for the later checks: the names of `Analysis`'s fields.
Product = Literal["files", "conversations", "trees", "code", "runs"]


class CaseRuns(msgspec.Struct, frozen=True):
    """One case and the outcome of each of its runs (one per hash seed)."""

    label: str
    outcomes: tuple[CaseOutcome, ...]


class Analysis(msgspec.Struct, frozen=True):
    """What the checks found out about the code, each field from the one check that produces it (None: not
    produced). A check's result carries what it produced in the same shape."""

    files: tuple[SourceFile, ...] | None = None  # the code under score (extract: the gated files, a reply's block)
    # The paths of `files` that still hold a chat reply (extract, which charged them; parse leaves them be).
    conversations: tuple[str, ...] | None = None
    trees: Mapping[str, ast.Module] | None = None  # the Python trees of `files` that parse, by path (parse)
    # `files` once they are whole: extract left no chat in one and every Python file parses (parse).
    code: tuple[SourceFile, ...] | None = None
    runs: tuple[CaseRuns, ...] | None = None  # every case's runs, in the order they ran (smoke)

    def produced(self) -> tuple[str, ...]:
        """The names of the fields this analysis holds."""
        return tuple(name for name in self.__struct_fields__ if getattr(self, name) is not None)

    def merged(self, made: Analysis) -> Analysis:
        """This analysis with what a check produced in place of what was there."""
        return replace(self, **{name: getattr(made, name) for name in made.produced()})


class CheckContext(msgspec.Struct):
    """What a check may read. Checks run in registry order; `analysis` holds what the earlier ones produced,
    `reports` how they went, and `trees` the syntax trees this scoring already built."""

    subject: Subject
    policy: Policy
    sandbox: Sandbox | None
    analysis: Analysis
    reports: dict[str, CheckReport] = msgspec.field(default_factory=dict)
    trees: TreeCache = msgspec.field(default_factory=TreeCache)
    progress: Progress = QUIET  # what a check that runs for long says as it goes (the suite's counts)

    @property
    def files(self) -> tuple[SourceFile, ...]:
        """The files under score."""
        return self.analysis.files or ()

    @property
    def code(self) -> tuple[SourceFile, ...]:
        """The files under score, whole (for a check that needs `code`)."""
        return self.analysis.code or ()


class CheckResult(msgspec.Struct, frozen=True):
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
    # Evidence that a run's results were tampered with, each in one line naming the run (the verdict's
    # `tampered`): the check charges nothing for that run, and gives a blocked reason for it.
    tampered: tuple[str, ...] = ()
    # The repository's tests that could not catch a regression (the tests check), for the verdict's `blind`.
    blind: Blind | None = None
    made: Analysis = Analysis()


class Check(Protocol):
    """A check turns (what is scored, policy, sandbox) into findings; it never posts or prints. A check's class
    names this protocol as its base, for the defaults of `unmet` and `sandbox_paths`."""

    name: str
    # What it reads from the analysis, and what it adds to it (its only way to say what it depends on).
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

    def applies(self, policy: Policy, subject: Subject) -> bool:
        """Whether the policy and what is scored give the check, once enabled, anything to do (smoke without a
        case has nothing): a check that does not apply is left out of the verdict, as one that is off."""
        return True

    def run(self, ctx: CheckContext) -> CheckResult: ...

    def unmet(self, ctx: CheckContext, why: str) -> CheckResult:
        """The check's result when something it needs was not produced (`why`: "parse failed"): skipped, unless
        the check says otherwise (cases that could not run cost as not run)."""
        return CheckResult(skipped=why)

    def sandbox_paths(self, subject: Subject, policy: Policy) -> tuple[str, ...] | None:
        """What the check runs of `subject` in the sandbox: None when nothing (the engine starts a sandbox only
        for a check that runs something), else the host paths its programs need there, read-only (() when the
        sandbox's own are enough)."""
        return None

    def hash_seeds(self, policy: Policy) -> tuple[int, ...]:
        """The PYTHONHASHSEED of each of its runs, for a check that runs something (`sandbox_paths`; none for
        one that runs nothing): the sandbox starts what runs under them need while the static checks read the
        code."""
        return ()

    def warm(self, ctx: CheckContext) -> RunRequest | None:
        """A run like those the check is about to make (its seed and limits aside), once what it needs is
        produced: the sandbox makes what they share (Sandbox.warm) while the checks before it run. None when
        it has none to tell."""
        return None
