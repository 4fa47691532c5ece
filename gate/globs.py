"""Path globs with gitignore semantics, for the policy's `paths.include` and `paths.exclude`.

- `*` and `?` never match `/`; `[abc]`, `[!abc]` and `[a-z]` are character classes; `\\` escapes.
- `**` as a whole segment matches any number of directories: `**/*.py`, `src/**`, `a/**/b`.
- A pattern without a `/` (other than a trailing one) matches at any depth: `*.py` is `**/*.py`.
- A pattern with a `/` inside is anchored at the repository root (`src/*.py` is not `lib/src/a.py`); a
  trailing `/` names a directory (`vendor/` is `vendor/**`).
- A pattern that matches a directory matches every file under it, as in gitignore: `build` excludes
  `build/x.py`.
- `!` negation is not supported: list what to leave out under `paths.exclude` instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache


def glob_problem(pattern: str) -> str | None:
    """What is wrong with a policy's glob, or None: it must be relative, and it must compile with the matcher
    the checks use, so a policy that validates never fails later at score time."""
    if pattern.startswith("/"):
        return "globs are relative to the repository root; drop the leading `/`"
    if {".", ".."} & set(pattern.split("/")):
        # git names files `src/a.py`, never `./src/a.py`: such a glob would silently match nothing.
        return "globs match paths as git writes them, without `.` or `..` parts (write `src/*.py`)"
    try:
        compile_glob(pattern)
    except ValueError as exc:
        return str(exc).split(": ", 1)[-1]
    return None


@lru_cache(maxsize=512)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """The regular expression for `pattern`; raises ValueError saying what is wrong with a bad glob."""
    try:
        return _compile(pattern)
    except ValueError as exc:
        raise ValueError(f"bad glob {pattern!r}: {exc}") from None


def _compile(pattern: str) -> re.Pattern[str]:
    if not pattern.strip():
        raise ValueError("an empty glob matches nothing")
    if pattern.startswith("!"):
        raise ValueError("'!' negation is not supported; list the paths under paths.exclude")
    anchored = "/" in pattern.rstrip("/")
    body = pattern.strip("/")
    if pattern.endswith("/"):
        body += "/**"
    if not anchored:
        body = "**/" + body
    segments = [s for s in body.split("/") if s]
    parts: list[str] = []
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:[^/]+/)*")
        else:
            parts.append(_segment(segment) + ("" if last else "/"))
    return re.compile("".join(parts))


def _segment(segment: str) -> str:
    """One path segment's regular expression; `**` inside a segment (`**.py`) is a plain `*`, as in git."""
    out: list[str] = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            while i + 1 < len(segment) and segment[i + 1] == "*":
                i += 1
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            klass, i = _char_class(segment, i)
            out.append(klass)
            continue
        elif char == "\\":
            if i + 1 == len(segment):
                raise ValueError("a glob must not end with '\\'")
            i += 1
            out.append(re.escape(segment[i]))
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _char_class(segment: str, start: int) -> tuple[str, int]:
    """Translate the class that opens at `segment[start]`; returns it and the index after its `]`."""
    i = start + 1
    negate = i < len(segment) and segment[i] in "!^"
    if negate:
        i += 1
    first = i
    # A `]` right after the opening (or after `!`) is a literal, as in fnmatch and git.
    while i < len(segment) and (segment[i] != "]" or i == first):
        i += 1
    if i >= len(segment):
        raise ValueError("unclosed `[` (write `[[]` for a literal `[`)")
    inner = segment[first:i].replace("\\", "\\\\").replace("[", "\\[")
    return ("[^/" if negate else "[") + inner + "]", i + 1


def matches(path: str, pattern: str) -> bool:
    """Whether `path` (relative, `/`-separated) or one of its parent directories matches `pattern`."""
    regex = compile_glob(pattern)
    parts = path.strip("/").split("/")
    return any(regex.fullmatch("/".join(parts[:n])) for n in range(len(parts), 0, -1))


def is_gated(path: str, include: Iterable[str], exclude: Iterable[str]) -> bool:
    """Whether a changed file is scored: it matches an include glob and no exclude glob."""
    return any(matches(path, p) for p in include) and not any(matches(path, p) for p in exclude)
