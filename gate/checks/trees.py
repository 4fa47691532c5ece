"""Python syntax trees, built once per scoring and shared by the checks that read them.

The extract check parses a gated `.py` file to tell code from a chat reply, and the parse check parses it
again under the policy's Python version; when both versions are the same, the tree is the same, so the second
parse is a lookup. The imports and claims checks both scan every node of a tree: `walk` lists them once.
"""

from __future__ import annotations

import ast
import json
import math
import subprocess
import sys
import warnings

import msgspec

from gate.policy.model import Policy
from gate.subject import SourceFile
from gate.syntax import IN_PROCESS_CHARS, parse_python

_MIB = 1024 * 1024
# The child: limits itself, parses what it reads, and reports a syntax error as JSON; exit 3 when it ran out.
_BOUNDED_PARSE = """
import ast, json, resource, sys, warnings
memory, cpu, major, minor = (int(arg) for arg in sys.argv[1:])
resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
warnings.simplefilter("ignore")
try:
    ast.parse(sys.stdin.buffer.read().decode("utf-8", "surrogatepass"), feature_version=(major, minor))
except SyntaxError as exc:
    print(json.dumps([exc.msg, exc.lineno, exc.offset]))
except (MemoryError, RecursionError):
    sys.exit(3)
except ValueError as exc:
    print(json.dumps([str(exc), None, None]))
"""


class Unparsable(ValueError):
    """The gate does not parse this file: it is over `paths.max_file_kb`, or its parse needs more than the
    policy's limits allow. The message says which."""


def refusal(source: SourceFile, policy: Policy) -> str:
    """Why `source` is too large to parse under `policy` ("" when it is not)."""
    limit = policy.paths.max_file_kb * 1024
    if len(source.text) * 4 <= limit:  # a character is at most 4 bytes: no need to count them
        return ""
    size = len(source.text.encode("utf-8", "surrogatepass"))
    if size <= limit:
        return ""
    return f"{math.ceil(size / 1024)} KiB, over paths.max_file_kb ({policy.paths.max_file_kb}): not parsed"


def feature_version(python: str) -> tuple[int, int]:
    """The `feature_version` of ast.parse for a policy's `python` ("3.9")."""
    major, minor = python.split(".")[:2]
    return int(major), int(minor)


class TreeCache(msgspec.Struct):
    """The trees and node lists one scoring built, by file."""

    _trees: dict[tuple[str, tuple[int, int]], tuple[str, ast.Module]] = msgspec.field(default_factory=dict)
    _nodes: dict[str, tuple[ast.Module, list[ast.AST]]] = msgspec.field(default_factory=dict)

    def parse(self, source: SourceFile, version: tuple[int, int], policy: Policy) -> ast.Module:
        """`ast.parse` of `source` for Python `version`, reusing the tree when this scoring already parsed
        the same text for that version; under `policy`'s size cap and limits. Raises what `ast.parse`
        raises, or Unparsable; a failure is not kept."""
        key = (source.path, version)
        cached = self._trees.get(key)
        if cached is not None and cached[0] == source.text:
            return cached[1]
        too_large = refusal(source, policy)
        if too_large:
            raise Unparsable(too_large)
        if len(source.text) > IN_PROCESS_CHARS:  # parsed here again only when it fit there
            _parse_in_child(source, version, policy)
        with warnings.catch_warnings():
            # An invalid escape sequence is a warning, not a parse failure; keep it off the user's terminal.
            warnings.simplefilter("ignore")
            tree = parse_python(source.text, filename=source.path, feature_version=version)
        self._trees[key] = (source.text, tree)
        return tree

    def walk(self, path: str, tree: ast.Module) -> list[ast.AST]:
        """Every node of `tree` (the tree of the file at `path`), in `ast.walk`'s order, listed once per
        scoring."""
        cached = self._nodes.get(path)
        if cached is not None and cached[0] is tree:
            return cached[1]
        nodes = _breadth_first(tree)
        self._nodes[path] = (tree, nodes)
        return nodes


def _parse_in_child(source: SourceFile, version: tuple[int, int], policy: Policy) -> None:
    """Parse `source` in a child process under the policy's memory and CPU limits (a tree can take hundreds of
    times the text's size, and the gate's own process must survive any file). Returns when it parses there;
    raises the SyntaxError it met, or Unparsable when it ran out of memory or time."""
    limits = policy.limits
    argv = [sys.executable, "-I", "-S", "-c", _BOUNDED_PARSE, str(limits.memory_mb * _MIB),
            str(math.ceil(limits.cpu)), *(str(n) for n in version)]
    try:
        done = subprocess.run(argv, input=source.text.encode("utf-8", "surrogatepass"), capture_output=True,
                              timeout=limits.timeout + limits.cpu, env={}, check=False)
    except subprocess.TimeoutExpired:
        raise Unparsable(f"parsing it takes longer than the limits allow (limits.cpu {limits.cpu:g} s)") from None
    if done.returncode != 0 or not done.stdout:
        if done.returncode == 0:
            return
        raise Unparsable(f"parsing it needs more than the limits allow (limits.memory_mb {limits.memory_mb}, "
                         f"limits.cpu {limits.cpu:g} s)")
    message, line, column = json.loads(done.stdout)
    error = SyntaxError(message)
    error.lineno, error.offset = line, column
    raise error


def _breadth_first(tree: ast.AST) -> list[ast.AST]:
    """`list(ast.walk(tree))`, in the same order, without its generators (a third of its cost)."""
    nodes = [tree]
    for node in nodes:  # the list grows as it is read: it is its own queue
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, ast.AST):
                nodes.append(value)
            elif isinstance(value, list):
                nodes.extend([item for item in value if isinstance(item, ast.AST)])
    return nodes
