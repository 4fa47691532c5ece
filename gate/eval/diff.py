"""Compare two runs sample by sample: what newly fails, what newly passes, what still fails."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from gate.eval.render import render_template
from gate.eval.rows import Row


class RunDiff(msgspec.Struct, frozen=True):
    """Sample ids by change, each list in the new run's order (the old run's for `removed`)."""

    newly_failing: tuple[str, ...]
    newly_passing: tuple[str, ...]
    still_failing: tuple[str, ...]
    still_passing: int
    added: tuple[str, ...]  # only in the new run
    removed: tuple[str, ...]  # only in the old run
    details: tuple[tuple[str, str], ...]  # id -> why it fails now, for the newly failing

    @property
    def regressed(self) -> bool:
        return bool(self.newly_failing)

    def render(self) -> str:
        return render_template("diff.txt.j2", d=self, details=dict(self.details))


def diff_runs(old: Sequence[Row], new: Sequence[Row]) -> RunDiff:
    """Match rows by sample id (task#index) and sort them by what changed."""
    before = {row.id: row for row in old}
    after_ids = {row.id for row in new}
    newly_failing, newly_passing, still_failing, added = [], [], [], []
    still_passing = 0
    details = []
    for row in new:
        was = before.get(row.id)
        if was is None:
            added.append(row.id)
        elif was.passed and not row.passed:
            newly_failing.append(row.id)
            details.append((row.id, _why(row)))
        elif not was.passed and row.passed:
            newly_passing.append(row.id)
        elif not row.passed:
            still_failing.append(row.id)
        else:
            still_passing += 1
    removed = [row.id for row in old if row.id not in after_ids]
    return RunDiff(tuple(newly_failing), tuple(newly_passing), tuple(still_failing), still_passing,
                   tuple(added), tuple(removed), tuple(details))


def _why(row: Row) -> str:
    return f"{row.failure}: {row.detail}" if row.detail else str(row.failure)
