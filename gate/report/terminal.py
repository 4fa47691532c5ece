"""The verdict as text for a terminal. Short by default: the status line, what cost points (a failing test's
traceback under its penalty), what needs a human, and a line that sums up the rest (the checks, cases and
tests, the notes, the isolation, the time). With `verbose`, everything: every check, case and test, the notes,
each isolation layer, the facts and the command that reproduces the verdict.

Everything fits 80 columns (long messages wrap); colour is used only when asked for, which the caller decides
from `--color`, NO_COLOR, FORCE_COLOR and whether the stream is a TTY (`use_color`).
"""

from __future__ import annotations

import argparse
import os
import re
import textwrap
from collections.abc import Callable, Sequence
from typing import IO

from gate.report.context import TEST_KIND, UNTESTED, weaker
from gate.report.markdown import visible
from gate.verdict import NO_CODE, Penalty, Verdict, listing, within_budget

WIDTH = 80
_NAME, _STATUS, _POINTS = 16, 8, 6
_REASON_WIDTH = WIDTH - 2 - _NAME - 1 - _STATUS - 1 - _POINTS - 2
_STYLES = {"good": "\x1b[32m", "bad": "\x1b[31m", "warn": "\x1b[33m", "dim": "\x1b[2m", "bold": "\x1b[1m"}
_RESET = "\x1b[0m"
_STATUS_STYLE = {"passed": "good", "failed": "bad", "skipped": "warn", "timeout": "bad", "error": "bad",
                 "not run": "bad"}

# On GitHub this report is the job's log, and the runner obeys a line that starts with `::` or `##[` after
# leading spaces (a workflow command: a fake annotation, `::stop-commands::` to silence the gate's own). A line
# that quotes the candidate's text must never be one: a backslash goes in front.
_WORKFLOW_COMMAND = re.compile(r"^(\s*)(::|##\[)", re.MULTILINE)


COLOR_MODES = ("auto", "always", "never")


def add_color_option(parser: argparse.ArgumentParser) -> None:
    """`--color auto|always|never`, for a command that colours its report."""
    parser.add_argument("--color", choices=COLOR_MODES, default="auto",
                        help="colour the report: auto (default) on a terminal, or wherever FORCE_COLOR is set, and "
                             "never when NO_COLOR is; always; never")


def use_color(stream: IO[str], mode: str = "auto") -> bool:
    """Whether what goes to `stream` is coloured: `--color always` or `never` says so; `auto` colours a TTY,
    and any stream when FORCE_COLOR is set to anything (https://force-color.org: a CI log that shows colours),
    never when NO_COLOR is (https://no-color.org, which wins over FORCE_COLOR)."""
    if mode != "auto":
        return mode == "always"
    if os.environ.get("NO_COLOR"):
        return False
    return bool(os.environ.get("FORCE_COLOR")) or stream.isatty()


def add_verbose_option(parser: argparse.ArgumentParser) -> None:
    """`-v/--verbose`, for a command that prints the terminal report."""
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="the whole report: every check, case and test, the notes, each isolation layer, the "
                             "facts (by default: what cost points, what needs a human, and a summary line)")


# Where the short report's reader finds the rest.
MORE = "--verbose for every check, case and test, the notes, the isolation and the facts"


def render_terminal(verdict: Verdict, color: bool, verbose: bool = False, more: str = MORE) -> str:
    """The verdict as text for a terminal, at most 80 columns wide: short, ending with where `more` is, or
    everything with `verbose`."""
    paint = _painter(color)
    tests = {c.index: c.detail for c in verdict.cases if c.kind == TEST_KIND and not verbose}
    details: dict[int | None, list[str]] = {p.case: _traceback(tests[p.case]) for p in verdict.penalties
                                            if p.case is not None and p.case in tests}
    style = ("warn" if verdict.untested else "good") if verdict.accepted else "bad"
    out = [f"{paint(_status_word(verdict), style)}  total {verdict.total} / budget {verdict.budget}"]
    out += [f"  {s.name}: {s.total} / budget {s.budget}" + ("" if s.accepted else "  over its budget")
            for s in verdict.scopes]
    out += [paint(line, "dim") for line in (*_wrap(f"{verdict.subject_label} ({verdict.subject_kind})", 0),
                                            *_wrap(f"policy: {verdict.policy_source} · mode: {verdict.mode}", 0))]
    warned = [*(_wrap(f"{UNTESTED}: {verdict.untested}", 0) if verdict.untested else []),
              *(line for part in verdict.blind for line in _wrap(part.sentence(), 0)),
              *(_wrap("labels: " + ", ".join(verdict.labels), 0) if verdict.labels else [])]
    out += [paint(line, "warn") for line in warned]
    if verbose:
        out += ["", "  " + " ".join(paint(head, "bold") for head in
                                    ("check".ljust(_NAME), "status".ljust(_STATUS), "points".rjust(_POINTS)))]
        for c in verdict.checks:
            out += _check_rows(c.name, c.status, c.points, c.reason, paint)
    if verdict.penalties:
        out += ["", paint("Penalties", "bold")]
        for p in verdict.penalties:
            out.append("  " + paint(f"{p.check} +{p.points}", "bad"))
            out += _wrap(p.message, 4)
            where = _wrap("at " + listing([str(loc) for loc in p.locations], ", "), 6) \
                if p.locations and not _names_all(p) else []
            out += [paint(line, "dim") for line in
                    (*where, *(line for text in details.get(p.case, []) for line in _wrap(text, 6)))]
    if verbose and verdict.cases:
        out += ["", paint("Cases", "bold")]
        for case in verdict.cases:
            label = f"hidden case {case.index}" if case.hidden else f"#{case.index} {case.name}"
            out += [paint(line, _STATUS_STYLE.get(case.status, "dim")) for line in
                    _wrap(f"{label}: {case.status}" + (f" - {case.detail}" if case.detail else ""), 2)]
    if verdict.blocked_reasons:
        out += ["", paint("Needs a human, whatever the score", "bad")]
        out += [line for reason in verdict.blocked_reasons for line in _wrap(reason, 2)]
    if verbose:
        out += _section("Notes", [f"{n.source}: {n.message}" + (
            " (" + listing([str(loc) for loc in n.locations], ", ") + ")" if n.locations else "")
            for n in verdict.notes], paint)
        out += ["", paint("Isolation", "bold"),
                *(line for layer, how in verdict.isolation for line in _wrap(f"{layer}: {how}", 2))]
        out += _section("Facts", [f"{key}: {value}" for key, value in verdict.facts], paint)
        out += _section("Reproduce", [verdict.reproduce] if verdict.reproduce else [], paint)
    out += ["", *(paint(line, "dim") for line in (*_wrap(summary(verdict), 0), *([] if verbose else _wrap(more, 0))))]
    return _WORKFLOW_COMMAND.sub(r"\1\\\2", "\n".join(out) + "\n")


def _section(title: str, items: list[str], paint: Callable[[str, str], str]) -> list[str]:
    """A titled part of the verbose report, each item wrapped; nothing when there are no items."""
    if not items:
        return []
    return ["", paint(title, "bold"), *(line for item in items for line in _wrap(item, 2))]


# Lines of a failing test's traceback the short report shows under its penalty (its end: where it failed).
_TRACEBACK_LINES = 12


def _traceback(detail: str) -> list[str]:
    lines = [line for line in detail.strip().splitlines() if line.strip()]
    if len(lines) <= _TRACEBACK_LINES:
        return lines
    return [f"[... {len(lines) - _TRACEBACK_LINES} lines above: --verbose]", *lines[-_TRACEBACK_LINES:]]


def _names_all(penalty: Penalty) -> bool:
    """Whether the penalty's message already names each of its places (a test's line, the changed lines)."""
    return all(str(location) in penalty.message for location in penalty.locations)


def summary(verdict: Verdict) -> str:
    """What the short report leaves out, in one line: the checks, the cases and the tests by outcome, the
    notes, how the code was isolated, how long it took."""
    parts = [_counted("check", [c.status for c in verdict.checks])]
    cases = [c.status for c in verdict.cases if c.kind != TEST_KIND]
    tests = [c.said or c.status for c in verdict.cases if c.kind == TEST_KIND]
    parts += [_counted("case", cases)] if cases else []
    parts += [_counted("test", tests)] if tests else []
    parts += [f"{len(verdict.notes)} note{'s' * (len(verdict.notes) != 1)}"] if verdict.notes else []
    weak = [layer for layer, how in verdict.isolation if weaker(how)]
    if dict(verdict.isolation).get(NO_CODE) is not None:
        parts.append("no code ran")
    elif verdict.isolation:
        parts.append(f"isolation weaker: {', '.join(weak)}" if weak else "every isolation layer on")
    total = dict(verdict.timings).get("total")
    if total is not None:
        parts.append(f"{total:.1f} s")
    return " · ".join(parts)


# The order a summary counts outcomes in.
_OUTCOMES = ("passed", "failed", "error", "timeout", "not run", "skipped", "xfailed")


def _counted(what: str, statuses: Sequence[str]) -> str:
    counts = {status: statuses.count(status) for status in sorted(set(statuses), key=_OUTCOMES.index)}
    said = ", ".join(f"{count} {status}" for status, count in counts.items())
    return f"{len(statuses)} {what}{'s' * (len(statuses) != 1)}" + (f": {said}" if said else "")


def _status_word(verdict: Verdict) -> str:
    if verdict.mode == "advisory":
        within = within_budget(verdict.total, verdict.budget, verdict.blocked_reasons)
        word = "ACCEPTED (advisory)" if within else "WOULD BLOCK (advisory)"
        return f"{word}, {UNTESTED.upper()}" if verdict.untested else word
    word = "ACCEPTED" if verdict.accepted else "BLOCKED"
    return f"{word}, {UNTESTED.upper()}" if verdict.untested else word


def _check_rows(name: str, status: str, points: int, reason: str, paint: Callable[[str, str], str]) -> list[str]:
    """A check's row of the verbose table, its reason wrapped under its column."""
    reason_lines = textwrap.wrap(visible(reason), _REASON_WIDTH) if reason else []
    shown = (str(points) if status != "skipped" else "-").rjust(_POINTS)
    row = f"  {name.ljust(_NAME)[:_NAME]} {paint(status.ljust(_STATUS), _STATUS_STYLE.get(status, 'dim'))} {shown}"
    indent = " " * (WIDTH - _REASON_WIDTH)
    return [row + (f"  {reason_lines[0]}" if reason_lines else ""), *(indent + line for line in reason_lines[1:])]


def _wrap(text: str, indent: int) -> list[str]:
    """`text` as lines of at most 80 columns, every line indented by `indent` spaces. Control characters are
    shown as code points: a bot-chosen file name must not drive the maintainer's terminal."""
    pad = " " * indent
    lines: list[str] = []
    for paragraph in visible(text).splitlines() or [""]:
        lines.extend(textwrap.wrap(paragraph, WIDTH, initial_indent=pad, subsequent_indent=pad + "  ",
                                   break_long_words=True, break_on_hyphens=False) or [pad])
    return lines



def _painter(color: bool) -> Callable[[str, str], str]:
    def paint(text: str, style: str) -> str:
        return f"{_STYLES[style]}{text}{_RESET}" if color and text else text

    return paint


