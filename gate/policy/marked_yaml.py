"""YAML that remembers where every key came from, so an error can name the file's line.

`load_marked` returns plain JSON-like data whose mappings and lists are `MarkedMap` and `MarkedList`: a dict
and a list that also keep the line of each key and item. `line_of` walks a key path through them, and
`unmark` turns them back into exact builtin types for code that must not see our subclasses.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from gate.errors import BadInput

KeyPath = Sequence[str | int]


class MarkedMap(dict[str, Any]):
    """A YAML mapping that knows its own line and the line of each of its keys."""

    def __init__(self, line: int, key_lines: dict[str, int] | None = None) -> None:
        super().__init__()
        self.line = line
        self.key_lines: dict[str, int] = dict(key_lines or {})


class MarkedList(list[Any]):
    """A YAML sequence that knows its own line and the line of each item."""

    def __init__(self, line: int, item_lines: list[int] | None = None) -> None:
        super().__init__()
        self.line = line
        self.item_lines: list[int] = list(item_lines or [])


class _Loader(yaml.SafeLoader):
    """The safe loader; we build containers ourselves from its composed nodes to keep their marks."""


# libyaml's parser, when PyYAML was built with it: it composes a large policy much faster (docs/benchmarks.md).
# The nodes, their marks and the Python resolver and constructor are the same; its error messages are worded
# differently, so a document it refuses is composed again by the pure-Python loader, for the message.
_FAST: type[yaml.SafeLoader] | None = getattr(yaml, "CSafeLoader", None)


def load_marked(text: str, file: str) -> Any:
    """Parse one YAML document, keeping line numbers; None for an empty document. Raises BadInput."""
    try:
        # The reader refuses control characters (a binary file) as soon as it is built.
        loader: yaml.SafeLoader = _Loader(text)
    except yaml.reader.ReaderError as exc:
        raise BadInput(f"not YAML text: control character U+{int(exc.character):04X} (a binary file?)",
                       file=file, line=text.count("\n", 0, exc.position) + 1) from None
    try:
        composed = _compose_fast(text)
        if composed is None:
            node = loader.get_single_node()
        else:
            loader.dispose()
            loader, node = composed
        return None if node is None else _Builder(loader, file).build(node, ())
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = " ".join(str(exc.problem or exc.context or "not valid YAML").split())
        raise BadInput(f"YAML syntax error: {problem}", file=file,
                       line=mark.line + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        raise BadInput(f"YAML syntax error: {' '.join(str(exc).split())}", file=file) from None
    except RecursionError:
        raise BadInput("the YAML is nested too deeply", file=file) from None
    finally:
        loader.dispose()


def _compose_fast(text: str) -> tuple[yaml.SafeLoader, yaml.Node | None] | None:
    """(libyaml's loader, the document's node), or None without libyaml or when it refuses the text."""
    if _FAST is None:
        return None
    fast = _FAST(text)
    try:
        return fast, fast.get_single_node()
    except (yaml.YAMLError, RecursionError):
        fast.dispose()
        return None


class _Builder:
    """Builds marked containers from composed nodes, counting values: aliases can make a short file expand
    exponentially (`a: &a [1, 1]`, `b: &b [*a, *a]`, ...), and no policy or case list needs that many."""

    MAX_VALUES = 100_000

    def __init__(self, loader: yaml.SafeLoader, file: str) -> None:
        self.loader = loader
        self.file = file
        self.values = 0

    def build(self, node: yaml.Node, stack: tuple[int, ...]) -> Any:
        line = node.start_mark.line + 1
        self.values += 1
        if self.values > self.MAX_VALUES:
            raise BadInput(f"too many values (over {self.MAX_VALUES}; YAML aliases expand)", file=self.file,
                           line=line)
        # An alias may point at its own ancestor (`&a [*a]`); such a document has no JSON meaning.
        if id(node) in stack:
            raise BadInput("a YAML alias refers to its own parent", file=self.file, line=line)
        inner = (*stack, id(node))
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, inner)
        if isinstance(node, yaml.SequenceNode):
            items = MarkedList(line)
            for item in node.value:
                items.append(self.build(item, inner))
                items.item_lines.append(item.start_mark.line + 1)
            return items
        return self._scalar(node)

    def _scalar(self, node: yaml.Node) -> Any:
        """A scalar's value from its tag's constructor directly (what construct_object calls, without its
        bookkeeping for aliases and recursion, which a scalar never needs, and which is most of a large policy's
        build: docs/benchmarks.md)."""
        constructor = self.loader.yaml_constructors.get(node.tag) if isinstance(node, yaml.ScalarNode) else None
        if constructor is None:
            return self.loader.construct_object(node, deep=True)
        return constructor(self.loader, node)

    def _mapping(self, node: yaml.MappingNode, stack: tuple[int, ...]) -> MarkedMap:
        self.loader.flatten_mapping(node)  # resolves `<<:` merge keys the way PyYAML does
        result = MarkedMap(node.start_mark.line + 1)
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            key = self._scalar(key_node)
            if not isinstance(key, str):
                raise BadInput(f"keys must be strings, got {describe(key)}", file=self.file, line=line)
            if key in result:
                raise BadInput(f"duplicate key (first given at line {result.key_lines[key]})", file=self.file,
                               line=line, key=format_key(key))
            result[key] = self.build(value_node, stack)
            result.key_lines[key] = line
        return result


def line_of(root: Any, path: KeyPath) -> int | None:
    """The line of the deepest part of `path` that `root` has marks for (None when it has none)."""
    line: int | None = root.line if isinstance(root, MarkedMap | MarkedList) else None
    node = root
    for part in path:
        if isinstance(node, MarkedMap) and isinstance(part, str) and part in node.key_lines:
            line = node.key_lines[part]
        elif isinstance(node, MarkedList) and isinstance(part, int) and 0 <= part < len(node.item_lines):
            line = node.item_lines[part]
        else:
            break
        node = node[part]
    return line


def key_lines(root: Any, prefix: str = "") -> dict[str, int]:
    """The line of every key and item under `root`, by its key path (`tests.paths`, `environment.groups[0]`)."""
    found: dict[str, int] = {}
    if isinstance(root, MarkedMap):
        for name, value in root.items():
            path = f"{prefix}.{format_key(name)}" if prefix else format_key(name)
            found[path] = root.key_lines.get(name, root.line)
            found.update(key_lines(value, path))
    elif isinstance(root, MarkedList):
        for index, value in enumerate(root):
            path = f"{prefix}[{index}]"
            found[path] = root.item_lines[index] if index < len(root.item_lines) else root.line
            found.update(key_lines(value, path))
    return found


def unmark(value: Any) -> Any:
    """A deep copy made of exact builtin dicts and lists (case values cross into strict comparisons)."""
    if isinstance(value, dict):
        return {key: unmark(item) for key, item in value.items()}
    if isinstance(value, list):
        return [unmark(item) for item in value]
    return value


def format_key(part: str | int) -> str:
    """One part of a key path as a user writes it: `points`, `[2]`, `[".js"]`."""
    if isinstance(part, int):
        return f"[{part}]"
    return part if part.isidentifier() else f'["{part}"]'


def format_path(path: KeyPath) -> str:
    """A key path such as `cases[2].expect` or `languages[".js"].command`."""
    text = ""
    for part in path:
        piece = format_key(part)
        text += piece if piece.startswith("[") or not text else "." + piece
    return text


def describe(value: Any) -> str:
    """A value as an error message names it: `the string 'x'`, `the number 3.1`, `a list`."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__} ({value})"
