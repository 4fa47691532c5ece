"""The job summary: the full Markdown report (`$GITHUB_STEP_SUMMARY`), not cut for the comment's limit."""

from __future__ import annotations

from gate.report.context import report_context
from gate.report.markdown import cut
from gate.report.templating import Overrides, render
from gate.verdict import Verdict

# GitHub refuses a step summary larger than 1 MiB; only a report beyond that (thousands of failed cases) is
# cut.
SUMMARY_LIMIT_BYTES = 1024 * 1024
TEMPLATE = "summary.md.j2"
CUT_NOTE = "> **This summary was cut to fit GitHub's 1 MiB limit.** The verdict's JSON has every finding."


def render_summary(verdict: Verdict, overrides: Overrides | None = None) -> str:
    """The job summary for `verdict`."""
    text, _ = render(TEMPLATE, report_context(verdict), overrides)
    limit = SUMMARY_LIMIT_BYTES
    out = text
    # `cut` counts characters and GitHub bytes: shrink by the overshoot until the UTF-8 fits.
    while (overshoot := len(out.encode("utf-8")) - SUMMARY_LIMIT_BYTES) > 0:
        limit -= overshoot
        out = cut(text, limit - 1, CUT_NOTE) + "\n"
    return out
