"""Python syntax trees, built once per scoring and shared by the checks that read them.

The extract check parses a gated `.py` file to tell code from a chat reply, and the parse check parses it
again under the policy's Python version; when both versions are the same, the tree is the same, so the second
parse is a lookup. The imports and claims checks both scan every node of a tree: `walk` lists them once.
"""

from __future__ import annotations

import ast
import warnings

from gate.checks.base import CheckContext
from gate.subject import SourceFile

_TREES = "python trees"
_NODES = "python tree nodes"


def parse_python(ctx: CheckContext, source: SourceFile, version: tuple[int, int]) -> ast.Module:
    """`ast.parse` of `source` for Python `version`, reusing the tree when this scoring already parsed the
    same text for that version. Raises what `ast.parse` raises; a failure is not kept."""
    trees: dict[tuple[str, tuple[int, int]], tuple[str, ast.Module]]
    trees = ctx.state.setdefault(_TREES, {})  # type: ignore[assignment]
    key = (source.path, version)
    cached = trees.get(key)
    if cached is not None and cached[0] == source.text:
        return cached[1]
    with warnings.catch_warnings():
        # An invalid escape sequence is a warning, not a parse failure; keep it off the user's terminal.
        warnings.simplefilter("ignore")
        tree = ast.parse(source.text, filename=source.path, feature_version=version)
    trees[key] = (source.text, tree)
    return tree


def walk(ctx: CheckContext, path: str, tree: ast.Module) -> list[ast.AST]:
    """Every node of `tree` (the tree of the file at `path`), in `ast.walk`'s order, listed once per
    scoring."""
    cache: dict[str, tuple[ast.Module, list[ast.AST]]] = ctx.state.setdefault(_NODES, {})  # type: ignore[assignment]
    cached = cache.get(path)
    if cached is not None and cached[0] is tree:
        return cached[1]
    nodes = _breadth_first(tree)
    cache[path] = (tree, nodes)
    return nodes


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
