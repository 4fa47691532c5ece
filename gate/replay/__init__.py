"""`gate replay`: a branch's last changes scored as they merged, each under its base's policy (and a
candidate's), to tune a repository's budget and points on its own history (docs/replay.md).

`history.py` turns the branch into changes (and finds the reverted ones), `run.py` scores them in worker
processes with the engine, `tables.py` renders what was found.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec
from msgspec.structs import replace

from gate.errors import GateError
from gate.progress import Progress
from gate.replay.history import HistoryChange, changes_of, gated, reverts
from gate.replay.run import INTERRUPTED, Job, Scored, run_all
from gate.replay.tables import Row, budgets, render, suggestion, to_json, verdict_word
from gate.sources.gitrange import GitBase
from gate.sources.trust import read_policy

if TYPE_CHECKING:
    from gate.policy.model import Policy
    from gate.sources.gitcli import Repo


class Report(msgspec.Struct, frozen=True):
    """What a replay found, ready to print and to write."""

    text: str  # the tables and the suggestion
    json: str
    interrupted: bool
    failed: bool  # a change could not be scored because the gate could not do its job (exit 3)


def replay(repo: Repo, branch: str, last: int, *, candidate: Policy | None, candidate_path: str | None,
           bots_only: bool, jobs: int, progress: Progress) -> Report:
    """Score the last `last` changes of `branch` and report them; Ctrl-C ends the scoring and reports what was
    done. `progress` hears of each change as it is scored, with a running count."""
    changes = changes_of(repo, branch, last)
    reverted = reverts(changes)
    rows = [_row(repo, change, candidate, reverted.get(change.commit)) for change in changes]
    wanted = [i for i, row in enumerate(rows) if row.gated is not False or not bots_only]
    progress.say(f"gate replay: {len(wanted)} of the last {len(changes)} changes of {branch} to score"
                 f"{' (the ones the policy gates)' if bots_only else ''}, {jobs} at a time")
    finished = 0
    count = progress.count("changes", len(wanted))

    def done(scored: Scored) -> None:
        nonlocal finished
        finished += 1
        row = rows[scored.index] = replace(rows[scored.index], scored=scored)
        outcome = scored.current
        what = f"error: {scored.error}" if outcome is None else \
            f"{verdict_word(outcome)}, {outcome.total} of {outcome.budget}"
        if scored.candidate is not None:
            what += f"; candidate {verdict_word(scored.candidate)}, {scored.candidate.total} of " \
                    f"{scored.candidate.budget}"
        progress.say(f"[{finished}/{len(wanted)}] {row.change.commit[:12]} {what}  {row.change.subject[:50]}")
        count.add()

    job = Job(repo.working_dir, str(Path(candidate_path).resolve()) if candidate_path else None,
              tuple((i, rows[i].change.base, rows[i].change.head) for i in wanted))
    try:
        stopped = run_all(job, jobs, done) if wanted else ""
    finally:
        count.close()
    complete = not stopped
    has_candidate = candidate is not None
    lines = budgets(rows, has_candidate)
    advice = suggestion(rows, lines, has_candidate)
    kept = [row for row in rows if not bots_only or row.gated is not False]
    interrupted = "" if complete else (f"{stopped}: {finished} of the {len(wanted)} changes were scored; the "
                                       "tables hold those")
    where = "under its base's policy" + (f" and the candidate {candidate_path}" if has_candidate else "")
    title = f"gate replay: the last {len(changes)} changes of {branch}, each {where}" + \
        (f"; {len(kept)} gated by the policy" if bots_only else "")
    text = render(kept, lines, advice, title=title, candidate=has_candidate, interrupted=interrupted)
    data = to_json(kept, lines, advice, branch=branch, tip=changes[0].commit if changes else None,
                   changes=len(changes), complete=complete, bots_only=bots_only, candidate=candidate_path)
    failed = stopped not in ("", INTERRUPTED) or any(row.scored is not None and row.scored.failed for row in rows)
    return Report(text, data, stopped == INTERRUPTED, failed)


def _row(repo: Repo, change: HistoryChange, candidate: Policy | None, reverted_by: str | None) -> Row:
    """A change before it is scored, with the policy's bots decision (the candidate's when there is one)."""
    try:
        policy = candidate or read_policy(GitBase(repo.commit(change.base)), None)
    except GateError as exc:  # a base whose policy does not load: scoring says so too
        return Row(change, None, f"its base's policy does not load: {exc.render()}", reverted_by)
    decision = gated(change, policy.bots)
    return Row(change, decision.gated, decision.reason, reverted_by)
