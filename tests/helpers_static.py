"""Shared builders for the static-check tests: score a reply or a set of changed files through the engine."""

from __future__ import annotations

from gate.engine import run_checks, run_sandboxed
from gate.policy.model import Policy
from gate.sources.reply import subject_from_reply
from gate.subject import SourceFile, Subject, Task
from gate.verdict import CheckReport, Penalty, Verdict

DEMO_REPLY = """Here is the program:

```python
import sys

a, b = map(int, sys.stdin.read().split())
print(a + b)
```
"""


def score_reply(reply: str, policy: Policy | None = None, task: Task | None = None) -> Verdict:
    """The verdict for one reply, static checks only."""
    return run_checks(subject_from_reply(reply, "reply.md", task), policy or Policy())


def score_files(files: list[SourceFile], policy: Policy | None = None) -> Verdict:
    """The verdict for a set of changed files, as a git range gives them."""
    subject = Subject(kind="range", label="main..HEAD", files=tuple(files))
    return run_sandboxed(subject, policy or Policy())  # (a sandbox for the `languages:` checkers)


def check(verdict: Verdict, name: str) -> CheckReport:
    """The report of check `name`."""
    return next(c for c in verdict.checks if c.name == name)


def penalty(verdict: Verdict, name: str) -> Penalty:
    """The one penalty of check `name`."""
    found = [p for p in verdict.penalties if p.check == name]
    assert len(found) == 1, verdict.penalties
    return found[0]


def fenced(code: str, tag: str = "python") -> str:
    """`code` in a Markdown fence."""
    return f"```{tag}\n{code}```\n"
