"""The interface of a case kind (stdio, call, humaneval, mbpp): run one case against a program in a sandbox.

Expected values never enter the sandboxed process: a kind sends only the inputs, gets back plain data, and
compares outside (docs/cases.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from gate.policy.model import CaseSpec
from gate.sandbox.base import Limits, Sandbox
from gate.verdict import RunStatus, safe_text

# Characters of a case's detail that any report shows. The detail quotes what the run sent back (its output,
# an exception's message, a record the candidate may have written itself), which has no length of its own.
MAX_DETAIL = 500


@dataclass(frozen=True)
class Program:
    """The code under test: one module's source (a reply or dataset sample), or a clean export of a tree."""

    code: str | None = None
    tree: Path | None = None
    function: str | None = None  # the function a reply or task names, for `call` cases without one
    # Import roots (RunRequest.python_path): the tree's own first (`src`), then the repository's environment.
    python_path: tuple[str, ...] = ()
    # Standard library modules the code imports, for the sandbox to load once for all runs (RunRequest.preload)
    preload: tuple[str, ...] = ()


@dataclass(frozen=True)
class CaseOutcome:
    """How one run of one case went. For a hidden case `detail` names the type of what came back, never the
    expected value. `fingerprint` is what the nondeterminism check compares between runs."""

    status: RunStatus
    detail: str
    fingerprint: str
    seconds: float = 0.0

    def __post_init__(self) -> None:
        # The one place where a run's texts are cut and made safe to write, before any report or row sees them.
        object.__setattr__(self, "detail", shown(self.detail))


def shown(text: str) -> str:
    """`text` (a case's detail) cut to MAX_DETAIL characters, saying how many more there were, and safe to
    write (gate.verdict.safe_text)."""
    text = safe_text(text)
    if len(text) <= MAX_DETAIL:
        return text
    return f"{text[:MAX_DETAIL]}… ({len(text) - MAX_DETAIL} more characters)"


class CaseKind(Protocol):
    """A kind of case. `validate` raises gate.errors.BadInput naming the field; `run` never raises for
    anything the candidate does."""

    name: str

    def validate(self, case: CaseSpec, where: str) -> None: ...

    def run(self, case: CaseSpec, program: Program, sandbox: Sandbox, limits: Limits,
            hash_seed: int) -> CaseOutcome: ...
