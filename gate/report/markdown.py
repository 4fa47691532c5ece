"""Markdown helpers for the reports: escaping of user-controlled text, links to the head commit, code fences,
and cutting a long comment at a safe place.

Everything a candidate controls (messages, paths, case names, diffs) goes through `escape` or `fence` before
it reaches a Markdown report, so that a hostile file name or message cannot break a table, open an HTML
element or mention a user.
"""

from __future__ import annotations

import re
from urllib.parse import quote

# ASCII punctuation that means something inline in GitHub-flavoured Markdown (CommonMark lets any ASCII
# punctuation be backslash-escaped; `|` matters inside table cells, `~` for strikethrough).
_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()#+\-.!|~])")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# A zero-width space after `@` stops GitHub from turning `@user` or `@org/team` into a mention (and a
# notification); the text still reads the same.
_MENTION_BREAK = "@&#8203;"
# Control characters and bidirectional overrides (a file name that renders reversed, "Trojan Source") are
# shown as their code point instead.
_INVISIBLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def escape(text: str) -> str:
    """`text` as inline Markdown that renders literally, on one line (line breaks become `<br>`)."""
    out = "".join(_HTML.get(ch, ch) for ch in visible(text))
    out = _MARKDOWN_PUNCTUATION.sub(r"\\\1", out)
    out = out.replace("@", _MENTION_BREAK)
    lines = out.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "<br>".join(line.strip() for line in lines)


def visible(text: str) -> str:
    """`text` with control characters and bidirectional overrides written as their code points (`U+001B`)."""
    return _INVISIBLE.sub(lambda m: f"U+{ord(m.group()):04X}", text)


def fence(text: str, info: str = "") -> str:
    """A fenced code block holding `text` literally: the fence is longer than any run of backticks inside."""
    text = visible(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    marks = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{marks}{info}\n{body}{marks}"


def code(text: str) -> str:
    """An inline code span holding `text` (one line) literally, safe in a table cell."""
    flat = " ".join(visible(text).split())
    longest = max((len(run) for run in re.findall(r"`+", flat)), default=0)
    ticks = "`" * (longest + 1)
    # A pipe ends a table cell even inside a code span; GFM lets `\|` stand for it there.
    flat = flat.replace("|", "\\|")
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{ticks}{pad}{flat}{pad}{ticks}"


def blob_url(repo_url: str, sha: str, path: str, line: int | None = None) -> str:
    """`https://github.com/OWNER/REPO/blob/SHA/path#Lline`, with the path percent-encoded."""
    url = f"{repo_url.rstrip('/')}/blob/{sha}/{quote(path, safe='/')}"
    return f"{url}#L{line}" if line else url


_CLOSE_DETAILS = "\n\n</details>"


def cut(text: str, limit: int, note: str) -> str:
    """`text` when it fits in `limit` characters; otherwise its longest prefix that ends with a whole line
    outside any code fence, and not between a table's header and its first row, with the `<details>` sections
    still open there closed (so no table row, fence or folded section is left open, and no table is left
    without rows), followed by `note`."""
    if len(text) <= limit:
        return text
    budget = limit - len(note) - 2
    depth = 0
    fence_marks = ""
    best, best_depth = 0, 0
    position = 0
    table_lines = 0  # lines of the table the current line belongs to, so far
    for line in text.splitlines(keepends=True):
        position += len(line)
        if position > budget:
            break
        stripped = line.strip()
        if fence_marks:
            if stripped == fence_marks:
                fence_marks = ""
        elif stripped.startswith("```"):
            fence_marks = stripped[: len(stripped) - len(stripped.lstrip("`"))]
        elif stripped.startswith("<details"):
            depth += 1
        elif stripped.startswith("</details>"):
            depth -= 1
        table_lines = table_lines + 1 if stripped.startswith("|") and not fence_marks else 0
        if not fence_marks and table_lines != 1 and table_lines != 2 \
                and position + depth * len(_CLOSE_DETAILS) <= budget:
            best, best_depth = position, depth
    return text[:best].rstrip("\n") + _CLOSE_DETAILS * best_depth + "\n\n" + note
