"""The suite's blind tests: those that could not catch a regression in this change (docs/repository.md).

A test costs the head only when it passes on the base. One that fails on the base too, or is skipped there, is
not charged whatever the head does: it is blind. A suite of many blind tests gates little (a plugin the
environment lacks, a compiled extension the sandbox did not build, a test that writes beside itself into the
read-only tree, a network the run has not), and the verdict says how many and why, from the base's reports.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path

from gate.suite.run import TestOutcome, gist
from gate.verdict import Blind, BlindCause

PASSED = "passed"
_SKIPS = ("skipped", "xfailed")
# The kinds of blind test, as the verdict's sentence says them.
FAILS, SKIPPED_BOTH, SKIPPED_BASE = "fail on the base too", "skipped on both sides", "skipped on the base"


def blind(base: Mapping[str, str], details: Mapping[str, str], head: Mapping[str, TestOutcome],
          compiled: Callable[[str], bool]) -> Blind:
    """How many of the base's tests (`head`: their outcomes on the head) could not catch a regression, by kind
    and cause: `base` holds their statuses on the base where the gate has them (a test the head passed may
    have none: it could catch one), `details` why each that did not pass did not. `compiled` says whether a
    module name is one of the project's compiled extensions (the tree holds its C or Cython source)."""
    causes: Counter[tuple[str, str]] = Counter()
    examples: dict[tuple[str, str], str] = {}
    for nodeid, outcome in sorted(head.items()):
        before = base.get(nodeid)
        if before is None or before == PASSED or outcome.status == PASSED:
            continue
        kind = (SKIPPED_BOTH if outcome.status in _SKIPS else SKIPPED_BASE) if before in _SKIPS else FAILS
        key = (kind, cause(before, details.get(nodeid, ""), compiled))
        causes[key] += 1
        examples.setdefault(key, nodeid)
    found = tuple(BlindCause(count, kind, why, examples[(kind, why)])
                  for (kind, why), count in sorted(causes.items(), key=lambda item: (-item[1], item[0])))
    return Blind(len(head), sum(causes.values()), found)


def compiled_in(tree: Path) -> Callable[[str], bool]:
    """Whether a module name is one of the compiled extensions of `tree` (its C, C++ or Cython source is there,
    at the top or under `src/`)."""

    def compiled(module: str) -> bool:
        path = module.replace(".", "/")
        return any((tree / root / f"{path}{suffix}").is_file() for root in (".", "src")
                   for suffix in (".c", ".cpp", ".pyx"))

    return compiled


def cause(status: str, detail: str, compiled: Callable[[str], bool]) -> str:
    """Why a test did not pass on the base, in a few words: a common cause named, else its report's gist."""
    if status == "timeout":
        return "it runs out of time"
    said = gist(detail).removeprefix(": ")
    if status in _SKIPS:
        reason = _SKIP_REASON.search(said)
        return (reason.group(1) if reason else said).strip()[:160] or status
    missing = _NO_MODULE.search(detail)
    if missing:
        module = missing.group(1)
        if compiled(module):
            return f"the compiled extension {module} is not built"
        return f"ModuleNotFoundError: No module named '{module}'"
    program = _PROGRAM.search(detail)
    if program and (program.group(1) or program.group(2) in _PROGRAMS or _STARTS.search(detail)):
        return f"a program the sandbox lacks ({program.group(2)})"
    for pattern, words in _CAUSES:
        if pattern.search(detail):
            return words
    return said[:160] or status


# A skip's report as the harness has it: pytest's (path, line, "Skipped: reason").
_SKIP_REASON = re.compile(r"Skipped: (.*?)['\"]?\)?$", re.MULTILINE)
_NO_MODULE = re.compile(r"No module named '([^']+)'")
# A program a test starts that the run's root does not hold (gate/sandbox/detect.py's TOOLS are there): named by
# a path in a bin folder, as one of the programs suites commonly start, or where the report shows a process start.
_PROGRAM = re.compile(r"No such file or directory: '((?:/usr)?(?:/local)?/s?bin/)?([\w.+-]+)'")
_PROGRAMS = frozenset({"sh", "bash", "git", "make", "gcc", "cc", "cpp", "c++", "g++", "clang", "ld", "node", "java"})
_STARTS = re.compile(r"_execute_child|subprocess\.py|os\.exec|posix_spawn|spawnv")
_CAUSES = (
    (re.compile(r"Read-only file system|\[Errno 30\]"), "the tree is read-only (a test writes beside itself)"),
    (re.compile(r"Connection refused|Network is unreachable|name resolution|Name or service not known|"
                r"\[Errno (101|111|-2|-3)\]|gaierror|(socket|connect)\b[^\0]*(PermissionError|not permitted)"),
     "no network beyond the run's own loopback"),
    (re.compile(r"ZoneInfoNotFoundError|No time zone found"), "no time-zone database"),
    (re.compile(r"\bMemoryError\b"), "more memory than the runs' address space allows (limits.memory_mb)"),
    (re.compile(r"fixture '[^']+' not found"), "a fixture nothing provides"),
    (re.compile(r"PermissionError|Permission denied|Operation not permitted"), "a permission the sandbox denies"),
)
