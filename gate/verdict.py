"""The verdict: plain data with a versioned JSON shape (`gate/verdict.schema.json`). Reporters only render it."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from importlib import resources
from typing import Any, Literal

import msgspec
from msgspec.structs import replace

SCHEMA_VERSION = 1

CheckStatus = Literal["passed", "failed", "skipped"]
# How one run of a case ended; a case that never started (the cases' wall budget was spent) is "not run".
RunStatus = Literal["passed", "failed", "timeout", "error"]
CaseStatus = Literal[RunStatus, "not run"]


# The verdict's one isolation entry when no code of the change ran (no case, no test): no layer was needed.
NO_CODE = "code execution"

# Most findings a message or a report lists before "and N more"; a penalty's locations keep every one. A
# range of 1,500 broken files must still give a message a reviewer can read and a comment that fits GitHub.
MAX_LISTED = 10


# A lone surrogate: Python strings can hold one (ast reads `"\\ud800"` as one, and so does JSON), no UTF-8
# output can; a verdict holding one would crash every writer of the reports, the artifact and the summary.
_SURROGATE = re.compile("[\ud800-\udfff]")


def safe_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD, so that any UTF-8 writer can write it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def _safe(value: Any) -> Any:
    """`value` (a string, a tuple or a verdict part) with its strings made safe; the same object when they are."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, tuple):
        items = tuple(_safe(item) for item in value)
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if type(value) in _PARTS:
        changed = {name: new for name in _PARTS[type(value)]
                   if (new := _safe(getattr(value, name))) is not getattr(value, name)}
        return replace(value, **changed) if changed else value
    return value


def _strings(root: Any) -> list[str]:
    """Every string inside `root` (a verdict or a part of one)."""
    found: list[str] = []
    stack = [root]
    parts = _PARTS
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is str:
            found.append(value)
        elif kind is tuple:
            stack.extend(value)
        elif kind in parts:
            stack.extend([getattr(value, name) for name in parts[kind]])
    return found


def within_budget(total: int, budget: int, blocked_reasons: Sequence[str]) -> bool:
    """The acceptance rule: the points add up to at most the budget, and nothing asks for a human."""
    return total <= budget and not blocked_reasons


def is_accepted(total: int, budget: int, blocked_reasons: Sequence[str], mode: str) -> bool:
    """Whether a verdict is accepted: within the budget, or in advisory mode, which never blocks."""
    return within_budget(total, budget, blocked_reasons) or mode == "advisory"


def listing(findings: Sequence[str], separator: str = "; ", shown: int = MAX_LISTED) -> str:
    """The first `shown` of `findings` joined, then "and N more" for the rest."""
    joined = separator.join(findings[:shown])
    return joined + (f" and {len(findings) - shown} more" if len(findings) > shown else "")


class Location(msgspec.Struct, frozen=True):
    """A place in a file; `str()` gives it as `path:line:column`, leaving out what is not known."""

    path: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        if self.line is None:
            return self.path
        return f"{self.path}:{self.line}" + (f":{self.column}" if self.column else "")


class Penalty(msgspec.Struct, frozen=True):
    """Points charged by one check, with what went wrong and where."""

    check: str
    points: int
    message: str
    locations: tuple[Location, ...] = ()
    case: int | None = None  # the case's index, for smoke and timeout penalties


class CheckReport(msgspec.Struct, frozen=True):
    """How one check went: passed, failed (with points) or skipped (with the reason)."""

    name: str
    status: CheckStatus
    points: int = 0
    reason: str = ""
    seconds: float = 0.0


class CaseReport(msgspec.Struct, frozen=True):
    """One case's outcome. For a hidden case `detail` never holds the expected value."""

    index: int
    name: str
    kind: str
    hidden: bool
    status: CaseStatus
    detail: str = ""  # short expected/got diff, or "returned int" for a hidden case
    seconds: float = 0.0
    # A repository test's outcome as pytest said it, where `status` (what it was charged: a skip on both sides
    # is "passed") does not: "skipped" or "xfailed".
    said: str = ""


class Note(msgspec.Struct, frozen=True):
    """Advice that is not a penalty (a model judge, a dirty worktree, ...)."""

    source: str
    message: str
    locations: tuple[Location, ...] = ()


class Tamper(msgspec.Struct, frozen=True):
    """Evidence that a run's results were tampered with (README invariant 17): the check whose run it was, and
    what was seen in which run, in one line. The run is no result: it blocks for a human and costs no points."""

    check: str
    seen: str


class BlindCause(msgspec.Struct, frozen=True):
    """One cause of a suite's blind tests: how many, of which kind ("fail on the base too", "skipped on both
    sides", "skipped on the base"), why (a common cause named, else the gist of the base's report), and one."""

    tests: int
    kind: str
    cause: str
    example: str


class Blind(msgspec.Struct, frozen=True):
    """The repository's tests that could not catch a regression in this change: of the `tests` base tests the
    head was scored on, `blind` did not pass on the base (and not on the head), so no change to them costs;
    `suite` is the scope whose suite it is ("" for the policy's `tests:`)."""

    tests: int
    blind: int
    causes: tuple[BlindCause, ...] = ()
    suite: str = ""

    def sentence(self) -> str:
        """"42 of 71 tests could not catch a regression: 30 fail on the base too (...), 12 skipped on both
        sides (...)", the three main causes of each kind."""
        kinds: dict[str, list[BlindCause]] = {}
        for cause in self.causes:
            kinds.setdefault(cause.kind, []).append(cause)
        said = []
        for kind, causes in kinds.items():
            shown = [f"{cause.tests}: {cause.cause}" if len(causes) > 1 else cause.cause for cause in causes[:3]]
            if len(causes) > 3:
                shown.append(f"{sum(cause.tests for cause in causes[3:])}: other causes")
            said.append(f"{sum(cause.tests for cause in causes)} {kind} ({'; '.join(shown)})")
        suite = f" of {self.suite}" if self.suite else ""
        return f"{self.blind} of {self.tests} tests{suite} could not catch a regression: " + ", ".join(said)


class ScopeResult(msgspec.Struct, frozen=True):
    """How one scope of a monorepo policy (`scopes:`) went; the verdict's penalties name it."""

    name: str
    files: int  # changed files in the scope
    total: int
    budget: int
    accepted: bool


class Verdict(msgspec.Struct, frozen=True):
    subject_kind: str
    subject_label: str
    policy_source: str
    mode: str
    budget: int
    total: int
    accepted: bool
    penalties: tuple[Penalty, ...] = ()
    checks: tuple[CheckReport, ...] = ()
    cases: tuple[CaseReport, ...] = ()
    blocked_reasons: tuple[str, ...] = ()
    notes: tuple[Note, ...] = ()
    labels: tuple[str, ...] = ()  # labels the publisher adds to the PR (e.g. a judge's needs-review)
    isolation: tuple[tuple[str, str], ...] = ()  # layer name -> what it was ("on", "off: why", "nobody")
    facts: tuple[tuple[str, str], ...] = ()
    timings: tuple[tuple[str, float], ...] = ()
    gate_version: str = ""
    schema_version: int = SCHEMA_VERSION
    reproduce: str = ""  # the command that reproduces this verdict locally
    scopes: tuple[ScopeResult, ...] = ()  # one per scope scored (docs/policy.md, "Monorepos"); () without `scopes:`
    # Why no test of the repository ran although it has test files (a policy without `tests:`), or "": the
    # headline says so, so that such a verdict never reads as plainly accepted.
    untested: str = ""
    tampered: tuple[Tamper, ...] = ()  # each also a blocked reason
    # The repository's tests that could not catch a regression, per suite that ran, when any could not.
    blind: tuple[Blind, ...] = ()

    def __post_init__(self) -> None:
        # The one place where texts from the code under score (messages, paths, case details) and from an
        # artifact are made safe to write: every verdict passes here, however it was built.
        # Almost every verdict has nothing to replace: one encode of all its texts tells.
        try:
            "".join(_strings(self)).encode("utf-8")
        except UnicodeEncodeError:
            for name in _PARTS[Verdict]:
                msgspec.structs.force_setattr(self, name, _safe(getattr(self, name)))

    @property
    def blocked(self) -> bool:
        return not self.accepted

    def to_dict(self) -> dict[str, Any]:
        # Through JSON, so the dict is exactly what a reader of the JSON file gets (lists, not tuples); each
        # record as a dict of its fields on the way.
        plain: dict[str, Any] = json.loads(json.dumps(self, default=_fields))
        return plain

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self, default=_fields, indent=indent, sort_keys=False, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        validate(data)
        d = dict(data)
        d["penalties"] = tuple(
            Penalty(**{**p, "locations": tuple(Location(**loc) for loc in p["locations"])}) for p in d["penalties"]
        )
        d["checks"] = tuple(CheckReport(**c) for c in d["checks"])
        d["cases"] = tuple(CaseReport(**c) for c in d["cases"])
        d["notes"] = tuple(
            Note(**{**n, "locations": tuple(Location(**loc) for loc in n["locations"])}) for n in d["notes"]
        )
        d["scopes"] = tuple(ScopeResult(**scope) for scope in d.get("scopes", []))
        d["tampered"] = tuple(Tamper(**tamper) for tamper in d.get("tampered", []))
        d["blind"] = tuple(Blind(**{**part, "causes": tuple(BlindCause(**cause) for cause in part["causes"])})
                           for part in d.get("blind", []))
        d["blocked_reasons"] = tuple(d["blocked_reasons"])
        d["labels"] = tuple(d["labels"])
        for key in ("isolation", "facts", "timings"):
            d[key] = tuple(d[key].items())
        return cls(**d)


# The verdict's parts and their fields that can hold text (`_strings` and `_safe` skip the numbers).
_PARTS: dict[type, tuple[str, ...]] = {
    cls: tuple(name for name in cls.__struct_fields__
               if "str" in cls.__annotations__[name] or "tuple" in cls.__annotations__[name])
    for cls in (Location, Penalty, CheckReport, CaseReport, Note, ScopeResult, Tamper, BlindCause, Blind, Verdict)}


def schema() -> dict[str, Any]:
    """The verdict's JSON Schema, shipped in the package."""
    text = resources.files("gate").joinpath("verdict.schema.json").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def validate(data: dict[str, Any]) -> None:
    """Raise jsonschema.ValidationError when `data` is not a verdict of this schema version."""
    import jsonschema  # only validation needs it (importing it is dear: docs/benchmarks.md)

    jsonschema.validate(data, schema())


def _fields(value: object) -> dict[str, Any]:
    """A record of the verdict as JSON gives it: its fields by name; the verdict's isolation, facts and timings
    (pairs) as objects."""
    if not isinstance(value, msgspec.Struct):
        raise TypeError(f"{type(value).__name__} is not data of a verdict")
    found = msgspec.structs.asdict(value)
    if isinstance(value, Verdict):
        found.update((key, dict(found[key])) for key in ("isolation", "facts", "timings"))
    if isinstance(value, CaseReport) and not value.said:  # (most cases: a large suite's artifact stays small)
        del found["said"]
    return found

