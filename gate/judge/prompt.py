"""What the judge is shown: the task, the rubric and the code, never the cases.

The code is listed with line numbers that run on across files, so that the judge's reply can point at lines
with plain integers (the reply schema's `lines`) and `Listing.locate` maps them back to a file and line.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import msgspec

from gate.verdict import Location

if TYPE_CHECKING:  # jinja2 is imported when a prompt is first rendered
    import jinja2


class CodeFile(msgspec.Struct, frozen=True):
    """One file the judge reads: its path in the change and its text at the head."""

    path: str
    text: str


class JudgeRequest(msgspec.Struct, frozen=True):
    """Everything the judge is told. There is deliberately no field for cases or expected values."""

    task_name: str
    task_prompt: str
    rubric: str
    files: tuple[CodeFile, ...]


class Listing:
    """The request's files with continuous line numbers: (path, [(number, line), ...]) per file."""

    def __init__(self, files: tuple[CodeFile, ...]) -> None:
        self.files: list[tuple[str, list[tuple[int, str]]]] = []
        self._starts: list[tuple[int, int, str]] = []  # (first number, line count, path)
        number = 1
        for file in files:
            lines = file.text.splitlines()
            self.files.append((file.path, [(number + i, line) for i, line in enumerate(lines)]))
            self._starts.append((number, len(lines), file.path))
            number += len(lines)

    def locate(self, number: int) -> Location | None:
        """The file and line that listing line `number` is, or None when the listing has no such line."""
        for first, count, path in self._starts:
            if first <= number < first + count:
                return Location(path, number - first + 1)
        return None


def reply_schema() -> dict[str, Any]:
    """The JSON Schema the judge's reply must match (shipped as `gate/judge/reply.schema.json`)."""
    text = resources.files("gate.judge").joinpath("reply.schema.json").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@cache
def _templates() -> jinja2.Environment:
    # Plain text for a model, not HTML: nothing to escape. StrictUndefined turns a typo into an error.
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("gate.judge", "templates"),
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


def messages(request: JudgeRequest) -> list[dict[str, str]]:
    """The chat messages for `request`: a system message with the rules and schema, a user message with the
    task, rubric and numbered code."""
    env = _templates()
    system = env.get_template("system.j2").render(schema=json.dumps(reply_schema(), indent=2))
    user = env.get_template("user.j2").render(
        task_name=request.task_name,
        task_prompt=request.task_prompt,
        rubric=request.rubric,
        files=[{"path": path, "lines": lines} for path, lines in Listing(request.files).files],
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
