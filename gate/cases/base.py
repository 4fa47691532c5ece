"""The interface of a case kind (stdio, call, humaneval, mbpp): run one case against a program in a sandbox.

Expected values never enter the sandboxed process: a kind sends only the inputs, gets back plain data, and
compares outside (docs/cases.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

import msgspec

from gate.policy.keys import key
from gate.policy.model import CaseSpec
from gate.sandbox.base import Limits, RunRequest, Sandbox
from gate.verdict import RunStatus, safe_text

if TYPE_CHECKING:
    from gate.cases.schedule import Served

# Characters of a case's detail that any report shows. The detail quotes what the run sent back (its output,
# an exception's message, a record the candidate may have written itself), which has no length of its own.
MAX_DETAIL = 500


class Program(msgspec.Struct, frozen=True):
    """The code under test: one module's source (a reply or dataset sample), or a clean export of a tree."""

    code: str | None = None
    tree: Path | None = None
    function: str | None = None  # the function a reply or task names, for `call` cases without one
    # Import roots (RunRequest.python_path): the tree's own first (`src`), then the repository's environment.
    python_path: tuple[str, ...] = ()
    # Standard library modules the code imports, for the sandbox to load once for all runs (RunRequest.preload)
    preload: tuple[str, ...] = ()


class CaseOutcome(msgspec.Struct, frozen=True):
    """How one run of one case went. For a hidden case `detail` names the type of what came back, never the
    expected value. `fingerprint` is what the nondeterminism check compares between runs. A run whose results
    were tampered with (`tampered`) is no result."""

    status: RunStatus
    detail: str
    fingerprint: str
    seconds: float = 0.0
    # Evidence that the run's results were tampered with (gate/cases/tripwires.py), in one line: then it is no
    # result (status "error"), and costs no points.
    tampered: str = ""

    def __post_init__(self) -> None:
        # The one place where a run's texts are cut and made safe to write, before any report or row sees them.
        msgspec.structs.force_setattr(self, "detail", shown(self.detail))
        msgspec.structs.force_setattr(self, "tampered", shown(self.tampered))


def fingerprint(*parts: object) -> str:
    """What two runs of the same case are compared on (for the nondeterminism check)."""
    return json.dumps(parts, sort_keys=True, default=repr)


def shown(text: str) -> str:
    """`text` (a case's detail) cut to MAX_DETAIL characters, saying how many more there were, and safe to
    write (gate.verdict.safe_text)."""
    text = safe_text(text)
    if len(text) <= MAX_DETAIL:
        return text
    return f"{text[:MAX_DETAIL]}… ({len(text) - MAX_DETAIL} more characters)"


@dataclass(frozen=True, kw_only=True)
class CaseFields:
    """The declaration of a kind's fields (gate/policy/keys.py), from which `python -m gate.generate`
    writes the kind's part of the schemas: a kind's own class extends this one with its fields, and says
    what its cases are called in messages (`WHAT`), in the list of kinds (`SUMMARY`), how a case without
    `kind` shows it is one (`HINT`, its fields with `infers=True`), and the rules across fields (`RULES`,
    JSON Schema with an `x-message`)."""

    WHAT: ClassVar[str]
    SUMMARY: ClassVar[str]
    HINT: ClassVar[str] = ""
    RULES: ClassVar[dict[str, Any]] = {}

    name: str | None = key(None, "shown in the report; default `case N`", min_length=1, unset=True)


class CaseKind(Protocol):
    """A kind of case. `fields` declares its fields, which the loader validates (the schema, then `check`) once,
    when the file that holds the case is loaded; `run` never raises for anything the candidate does."""

    name: str

    @property
    def fields(self) -> type[CaseFields]: ...

    def check(self, case: Mapping[str, Any]) -> tuple[str, str] | None:
        """(field, what is wrong) for what the schema cannot say about a case that it accepts, or None."""

    def run(self, case: CaseSpec, program: Program, sandbox: Sandbox, limits: Limits,
            hash_seed: int) -> CaseOutcome: ...


@runtime_checkable
class ServedTogether(Protocol):
    """What a case kind adds when one run may serve several of its cases (the smoke check groups them)."""

    def module(self, case: CaseSpec, program: Program) -> str | None:
        """What the cases one run serves together share (their module), None when `case` runs alone."""

    def serving(self, program: Program) -> RunRequest:
        """The run that serves cases of `program` together, but for the cases, its seed and its limits (what
        every such run shares, which the sandbox may make ahead of them: Sandbox.warm)."""

    def run_many(self, cases: Sequence[CaseSpec], program: Program, sandbox: Sandbox, limits: Limits,
                 hash_seed: int, cut_s: float, core: int | None = None) -> Served:
        """Serve `cases` (all of one `module`, all public or all hidden) in one run, kept on `core` if given:
        by position, the outcome of each case served, those left to runs of their own, and the one cut for
        going on past `cut_s`."""
