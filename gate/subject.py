"""What is scored: the one shape that the four inputs (PR, git range, model reply, dataset sample) become."""

from __future__ import annotations

import io
import tokenize
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import msgspec

from gate.environment import BuildLayer, BuiltEnvironment
from gate.policy.keys import key
from gate.policy.model import MODULE, CaseSpec
from gate.suite.selection import SuiteTrees

SubjectKind = Literal["reply", "range", "pull_request", "sample"]


class SourceFile(msgspec.Struct, frozen=True):
    """One gated file of the change, as it is at the head."""

    path: str
    text: str
    # Line numbers (1-based) that the change adds; None when the whole file counts (a reply, a new file).
    added_lines: frozenset[int] | None = None
    status: Literal["added", "modified", "renamed", "extracted"] = "added"
    old_path: str | None = None
    # Why Python cannot read the file's bytes as text, and on which line (`text` then holds U+FFFD there).
    undecodable: tuple[str, int] | None = None

    @classmethod
    def from_bytes(cls, path: str, data: bytes, added_lines: frozenset[int] | None = None,
                   status: Literal["added", "modified", "renamed"] = "added",
                   old_path: str | None = None) -> SourceFile:
        """A file as git stores it. Python source is decoded as Python decodes it (a UTF-8 BOM, a `coding:`
        line), other files as UTF-8; bytes that do not decode become U+FFFD and `undecodable` says why.
        `added_lines` are numbered as git numbers them and kept as the checks number them (`python_lines`)."""
        encoding, problem = "utf-8", None
        if path.endswith((".py", ".pyi")):
            try:
                encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
            except SyntaxError as exc:  # an unknown or contradictory `coding:` line
                problem = (exc.msg, exc.lineno or 1)
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError as exc:
            text = data.decode(encoding, errors="replace")
            problem = problem or (f"not valid {encoding} text: byte {data[exc.start]:#04x} at offset {exc.start}",
                                  data.count(b"\n", 0, exc.start) + 1)
        except (LookupError, UnicodeError) as exc:  # a codec that is no text encoding (rot13), or `undefined`
            text = data.decode("utf-8", errors="replace")
            problem = problem or (f"encoding problem: {exc}", 1)
        added = None if added_lines is None or not _lines_kept(data, text, encoding) \
            else python_lines(added_lines, text)
        return cls(path, text, added, status, old_path, problem)


def _lines_kept(data: bytes, text: str, encoding: str) -> bool:
    """Whether each of git's lines of `data` (ended by LF) decodes alone to one line of `text`. Under a codec such
    as `unicode_escape` or `utf-7`, bytes without a line feed decode to a line break (`\\n`, `+AAo-`) and a line
    feed can decode to nothing: git's line numbers then say nothing of Python's, and the whole file counts."""
    if encoding in ("utf-8", "utf-8-sig"):  # (a LF byte is a line feed there, and no other bytes are)
        return True
    try:
        rows = [row.decode(encoding, errors="replace") for row in data.split(b"\n")]
    except (LookupError, UnicodeError):
        return False
    return not any("\n" in row for row in rows) and "\n".join(rows) == text


def python_lines(git_lines: frozenset[int], text: str) -> frozenset[int]:
    """Lines of `text` numbered as git numbers them (a line ends at LF) renumbered as Python's parser, and so
    every check, numbers them: a lone CR ends a line too. An added git line that holds one is several Python
    lines, all added (`x = 1\\rimport socket` would otherwise hide the import on the next line's number)."""
    if "\r" not in text:
        return git_lines
    found: set[int] = set()
    first = 1  # the Python line the git line starts on
    for number, row in enumerate(text.split("\n"), start=1):
        ends = row[:-1].count("\r") if row.endswith("\r") else row.count("\r")  # CR LF ends one line
        if number in git_lines:
            found.update(range(first, first + ends + 1))
        first += ends + 1
    return frozenset(found)


@dataclass(frozen=True)
class Task:
    """A task from a task file or dataset: what the code was asked to do."""

    name: str = key(description="the task's name, shown in the report", min_length=1)
    prompt: str = key("", "what the model was asked")
    function: str | None = key(None, "the function the reply must define; call cases without `function` call it",
                               unset=True, pattern="^[A-Za-z_][A-Za-z0-9_]*$",
                               expected="a function name such as `solve`")
    allowed_imports: tuple[str, ...] | None = key(None, "the only modules the reply may import; omitted: the "
                                                  "policy's lists apply", items=MODULE, unique_items=True)


class BaseTree(msgspec.Struct, frozen=True):
    """The base commit, where a case that failed on the head runs again: one failing there too is the
    policy's, not the change's (gate/checks/smoke.py). `export` writes its tree on first use (the honest path,
    where every case passes, never pays for it) and returns where; `roots` are its import roots."""

    export: Callable[[], Path]
    roots: tuple[str, ...] = ()


class Subject(msgspec.Struct, frozen=True):
    """Everything the checks need to know about what is scored, and nothing about where it came from."""

    kind: SubjectKind
    label: str  # "reply.md", "main..HEAD", "PR #12", "HumanEval/0 sample 3"
    files: tuple[SourceFile, ...] = ()
    deleted: tuple[str, ...] = ()  # the base's paths of the files the change deletes
    reply: str | None = None  # the raw model reply, for kind "reply" and raw dataset samples
    task: Task | None = None
    cases: tuple[CaseSpec, ...] = ()
    hidden_cases: tuple[CaseSpec, ...] = ()
    # A clean export of the head tree that stdio and call cases run against (never the live worktree).
    tree: Path | None = None
    # Reasons a human must look whatever the score, e.g. the change edits the policy or the hidden cases.
    blocked_reasons: tuple[str, ...] = ()
    # The text of the policy's `judge.rubric_file`, read by the source from the base commit (as hidden cases
    # are), so that the judge check never touches git and the bot cannot rewrite its own rubric.
    # None when the source did not read one.
    judge_rubric: str | None = None
    # The repository's environment, built from the base commit (None: the standard library only), and the
    # head tree's own import roots (`src`, `environment.python_path`), which come first.
    environment: BuiltEnvironment | None = None
    import_roots: tuple[str, ...] = ()
    # Where the head's and the base's projects are built in the sandbox (gate/environment/project.py): with an
    # environment and a project to build only.
    layers: tuple[BuildLayer, BuildLayer] | None = None
    # The modules the head's build wrote that its runs import and no diff shows (the files it added to the tree's
    # packages, the modules of its own), once the head is built: the framework check reads them too.
    generated: tuple[SourceFile, ...] = ()
    suite: SuiteTrees | None = None  # with the policy's `tests:`, on a source that has the base and head trees
    base: BaseTree | None = None  # on a source that has the base commit
    # The suites of the `scopes:` that name `tests:` of their own, by scope name (docs/policy.md, "Monorepos").
    scope_suites: tuple[tuple[str, SuiteTrees], ...] = ()
    # Why no test of the repository ran although its base has test files (a policy without `tests:`), or "".
    untested: str = ""
    # Facts the report shows next to the verdict (base and head SHA, dirty worktree, ...).
    facts: tuple[tuple[str, str], ...] = msgspec.field(default=())
    # Seconds spent making it ready before any check runs (the environment's build, the project's), by step: the
    # verdict's timings start with them.
    timings: tuple[tuple[str, float], ...] = ()
