"""The grammar of `bots:` patterns, in one place, used both to validate a policy and to match.

- Logins (`bots.logins`, `bots.patterns`, the agents' `logins`): `*` is any run of characters, `?` one
  character, everything else literal (`[bot]` is the suffix GitHub gives app accounts, not a character class),
  compared case-insensitively as GitHub compares logins. A login holds letters, digits and `-`, and apps end in
  `[bot]`, so nothing else is allowed in a pattern.
- Branches (`bots.branches`, the agents' `branches`): the path globs of `paths:` (gate.globs), since a branch
  name is a slash-separated path that git forbids `*`, `?` and `[` in: `copilot/**` is every branch under
  `copilot/`, and `bot-*` (no `/`) matches `bot-1` and `team/bot-1` alike.
"""

from __future__ import annotations

import re
from functools import lru_cache

from gate.globs import matches

_LOGIN_CHARS = re.compile(r"[A-Za-z0-9*?-]*(?:\[bot\])?", re.IGNORECASE)


@lru_cache(maxsize=256)
def compile_login(pattern: str) -> re.Pattern[str]:
    """The regular expression of a login pattern; raises ValueError saying what is wrong."""
    if not pattern.strip():
        raise ValueError("an empty login pattern matches nobody")
    if not _LOGIN_CHARS.fullmatch(pattern):
        raise ValueError("a login pattern holds letters, digits, `-`, the wildcards `*` and `?`, and may end "
                         "in `[bot]`")
    regex = re.escape(pattern).replace(r"\*", ".*").replace(r"\?", ".")
    return re.compile(regex, re.IGNORECASE)


def login_matches(login: str, pattern: str) -> bool:
    """Whether `login` matches the login pattern (see the module docstring)."""
    return compile_login(pattern).fullmatch(login) is not None


def login_problem(pattern: str) -> str | None:
    """What is wrong with a login pattern, or None."""
    try:
        compile_login(pattern)
    except ValueError as exc:
        return str(exc)
    return None


def branch_matches(branch: str, pattern: str) -> bool:
    """Whether the head branch matches the branch glob (see the module docstring)."""
    return matches(branch, pattern)
