"""The PR comment: the Markdown report, cut to fit GitHub's comment size, ending with the hidden marker."""

from __future__ import annotations

from gate.report.context import MARKER, report_context
from gate.report.markdown import cut
from gate.report.templating import Overrides, render
from gate.verdict import Verdict

# GitHub rejects a comment body longer than this many characters.
COMMENT_LIMIT = 65_536
TEMPLATE = "comment.md.j2"
CUT_NOTE = ("> **This comment was cut to fit GitHub's limit of {limit} characters.** The job summary of "
            "this run has the full report, and the verdict's JSON is in its artifact.")


def render_comment(verdict: Verdict, overrides: Overrides | None = None, limit: int = COMMENT_LIMIT) -> str:
    """The comment body for `verdict`: at most `limit` characters, the marker on its last line."""
    text, _ = render(TEMPLATE, report_context(verdict), overrides)
    tail = "\n" + MARKER + "\n"
    body = cut(text.rstrip("\n"), limit - len(tail), CUT_NOTE.format(limit=f"{limit:,}"))
    return body + tail
