"""`ast.parse` for the gate's own process, one call at a time.

CPython 3.11 before 3.11.8 keeps the recursion depth of its AST conversion in state that all threads share, so
two threads parsing at once (`gate eval` scores samples on a pool) can fail with "SystemError: AST constructor
recursion depth mismatch". A parse holds the GIL for most of its work anyway, so the lock costs little.
"""

from __future__ import annotations

import ast
import threading

_ONE_AT_A_TIME = threading.Lock()
# Text up to this many characters of a change may be parsed in the gate's own process: a tree takes at most a
# few hundred bytes per character of source (a 585 KiB tuple of ones took 300 MiB; 21 MB of `x = 1` lines,
# 8 GB), so even this stays small. Longer text is parsed in a child under the policy's limits
# (gate/checks/trees.py), or not at all.
IN_PROCESS_CHARS = 64 * 1024


def parse_python(source: str | bytes, filename: str = "<unknown>", feature_version: tuple[int, int] | None = None) \
        -> ast.Module:
    """`ast.parse(source, filename, feature_version=...)`, serialised across the process's threads."""
    with _ONE_AT_A_TIME:
        return ast.parse(source, filename=filename, feature_version=feature_version)
