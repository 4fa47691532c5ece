"""What a replay found, as the maintainer reads it: a table of the changes, a table of budgets (how many
changes each budget would have blocked, and how many of those later reverted), a one-line suggestion, and the
same as JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import msgspec

from gate.replay.history import HistoryChange
from gate.replay.run import Outcome, Scored


class Row(msgspec.Struct, frozen=True):
    """One change and what the replay found of it (`scored` is None until it is scored, or when
    `--bots-only` left it out: `gated` says why)."""

    change: HistoryChange
    gated: bool | None  # None: undecided (the base's policy does not load)
    gated_reason: str
    reverted_by: str | None
    scored: Scored | None = None

    @property
    def outcome(self) -> Outcome | None:
        return self.scored.current if self.scored else None


class Budget(msgspec.Struct, frozen=True):
    """What one budget would have done to the scored changes (under the base's policies, and the
    candidate's points when there is one)."""

    budget: int
    blocked: int
    blocked_reverted: int
    candidate_blocked: int | None = None
    candidate_blocked_reverted: int | None = None


def blocks(outcome: Outcome, budget: int) -> bool:
    """Whether `budget` blocks a change: over it on points, or needing a human at any budget."""
    return outcome.total > budget or bool(outcome.blocked_reasons)


def budgets(rows: Sequence[Row], candidate: bool) -> list[Budget]:
    """One line per budget from 0 to the largest total seen."""
    outcomes = [(row, row.scored) for row in rows if row.scored is not None and row.scored.current is not None]
    totals = [o.total for _, s in outcomes for o in (s.current, s.candidate) if o is not None]

    def count(budget: int, which: str, reverted: bool) -> int:
        return sum(1 for row, _ in outcomes if (row.reverted_by or not reverted)
                   and (outcome := _which(row, which)) is not None and blocks(outcome, budget))

    return [Budget(budget, count(budget, "current", False), count(budget, "current", True),
                   count(budget, "candidate", False) if candidate else None,
                   count(budget, "candidate", True) if candidate else None)
            for budget in range(max(totals, default=0) + 1)]


def _which(row: Row, which: str) -> Outcome | None:
    if row.scored is None:
        return None
    return row.scored.current if which == "current" else row.scored.candidate


def suggestion(rows: Sequence[Row], lines: Sequence[Budget], candidate: bool) -> str:
    """One line: the budget that best tells the reverted changes from the others (the most reverted ones
    blocked for the fewest others, the larger budget on a tie; a change held for a human at any budget tells
    nothing), against what the policies did."""
    which = "candidate" if candidate else "current"
    outcomes = [(row, outcome) for row in rows if (outcome := _which(row, which)) is not None]
    if not outcomes:
        return "nothing was scored: no suggestion"
    policy = "the candidate policy" if candidate else "the policies as they were"
    reverted_all = [o for row, o in outcomes if row.reverted_by]
    did = f"{policy} blocked {sum(1 for _, o in outcomes if not o.accepted)} of {len(outcomes)}" + (
        f", {sum(1 for o in reverted_all if not o.accepted)} of the {len(reverted_all)} reverted"
        if reverted_all else "")
    free = [(row, o) for row, o in outcomes if not o.blocked_reasons]
    held = len(outcomes) - len(free)
    besides = f", besides {held} held for a human at any budget" if held else ""
    reverted = [o.total for row, o in free if row.reverted_by]
    others = [o.total for row, o in free if not row.reverted_by]
    if not reverted:
        highest = max((o.total for _, o in free), default=0)
        return (f"no change here was reverted, so nothing tells a budget's worth; a budget of {highest} accepts "
                f"every change on points{besides} ({did})")

    def blocked(budget: int) -> tuple[int, int]:
        return sum(1 for total in reverted if total > budget), sum(1 for total in others if total > budget)

    def worth(budget: int) -> tuple[float, int]:
        bad, good = blocked(budget)
        return bad / len(reverted) - (good / len(others) if others else 0.0), budget

    best = max((line.budget for line in lines), key=worth)
    bad, good = blocked(best)
    if not bad:
        costs = ", ".join(str(total) for total in reverted)
        return (f"no budget blocks more of the {len(reverted)} reverted changes than of the others (the reverted "
                f"cost {costs} points): the checks do not see what went wrong; add the cases or tests that would "
                f"have failed them, and replay ({did})")
    return (f"budget {best}: blocks {bad} of the {len(reverted)} reverted changes and {good} of the "
            f"{len(others)} others{besides} ({did})")


def render(rows: Sequence[Row], lines: Sequence[Budget], advice: str, *, title: str, candidate: bool,
           interrupted: str = "") -> str:
    """The two tables and the suggestion, as plain text for a terminal or a log."""
    checks = list(dict.fromkeys(name for row in rows if (outcome := row.outcome)
                                for name, _ in outcome.points))
    header = ["commit", "author", "gated", "verdict", *checks, "total"]
    if candidate:
        header += ["candidate", "cand. total"]
    header.append("reverted by")
    table = [header]
    notes = []
    for row in rows:
        outcome = row.outcome
        cells = [row.change.commit[:12], _cut(row.change.author, 18), {True: "yes", False: "", None: "?"}[row.gated]]
        if row.scored is None:
            cells += ["not scored", *("" for _ in checks), ""]
        elif outcome is None:
            cells += ["error", *("" for _ in checks), ""]
            notes.append(f"{row.change.commit[:12]}: {row.scored.error}")
        else:
            points = dict(outcome.points)
            cells += [verdict_word(outcome), *(str(points.get(name, ".")) for name in checks), str(outcome.total)]
        if candidate:
            other = row.scored.candidate if row.scored else None
            cells += [verdict_word(other), str(other.total)] if other else ["", ""]
        cells.append(row.reverted_by[:12] if row.reverted_by else "")
        table.append(cells)
    out = [title, "", *_columns(table, left=3)]
    out += [f"  error {note}" for note in notes]
    header = ["budget", "blocks", "of reverted"] + (["candidate blocks", "of reverted"] if candidate else [])
    btable = [header] + [[span, *counts] for span, counts in _spans(lines, candidate)]
    reverted = sum(1 for row in rows if row.outcome is not None and row.reverted_by)
    scored = sum(1 for row in rows if row.outcome is not None)
    held = [sum(1 for row in rows if (outcome := _which(row, which)) and outcome.blocked_reasons)
            for which in ("current", "candidate")]
    human = f"; held for a human at any budget, counted as blocked: {held[0]}" + (
        f", under the candidate {held[1]}" if candidate else "")
    out += ["", f"Budgets over the {scored} scored changes ({reverted} later reverted{human if any(held) else ''}):",
            ""]
    out += _columns(btable)
    out += ["", f"suggestion: {advice}"]
    if interrupted:
        out += ["", interrupted]
    return "\n".join(out) + "\n"


def _spans(lines: Sequence[Budget], candidate: bool) -> list[tuple[str, list[str]]]:
    """The budgets' rows, those in a row that block the same changes as one (`16-55`): the JSON has each."""
    spans: list[tuple[int, int, list[str]]] = []
    for line in lines:
        counts = [str(line.blocked), str(line.blocked_reverted),
                  *([str(line.candidate_blocked), str(line.candidate_blocked_reverted)] if candidate else [])]
        if spans and spans[-1][2] == counts:
            spans[-1] = (spans[-1][0], line.budget, counts)
        else:
            spans.append((line.budget, line.budget, counts))
    return [(str(low) if low == high else f"{low}-{high}", counts) for low, high, counts in spans]


def verdict_word(outcome: Outcome) -> str:
    """accepted, blocked (on points) or human (held for a human whatever the points)."""
    if outcome.blocked_reasons:
        return "human"
    return "accepted" if outcome.accepted else "blocked"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def _columns(table: list[list[str]], left: int = 0) -> list[str]:
    """`table` in columns: the first `left` ones aligned left (words), the others right (numbers)."""
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return ["  ".join(cell.ljust(width) if i < left else cell.rjust(width) for i, (cell, width)
                      in enumerate(zip(row, widths, strict=True))).rstrip() for row in table]


def to_json(rows: Sequence[Row], lines: Sequence[Budget], advice: str, **about: Any) -> str:
    """`{"rows": [...], "budgets": [...], "suggestion": ...}` and what the replay was (`about`)."""
    out_rows = []
    for row in rows:
        item: dict[str, Any] = {
            "commit": row.change.commit, "base": row.change.base, "head": row.change.head,
            "merge": row.change.merge, "subject": row.change.subject, "author": row.change.author,
            "gated": row.gated, "gated_reason": row.gated_reason, "reverted_by": row.reverted_by,
            "scored": row.outcome is not None}
        if row.outcome is not None:
            item.update(_outcome_json(row.outcome))
        elif row.scored is not None:
            item["error"] = row.scored.error
        if row.scored is not None and row.scored.candidate is not None:
            item["candidate"] = _outcome_json(row.scored.candidate)
        out_rows.append(item)
    out_budgets = [{key: value for key, value in msgspec.structs.asdict(line).items() if value is not None}
                   for line in lines]
    return json.dumps({**about, "rows": out_rows, "budgets": out_budgets, "suggestion": advice}, indent=2)


def _outcome_json(outcome: Outcome) -> dict[str, Any]:
    return {"accepted": outcome.accepted, "total": outcome.total, "budget": outcome.budget,
            "points": dict(outcome.points), "blocked_reasons": list(outcome.blocked_reasons)}
