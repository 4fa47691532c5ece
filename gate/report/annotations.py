"""GitHub workflow commands (`::error file=…,line=…,title=…::message`) for the findings that cost points.

Printed on stdout inside a workflow step, each becomes an annotation on the PR's diff. GitHub's escaping:
in the message `%`, CR and LF become `%25`, `%0D`, `%0A`; in a property value `:` and `,` also become `%3A`
and `%2C`.
"""

from __future__ import annotations

from gate.verdict import Penalty, Verdict


def escape_data(text: str) -> str:
    """A workflow command's message, escaped."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value (file, title, ...), escaped."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(level: str, properties: list[tuple[str, str]], message: str) -> str:
    props = ",".join(f"{key}={escape_property(value)}" for key, value in properties)
    return f"::{level} {props}::{escape_data(message)}"


def _title(penalty: Penalty) -> str:
    return f"gate {penalty.check}: +{penalty.points} {'point' if penalty.points == 1 else 'points'}"


def workflow_commands(verdict: Verdict) -> list[str]:
    """One command per location of each penalty (one without a file for a penalty that has no location).
    Errors when the verdict is enforced, warnings in advisory mode."""
    level = "error" if verdict.mode == "enforce" else "warning"
    lines: list[str] = []
    for penalty in verdict.penalties:
        title = ("title", _title(penalty))
        if not penalty.locations:
            lines.append(_command(level, [title], penalty.message))
        for loc in penalty.locations:
            props = [("file", loc.path)]
            if loc.line:
                props.append(("line", str(loc.line)))
                if loc.column:
                    # Both count columns from 1 (the parse check reports SyntaxError.offset, compilers' columns).
                    props.append(("col", str(loc.column)))
            lines.append(_command(level, [*props, title], penalty.message))
    return lines
