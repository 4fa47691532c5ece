"""Rendering a report shape from its Jinja2 template: the built-in one in `gate/report/templates/`, or the
repository's own override read from the base commit (`.github/gate/templates/NAME`).

An override runs in Jinja2's sandboxed environment (it can format what it is given, not call into Python), and
one that does not compile or fails to render falls back to the built-in template, with a note in the report.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

import msgspec

from gate.report.markdown import escape

if TYPE_CHECKING:  # jinja2 is imported when a report is first rendered, not by every command that names Overrides
    import jinja2

# Where a repository keeps its template overrides, relative to its root (read from the base commit).
OVERRIDE_DIR = ".github/gate/templates"


class Overrides(msgspec.Struct, frozen=True):
    """Template sources a repository supplies, by name (`comment.md.j2`), and where they came from."""

    sources: Mapping[str, str] = msgspec.field(default_factory=dict)
    origin: str = OVERRIDE_DIR  # e.g. ".github/gate/templates@abc1234", for the fallback note


@cache
def _builtin() -> jinja2.Environment:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("gate.report", "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # Markdown, not HTML: the context escapes what the candidate controls
    )


def render(name: str, context: Mapping[str, Any], overrides: Overrides | None = None) -> tuple[str, str]:
    """Render Markdown template `name` with `context`; returns (text, note). `note` is empty unless an
    override was given and failed: then the text comes from the built-in template, which shows the note
    (escaped) through its `override_note` variable."""
    import jinja2.sandbox

    source = overrides.sources.get(name) if overrides else None
    if source is not None and overrides is not None:
        env = jinja2.sandbox.SandboxedEnvironment(
            undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
            keep_trailing_newline=True, autoescape=False,
        )
        try:
            return env.from_string(source).render(**context, override_note=""), ""
        # Any failure of the repository's template (syntax, undefined name, a TypeError inside an expression)
        # must leave the reviewers a report, so every exception falls back to the built-in template.
        except Exception as exc:
            where = f"{overrides.origin}/{name}"
            line = f" line {exc.lineno}" if isinstance(exc, jinja2.TemplateSyntaxError) else ""
            note = (f"the repository's template {where} failed ({type(exc).__name__}{line}: {exc}); "
                    "the built-in template was used")
            return _builtin().get_template(name).render(**context, override_note=escape(note)), note
    return _builtin().get_template(name).render(**context, override_note=""), ""
