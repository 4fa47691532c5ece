"""A test that fails only in another order than the base's is said, never charged silently (docs/repository.md).

The head's suite runs in pytest's order, each worker given contiguous runs of it (gate/suite/run.py), and the
base's tests run each with the tests before it in its file (gate/suite/baseline.py). A test can still depend on
what ran before it in its process (a file's tearDown that sets the asyncio event loop to None, a registry that a
module fills as it is imported), and the head's run gave it other tests before it than the base's. So before a
test that passes on the base costs the head, it runs again on the head in the base's order (its file's tests
before it, as the base ran it). If it passes there, it failed only after the tests before it in the head's run,
and the base runs it after those same tests, in one process: if the base passes it there too, the head's run is
run once more as it was (every file it collected, its tests up to the next). If the test fails there, the head's
code made it fail in that order, and it is charged; if it passes, it failed once and passed each time it ran
again: it is nondeterministic (a timing test on a loaded machine), which costs `points.nondeterminism` once
rather than `points.tests` (gate/checks/tests.py). If the base fails it there too,
it fails in that order whatever the change, and it costs nothing. Either way the verdict says what happened.

A test the base's suite marks `flaky` for a plugin that runs it again (its maintainers' word that its outcome
varies from run to run) first runs again on the head, its run run again as it was, as many times as the plugin
would (at most twice): passing there, it is not charged. The mark is read from the base's collection, never
from the head's, which could mark the test it breaks.

A pass in the head's run run again counts only when the test ran after the same tests as in its run, and, when
its id is only its parameter's place in a list (pytest's own id for an object: `codec2`), which the head may
shuffle, each of its other parameters that passed there passes again (`_in_order`'s `steady`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Protocol

import msgspec
from msgspec.structs import replace

from gate.errors import GateFailure
from gate.progress import QUIET, Progress
from gate.sandbox.base import Sandbox
from gate.sandbox.stage import EXPORT_PREFIX
from gate.suite.harness import function_of
from gate.suite.run import (
    SuiteResult,
    SuiteRun,
    TestOutcome,
    confirm,
    file_prefixes,
    files_of,
    gist,
    out_of_suite_time,
    run_suite,
    took,
    why,
)
from gate.suite.tripwire import Suspect
from gate.verdict import listing

PASSED = "passed"
# How many times what the head's run of a flaky-marked test took (its collection counted as a second) must be
# left of the suite's time to run it again: the run itself, and room for the runs that may follow.
_ROOM = 3
# How a test did not pass that a plugin runs it again for: a failure (in its call, set-up or teardown; at its
# time limit), or pytest-ignore-flaky's forgiven failure. Never a skip, which no plugin runs again.
_RUN_AGAIN = frozenset({"failed", "error", "timeout", "xfailed"})
_NONE = TestOutcome("", "not run")
# The start of the detail of a test's outcome in a run again of the head's run that tells nothing of it
# (`_in_order`'s `steady`): it ran there as failing, and the verdict says why.
_UNSTEADY = "its run again tells nothing of it: "
# pytest's own id for a parameter that is an object: the argument's name and the parameter's place in the list
# (`codec2`; several, joined with `-`).
_PLACE = re.compile(r"[A-Za-z_]\w*?\d+")


class Known(Protocol):
    """What the gate knows of the base's suite (gate/suite/baseline.py's `Baseline`)."""

    collected: list[str]
    statuses: dict[str, str]
    details: dict[str, str]
    marked_flaky: dict[str, int]


class Checked(msgspec.Struct, frozen=True):
    """The base's statuses the head is scored against (an order-dependent test's in the head's order), the
    head's outcomes (and the evidence of its runs), and what the gate says of the tests run again."""

    base: dict[str, str]
    head: SuiteResult
    said: list[str]


def check(sandbox: Sandbox, head: SuiteRun, base: SuiteRun, known: Known, on_base: SuiteResult,
          found: SuiteResult, deadline: float, progress: Progress = QUIET) -> Checked:
    """Run again, in the base's order, each test the head would be charged for, and on the base in the head's
    order each that fails on both sides but not the same way (module docstring). A test the base ran in this
    gate (`on_base`) after the same tests as the head's run needs neither: it ran in the same order there."""
    not_passing = [nodeid for nodeid in known.collected if found.tests[nodeid].status != PASSED]
    found, forgiven, said = _marked_flaky(sandbox, head, known, [
        nodeid for nodeid in not_passing if known.statuses.get(nodeid) == PASSED], found, deadline, progress)
    if found.tampered:
        return Checked(known.statuses, found, [])
    failing = [nodeid for nodeid in not_passing if nodeid not in forgiven
               and not (nodeid in on_base.tests and on_base.same_before(found, nodeid))]
    charged = [nodeid for nodeid in failing if known.statuses.get(nodeid) == PASSED]
    unlike = [nodeid for nodeid in failing if nodeid in known.statuses and known.statuses[nodeid] != PASSED
              and _failure(known.statuses[nodeid], known.details.get(nodeid, ""))
              != _failure(found.tests[nodeid].status, why(found.tests[nodeid]))]
    alone: list[str] = []
    if charged:
        again = run_suite(sandbox, replace(head, what=f"{head.what} again, in the base's order"),
                          file_prefixes(known.collected, charged), deadline, progress)
        found = replace(found, tampered=again.tampered, suspects=(*found.suspects, *again.suspects))
        if again.tampered:
            return Checked(known.statuses, found, [])
        alone = [nodeid for nodeid in charged if nodeid in again.tests and again.tests[nodeid].status == PASSED]
    if not (alone or unlike):
        return Checked(known.statuses, found, said)
    there = _in_heads_order(sandbox, base, found, [*alone, *unlike], set(files_of(known.collected)), deadline,
                            progress)
    # (not a test the head collects under other parameters: a run then gives it that test's outcome)
    both = [nodeid for nodeid in alone if (there.get(nodeid) or _NONE).status == PASSED and nodeid not in found.renamed]
    here: dict[str, TestOutcome] = {}
    if both:  # the head once more in its own order: does it fail there again?
        once = _in_order(sandbox, replace(head, what=f"{head.what} again, in their own order"), found, both,
                         deadline, progress, steady=True)
        found = replace(found, tampered=once.tampered, suspects=(*found.suspects, *once.suspects))
        if once.tampered:
            return Checked(known.statuses, found, [])
        here = {nodeid: outcome for nodeid, outcome in once.tests.items() if nodeid not in once.renamed}
    statuses, tests = dict(known.statuses), dict(found.tests)
    kept: list[str] = []
    spared: list[str] = []
    flaky: list[str] = []
    unfinished: list[str] = []
    for nodeid in [*alone, *unlike]:
        outcome = there.get(nodeid)
        passes = outcome is not None and outcome.status == PASSED
        after = _after(found.before(nodeid))
        if nodeid in unlike and passes:  # blind only for want of the tests the head's run had before it
            kept.append(nodeid)
            statuses[nodeid] = PASSED
            alone_there = gist(known.details.get(nodeid, "")).removeprefix(": ")
            tests[nodeid] = _told(tests[nodeid], f"it fails on the base without the tests before it in the head's "
                                                 f"run ({alone_there}) and passes {after}")
        elif nodeid in alone and passes and (here.get(nodeid) or _NONE).status == PASSED:
            flaky.append(nodeid)
            tests[nodeid] = replace(_told(tests[nodeid], f"nondeterministic: it did not pass {after}, then passed "
                                                         "when run again in the base's order and after those same "
                                                         "tests; the base passes it after them too"), flaky=True)
        elif nodeid in alone and passes:
            kept.append(nodeid)
            rerun = (here.get(nodeid) or _NONE).detail
            said_again = rerun.split("\n", 1)[0] if rerun.startswith(_UNSTEADY) else f"it fails {after} again"
            tests[nodeid] = _told(tests[nodeid], f"{said_again}, and passes when run again in the base's order; "
                                                 "the base passes it after those same tests")
        elif nodeid in alone and (outcome is None or out_of_suite_time(outcome)):
            unfinished.append(nodeid)
            tests[nodeid] = _told(tests[nodeid], f"it fails {after} and passes in the base's order; the base's run "
                                                 "after those same tests did not finish it")
        elif nodeid in alone:
            spared.append(nodeid)
            statuses[nodeid] = outcome.status if outcome is not None else "failed"
            tests[nodeid] = _told(tests[nodeid], f"order-dependent: it fails {after} and passes in the base's "
                                                 "order; the base fails it after those same tests too")
    if kept:
        said.append(f"{len(kept)} tests fail on the head in the order its run gave them and pass on the base in "
                    "that same order (each run again in the other side's order before it was charged), so they are "
                    f"charged: {listing(kept, ', ', shown=3)}")
    if flaky:
        said.append(f"{len(flaky)} tests are nondeterministic on the head: each did not pass in its run, then passed "
                    "when run again in the base's order and after the same tests as in its run, so they cost "
                    f"points.nondeterminism (once), not points.tests: {listing(flaky, ', ', shown=3)}")
    if spared:
        said.append(f"{len(spared)} tests are order-dependent: they failed on the head after the tests before them "
                    "in its run and pass when run again in the base's order, and the base fails them after those "
                    f"same tests too, so they are not charged: {listing(spared, ', ', shown=3)}")
    if unfinished:
        said.append(f"{len(unfinished)} tests fail on the head in the order its run gave them and pass in the base's "
                    "order, and the base's run in that same order did not finish them, so they are charged: "
                    f"{listing(unfinished, ', ', shown=3)}")
    return Checked(statuses, replace(found, tests=tests), said)


def _marked_flaky(sandbox: Sandbox, head: SuiteRun, known: Known, charged: list[str], found: SuiteResult,
                  deadline: float, progress: Progress) -> tuple[SuiteResult, set[str], list[str]]:
    """The base's suite marks a test flaky: its maintainers say its outcome varies from run to run (a timing
    test), and their CI runs it again (pytest-rerunfailures, flaky, pytest-retry) or forgives its failure
    (pytest-ignore-flaky). Each of `charged` so marked that failed (no plugin runs a skip again) runs again on
    the head in its run, run again as it was (every file it collected: a module imported as pytest collects may
    be what makes it fail; its tests up to the next, or its function's last parameter: _in_order), as many times
    as the base's suite would run it again (at most twice), while the suite's time leaves room for the runs
    after these: one that passes there is not charged (the passing run's outcome stands); one that does not
    goes on as any test does, so that a head whose change makes it fail every time is charged.
    `found` with the runs' evidence, the tests forgiven, and what the verdict says."""
    runs = {nodeid: run for nodeid in charged if (run := found.run_of(nodeid)) is not None}
    marked = {nodeid: known.marked_flaky[nodeid] for nodeid in charged if nodeid in known.marked_flaky
              and nodeid in runs and nodeid not in found.renamed and found.tests[nodeid].status in _RUN_AGAIN
              and not out_of_suite_time(found.tests[nodeid])}
    forgiven: dict[str, TestOutcome] = {}
    unsteady: dict[str, str] = {}  # (passed run again, in a run that tells nothing of it: why)
    passed_in: dict[str, int] = {}
    late: dict[str, int] = {}  # (by the tries it had)
    for attempt in (1, 2):
        asked = [nodeid for nodeid, tries in marked.items() if tries >= attempt and nodeid not in forgiven]
        # (each run's own collection, then its tests' time up to the last asked and its parameters)
        ends = {run: max(_reach(run, nodeid) for nodeid in asked if runs[nodeid] == run) + 2
                for run in {runs[nodeid] for nodeid in asked}}
        taken = sum(1 + sum(took(outcome) for test in run[:end] if (outcome := found.tests.get(test)) is not None)
                    for run, end in ends.items())
        if asked and deadline - time.monotonic() < _ROOM * taken:
            late = dict.fromkeys(asked, attempt - 1)
            break
        if not asked:
            break
        ran = _in_order(sandbox, replace(head, what=f"{head.what} {('again', 'once more')[attempt - 1]}, as they "
                                                    "ran"), found, asked, deadline, progress, steady=True)
        found = replace(found, tampered=ran.tampered, suspects=(*found.suspects, *ran.suspects))
        if ran.tampered:
            return found, set(), []
        for nodeid in asked:
            if nodeid in ran.tests and ran.tests[nodeid].status == PASSED and nodeid not in ran.renamed:
                forgiven[nodeid], passed_in[nodeid] = ran.tests[nodeid], attempt
                unsteady.pop(nodeid, None)
            elif (ran.tests.get(nodeid) or _NONE).detail.startswith(_UNSTEADY):
                unsteady[nodeid] = ran.tests[nodeid].detail.removeprefix(_UNSTEADY)
    tests = dict(found.tests)
    for nodeid, outcome in forgiven.items():
        first = found.tests[nodeid]
        tests[nodeid] = _told(outcome, f"marked flaky in the base's suite: it did not pass in the head's run "
                                       f"({first.status}{gist(why(first))}), then passed when that run ran again "
                                       f"(try {passed_in[nodeid]} of up to {marked[nodeid]})")
    said = [f"{len(forgiven)} tests marked flaky in the base's suite did not pass in the head's run and passed when "
            f"their run ran again as it was, so they are not charged: {listing(list(forgiven), ', ', shown=3)}"
            ] if forgiven else []
    if unsteady:
        said.append(f"{len(unsteady)} tests marked flaky in the base's suite did not pass in the head's run and "
                    "passed when their run ran again, but that run tells nothing of them, so they go on as any "
                    f"test ({next(iter(unsteady.values()))}): {listing(list(unsteady), ', ', shown=3)}")
    if late:
        said.append(f"{len(late)} tests marked flaky in the base's suite did not pass in the head's run"
                    + (" nor when their run ran again" if max(late.values()) else "") + ", and too little of "
                    "tests.timeout was left to run them again, so they go on as any test: "
                    f"{listing(list(late), ', ', shown=3)}")
    return replace(found, tests=tests), set(forgiven), said


def _after(before: Sequence[str]) -> str:
    return f"after the {len(before)} tests before it in the head's run" + (f" (from {before[0]})" if before else "")


# What differs in a report from one run to the next: a temporary path, one in the tree the run was in (each side
# has its own export: gate/sandbox/stage.py, in memory or under $TMPDIR), an address, a number (a time, a
# random value).
_VARYING = re.compile(rf"/tmp/\S*|/\S*{re.escape(EXPORT_PREFIX)}\S*|0x[0-9a-fA-F]+|\d+")


def _failure(status: str, report: str) -> tuple[str, str]:
    """How a test did not pass, for telling two sides' failures apart: its status and the last line of the
    error in the end of its report as a baseline keeps it (run.why; the last `E` line, else the last line, of
    a skip its reason), less what differs from one run to the next (_VARYING). The last line, not the first:
    both sides' reports are cut to their end, so the first line of each is wherever its cut fell."""
    lines = [line.strip() for line in report.splitlines() if line.strip()]
    said = ([line for line in lines if line.startswith("E ")] or lines or [""])[-1].removeprefix("E").strip()
    skip = re.search(r"Skipped: (.*)$", said)
    return status, _VARYING.sub("", skip.group(1) if skip else said)


def _in_heads_order(sandbox: Sandbox, base: SuiteRun, found: SuiteResult, tests: list[str], files: set[str],
                    deadline: float, progress: Progress) -> dict[str, TestOutcome]:
    """The base's outcome of each of `tests` run after the tests that ran before it in the head's run, with the
    files of that run the base has (`files`) collected, as the head's run collected them."""
    there = _in_order(sandbox, replace(base, what=f"{base.what} in the head's order"), found, tests, deadline,
                      progress, files)
    if there.tampered:  # (never from an honest run: the harness writes every record in turn)
        raise GateFailure("the base's suite does not run in the gate: its records do not add up: "
                          + listing(list(there.tampered), "; ", shown=2))
    return there.tests


def _in_order(sandbox: Sandbox, side: SuiteRun, found: SuiteResult, tests: list[str], deadline: float,
              progress: Progress, files: set[str] | None = None, steady: bool = False) -> SuiteResult:
    """`side`'s outcome of each of `tests` run after the tests that ran before it in the head's run (`found`),
    in one process (one run for the tests of one of the head's runs), with the runs' evidence: that run again
    as it was, but for the tests after the next one: every file it collected (a module imported as pytest
    collects may change what a test before it finds; of those, the ones `side` has when `files` names them),
    its tests up to the test after the last of `tests` (which decides the teardown of their module's and
    session's fixtures: pytest's `teardown_exact`), unless that one timed out there. A test that a tripwire's
    failure before it may have skipped or xfailed (a conftest that skips what follows a failure) runs once more
    away from any, as in baseline._again.
    `steady` (the head's run again, where a pass may spare the head a charge): a test that passes here counts
    as failing (its detail says why: _UNSTEADY) unless it ran after the same tests as in the head's run (a test
    before it that ends its process has the rest run in a new one) and, when its id is only its parameter's
    place in the list (_PLACE), every other parameter of its function that passed in the head's run passes
    here too (they run with it): a head that shuffles the list in each process moves its failure from one id to
    another. (Ids that name values follow them: there an honest flaky parameter of the same test failing here
    does not count against it.)"""
    ends: dict[tuple[str, ...], int] = {}
    for nodeid in tests:
        run = found.run_of(nodeid) or (nodeid,)
        ends[run] = max(ends.get(run, 0), (_reach(run, nodeid) if steady else run.index(nodeid)) + 1)
    outcomes: dict[str, TestOutcome] = {}
    suspects: tuple[Suspect, ...] = ()
    renamed: dict[str, str] = {}
    for run, end in ends.items():
        if end < len(run) and (found.tests.get(run[end]) or _NONE).status != "timeout":
            end += 1
        result = run_suite(sandbox, replace(side, workers=1), list(run[:end]), deadline, progress,
                           collect=[path for path in files_of(run) if files is None or path in files])
        shy = [nodeid for nodeid in tests if nodeid in result.after_failing
               and (result.tests.get(nodeid) or _NONE).status in ("skipped", "xfailed")]
        if shy and not result.tampered:
            again = confirm(sandbox, replace(side, what=f"{side.what}, away from a tripwire's failure"), shy,
                            result.tests, deadline, progress)
            result = replace(result, tests={**result.tests, **again.tests}, tampered=again.tampered,
                             suspects=(*result.suspects, *again.suspects))
        suspects += result.suspects
        renamed |= result.renamed
        if result.tampered:
            return replace(result, tests=outcomes, suspects=suspects)
        for nodeid in tests:
            if nodeid in result.tests and nodeid in run:
                unsteady = _unsteady(nodeid, run[:end], found, result) if steady else ""
                outcomes[nodeid] = replace(result.tests[nodeid], status="failed", detail=_UNSTEADY + unsteady) \
                    if unsteady and result.tests[nodeid].status == PASSED else result.tests[nodeid]
    return SuiteResult(outcomes, suspects=suspects, renamed=renamed)


def _reach(run: Sequence[str], nodeid: str) -> int:
    """The place in `run` of the last test a steady run again of `nodeid` runs: itself, or the last of its
    function's other parameters when they are named by their places (_siblings)."""
    return max([run.index(nodeid), *(run.index(other) for other in _siblings(run, nodeid))])


def _siblings(run: Sequence[str], nodeid: str) -> list[str]:
    """The other parameters of `nodeid`'s function in `run` when its parameters are named only by their places in
    their lists (_PLACE: the head may shuffle those lists), else none (ids that name values follow them)."""
    function = function_of(nodeid)
    if function is None or not all(_PLACE.fullmatch(part) for part in nodeid[len(function) + 1:-1].split("-")):
        return []
    return [other for other in run if other != nodeid and function_of(other) == function]


def _unsteady(nodeid: str, ran: Sequence[str], found: SuiteResult, result: SuiteResult) -> str:
    """Why `result` (the head's run of `ran` again) tells nothing of `nodeid` as it ran in `found`, or "": it ran
    after other tests, or (its parameters named by their places) another parameter of its function that passed
    in `found` did not pass in `result`."""
    if not result.same_before(found, nodeid):
        return "it ran there after other tests than in the head's run (a test before it ended its process)"
    moved = next((other for other in _siblings(ran, nodeid) if (found.tests.get(other) or _NONE).status == PASSED
                  and (result.tests.get(other) or _NONE).status != PASSED), None)
    return "" if moved is None else (f"{moved}, which passed in the head's run, did not pass there (parameters "
                                     "named by their places in a list may have swapped places)")


def _told(outcome: TestOutcome, said: str) -> TestOutcome:
    return replace(outcome, detail=f"{said}\n{outcome.detail}")
