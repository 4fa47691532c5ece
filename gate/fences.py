"""Fenced code blocks in a model reply (Markdown), found the way a reader sees them.

Tolerant of what models write: CRLF line ends, fences indented by any amount (inside a list item), ``` or ~~~
fences of three or more characters, an info string with or without a language. A fence closes with the
same character, at least as long, and nothing but whitespace after it; a block left open runs to the end of
the reply (a truncated answer), and is marked so.
"""

from __future__ import annotations

import msgspec

PYTHON_TAGS = frozenset({"python", "py", "python3", "py3"})
_FENCE_CHARS = ("`", "~")
_BLANKS = " \t"


class Block(msgspec.Struct, frozen=True):
    """One fenced block: `line` is the opening fence's 1-based line, `first_line` the code's first line."""

    line: int
    first_line: int
    language: str  # the info string's first word, lower-cased; "" for a bare fence
    code: str
    closed: bool

    @property
    def is_python(self) -> bool:
        return self.language in PYTHON_TAGS

    @property
    def is_bare(self) -> bool:
        return self.language == ""


def split_lines(text: str) -> list[str]:
    """The text's lines without their ends, whatever the line-end convention."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def find_blocks(text: str) -> list[Block]:
    """Every fenced block of `text`, in order."""
    lines = split_lines(text)
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _opening(lines[i])
        if opening is None:
            i += 1
            continue
        lead, fence, info = opening
        indent = len(lead.expandtabs(4))
        end = next((j for j in range(i + 1, len(lines)) if _closes(lines[j], fence)), None)
        body = lines[i + 1:end if end is not None else len(lines)]
        language = info.split()[0].lower().lstrip("{.").rstrip("}") if info else ""
        code = "\n".join(_dedent(line, indent) for line in body)
        blocks.append(Block(i + 1, i + 2, language, code + "\n" if body else "", end is not None))
        i = (end if end is not None else len(lines)) + 1
    return blocks


def _opening(line: str) -> tuple[str, str, str] | None:
    """(indentation, fence, info string) when `line` opens a block: blanks, three or more backticks or tildes,
    then an info string, which holds no backtick."""
    rest = line.lstrip(_BLANKS)
    char = rest[:1]
    if char not in _FENCE_CHARS:
        return None
    info = rest.lstrip(char)
    run = len(rest) - len(info)
    if run < 3 or "`" in info:
        return None
    return line[:len(line) - len(rest)], rest[:run], info.strip()


def _closes(line: str, fence: str) -> bool:
    """Whether `line` closes a block opened by `fence`: the same character, at least as many, between blanks."""
    rest = line.strip(_BLANKS)
    return len(rest) >= len(fence) and not rest.lstrip(fence[0])


def prose_lines(text: str) -> list[tuple[int, str]]:
    """The (1-based line, text) pairs of `text` that lie outside every fenced block."""
    lines = split_lines(text)
    inside: set[int] = set()
    for block in find_blocks(text):
        last = block.first_line + block.code.count("\n") if block.closed else len(lines)
        inside.update(range(block.line, last + 1))
    return [(n, line) for n, line in enumerate(lines, start=1) if n not in inside]


def _dedent(line: str, indent: int) -> str:
    """Remove up to the opening fence's indentation from a code line (as CommonMark does)."""
    if indent == 0:
        return line
    stripped = line.lstrip(" \t")
    lead = line[: len(line) - len(stripped)].expandtabs(4)
    return lead[min(indent, len(lead)):] + stripped
