"""Run a pytest suite in the sandbox, shared over several processes, and collect each test's outcome.

Each run is the suite's harness (`harness.py`): a watcher that runs pytest in a child, keeps the
per-test limit from outside it, and reports every test on the result channel as it finishes. A test that hung
or killed its process ends the run, and the tests after it run again in a new run, on the tree as exported
(what the tests' process wrote never reaches a later run). Should the watcher itself die (the code under test
killed it), the test it was running fails, or times out when the run hit its wall limit. The whole suite
shares one deadline (`tests.timeout`): what has not run by then costs a timeout. A test the base's own
configuration deselects (`-m` in its addopts) has the status `deselected`.

Each run of the change's code carries the gate's tripwires, and every run's records are checked as they come
back (`tripwire.py`): a run whose records do not add up is no result, and a tripwire that read the wrong outcome
is evidence of tampering once the base's own suite runs it right (`control`).
"""

from __future__ import annotations

import collections
import contextlib
import functools
import hashlib
import itertools
import json
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import msgspec
from msgspec.structs import replace

from gate.progress import QUIET, Count, Progress
from gate.sandbox import programs
from gate.sandbox.base import Limits, RunRequest, RunResult, Sandbox
from gate.suite import rewritten, tripwire
from gate.suite.harness import PASS, TEST_TIMEOUT, function_key
from gate.suite.tripwire import RunRecords, Suspect, Trip
from gate.verdict import listing

# What a run of the suite may write on its channel and outputs (its records, a failure's report each).
_OUTPUT_BYTES = 16 * 1024 * 1024
# Variables pytest reads: no plugin loads unless the gate or the base's configuration names it; coverage's data
# (pytest-cov) and the caches of the linters a suite runs as tests (pytest-ruff, pytest-mypy) go to /tmp, the tree
# being read-only.
SUITE_ENV = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1", "COVERAGE_FILE": "/tmp/.coverage",
             "RUFF_CACHE_DIR": "/tmp/.ruff_cache", "MYPY_CACHE_DIR": "/tmp/.mypy_cache"}
# The program each run starts.
_HARNESS = "gate.suite.harness"
# The modules it imports by those names: the tree's import path, the confirmation of its assertions' equality,
# the guard on what the tests depend on.
_SHARED = {**programs.TREE, "_gate_equality.py": "gate.suite.equality", "_gate_guard.py": "gate.suite.guard"}
_RANDOM = secrets.SystemRandom()
_HOSTS = 3  # tests of other files that carry a confirming run's tripwires (`confirm`)
# Wall seconds of a control run (gate/suite/tripwire.py) beyond its tests' own: pytest's start and collection.
_CONTROL_S = 60.0


class TestOutcome(msgspec.Struct, frozen=True):
    """One test's outcome: passed, failed, error, skipped, xfailed or timeout, with pytest's report; its own
    seconds and what it added to its run's (`span`: since the test before it ended); the line of its file
    pytest names for it, and where its failure's traceback went ((path, line): a path relative to the tree is
    the repository's; the harness's record, which the tests' process could have written)."""

    nodeid: str
    status: str
    detail: str = ""
    seconds: float = 0.0
    line: int | None = None
    trace: tuple[tuple[str, int], ...] = ()
    span: float = 0.0
    # It did not pass on the head, then passed each time it ran again there (in the base's order and in the
    # head's own): nondeterministic (gate/suite/order.py).
    flaky: bool = False


class SuiteRun(msgspec.Struct, frozen=True):
    """How to run one group of tests: the tree they run in, what pytest is given, the limits."""

    tree: Path
    args: tuple[str, ...]  # paths for pytest
    python_path: tuple[str, ...]
    limits: Limits  # the policy's, for memory, processes, files and disk
    test_timeout: float
    workers: int
    plugins: tuple[str, ...] = ()  # "NAME=MODULE" pytest loads (the base's declared test plugins)
    what: str = "the suite"  # the run's name in a report: "the head's tests"
    # Tripwires in each run (gate/suite/tripwire.py): where the change's code runs. The base's own runs, which
    # nothing of the change reaches, have none; their records must add up all the same.
    tripwires: bool = True
    # The store of test modules as the base's own runs rewrote them (gate/suite/rewritten.py): each run's pytest
    # takes those whose file is unchanged instead of rewriting it; `keeps`: the runs keep what they rewrite
    # there (the base's own runs alone: nothing of a run of the change is ever kept).
    rewritten: Path | None = None
    keeps: bool = False
    # Makes `tree` before its first run, when it is made only if a run needs it (the base's own export:
    # gate/suite/selection.py, `SuiteTrees.base`).
    made: Callable[[], object] | None = None


class SuiteResult(msgspec.Struct, frozen=True, dict=True):  # (dict: for its cached_property)
    """A suite's outcomes by node id; what did not add up, each in one line naming its run (nothing then is a
    result); the tripwires that read the wrong outcome, for the base to confirm (`control`)."""

    tests: dict[str, TestOutcome]
    tampered: tuple[str, ...] = ()
    suspects: tuple[Suspect, ...] = ()
    after_failing: frozenset[str] = frozenset()  # tests that ran after a tripwire had failed (`confirm`)
    # The node ids each run was given, in the order it ran them: what ran before a test in its process.
    runs: tuple[tuple[str, ...], ...] = ()
    # Node ids asked for that pytest did not collect, by the id of the same function it collected in their
    # place (gate/suite/harness.py's `match`): their outcome is that test's.
    renamed: dict[str, str] = msgspec.field(default_factory=dict)

    def before(self, nodeid: str) -> tuple[str, ...]:
        """The tests that ran before `nodeid` in the process its outcome came from (none known: ())."""
        run, at = self._places.get(nodeid, ((), 0))
        return run[:at]

    def run_of(self, nodeid: str) -> tuple[str, ...] | None:
        """The tests of the process `nodeid`'s outcome came from, in their order (none known: None)."""
        place = self._places.get(nodeid)
        return None if place is None else place[0]

    def same_before(self, other: SuiteResult, nodeid: str) -> bool:
        """Whether `nodeid` ran after the same tests here as in `other` (and ran in both)."""
        mine, theirs = self._places.get(nodeid), other._places.get(nodeid)
        return mine is not None and theirs is not None and mine[1] == theirs[1] and \
            mine[0][:mine[1]] == theirs[0][:theirs[1]]

    @functools.cached_property
    def _places(self) -> dict[str, tuple[tuple[str, ...], int]]:
        """Each test's run (the last that was given it: the one its outcome came from) and place in it."""
        return {nodeid: (run, at) for run in self.runs for at, nodeid in enumerate(run)}


# Characters of a report a baseline keeps of a test that did not pass.
_WHY = 600


def why(outcome: TestOutcome) -> str:
    """Why a test did not pass, as a baseline keeps it: the end of its report (the error and the calls that led
    to it), else its status."""
    return outcome.detail.strip()[-_WHY:] or outcome.status


def took(outcome: TestOutcome) -> float:
    """What a test took of its run's time: what it added to the run (`span`), at least its own seconds (a test
    stopped at its limit has that limit as its seconds, and no span)."""
    return max(outcome.seconds, outcome.span, 0.0)


def out_of_suite_time(outcome: TestOutcome) -> bool:
    """Whether `outcome` says only that the suite's time (tests.timeout) ran out before or as the test ran: it
    did not finish, and tells nothing of the test (one past its own limit, tests.test_timeout, did finish)."""
    return outcome.status == "timeout" and not outcome.detail.startswith(TEST_TIMEOUT)


def gist(detail: str) -> str:
    """The line of pytest's report that says what went wrong (its first `E` line), else its last line."""
    lines = [line.strip() for line in detail.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("E ")]
    found = (errors or lines[-1:] or [""])[0].removeprefix("E").strip()
    return f": {found[:200]}" if found else ""


def run_suite(sandbox: Sandbox, run: SuiteRun, select: Sequence[str] | None, deadline: float,
              progress: Progress = QUIET, cut_files: bool = False, seconds: Mapping[str, float] | None = None,
              collect: Sequence[str] | None = None) -> SuiteResult:
    """Every test's outcome, by node id, and what did not add up. With `select` (node ids in the order pytest
    collects them), exactly those, each worker given contiguous runs of that order (`shares`: whole files unless
    `cut_files`, of about the same time by `seconds`, what each test function added to its last run); without,
    whatever pytest collects from `run.args`, in one process. `deadline` is a time.monotonic() instant. A run
    whose records do not add up ends its share of the suite there: nothing it reported is a result. `progress`
    counts the tests as their records arrive. `collect`: the files pytest collects whatever `select` holds (one
    worker: a module imported as pytest collects it may change what a test selected finds)."""
    if collect is not None and run.workers != 1:
        raise ValueError("a run that collects given files has one worker")
    count = progress.count(run.what, None if select is None else len(select))
    try:
        if select is None:
            return _shard(sandbox, run, list(run.args), None, deadline, count=count)
        parts_of = shares(select, run.workers, cut_files, seconds)
        with ThreadPoolExecutor(max_workers=max(1, len(parts_of))) as pool:
            parts = list(pool.map(lambda ids: _shard(sandbox, run, files_of(ids), ids, deadline, count=count,
                                                     collect=collect), parts_of))
    finally:
        count.close()
    return SuiteResult({nodeid: outcome for part in parts for nodeid, outcome in part.tests.items()},
                       tuple(line for part in parts for line in part.tampered),
                       tuple(suspect for part in parts for suspect in part.suspects),
                       frozenset().union(*(part.after_failing for part in parts)),
                       tuple(ids for part in parts for ids in part.runs),
                       {asked: found for part in parts for asked, found in part.renamed.items()})


def shares(select: Sequence[str], workers: int, cut_files: bool = False, seconds: Mapping[str, float] | None = None
           ) -> list[list[str]]:
    """The node ids cut into at most `workers` contiguous parts of about the same size. A cut falls between two
    files, the nearest to where an even cut would fall: each test then runs after the tests pytest's order puts
    before it in its part, as in a run of the whole suite. A part's size is its count of tests, or with
    `seconds` (what each test function added to its last run, all its parameters) the time it is expected to
    take: a function's time shared evenly among its parameters, a test not timed yet as the average timed one.
    With `cut_files`, a cut may fall inside a file, between two test functions (never between one function's
    parameters, whose ids are matched by function: harness.match): by count, when no file ends within a quarter
    of a part's size of the even cut (a file that holds most of the suite: packaging's test_version.py, 18,000
    of its 27,000 tests); by time, when that is nearer the even cut than the nearest file's end by more than
    a file collected twice costs, _FILE_S (tabulate's test_cli.py, 0.6 s of its suite's 1.1 in seven tests).
    Only when each part is at least _SHARE tests, or _SHARE_S seconds: a process's start costs more than a
    few tests."""
    files = [index for index in range(1, len(select)) if _file(select[index]) != _file(select[index - 1])]
    at = [0.0, *itertools.accumulate(_weights(select, seconds))]  # the size of select[:i] is at[i]
    least = _SHARE_S if seconds else _SHARE
    parts = max(1, min(workers, max(len(files) + 1, int(at[-1] // least) if cut_files else 0)))
    size = at[-1] / parts
    functions = [index for index in range(1, len(select))  # (only where a file may be cut)
                 if function_key(select[index]) != function_key(select[index - 1])] \
        if cut_files and size >= least else []
    bounds = [0]
    for part in range(1, parts):
        even = at[bounds[-1]] + (at[-1] - at[bounds[-1]]) / (parts - part + 1)  # what is left, shared evenly
        near = _nearest(files, at, even, bounds[-1])
        inside = _nearest(functions, at, even, bounds[-1])
        if inside is not None and (near is None or (
                abs(at[near] - even) - abs(at[inside] - even) > _FILE_S if seconds
                else abs(at[near] - even) > size / 4)):
            near = inside
        if near is not None:
            bounds.append(near)
    bounds.append(len(select))
    return [list(select[start:stop]) for start, stop in itertools.pairwise(bounds)]


def longest_share(select: Sequence[str], workers: int, cut: Mapping[str, float], timed: Mapping[str, float]) -> float:
    """How long the longest of the parts that `cut`'s seconds share `select` into (`shares`, files cut) takes by
    `timed`'s seconds."""
    weight = dict(zip(select, _weights(select, timed), strict=True))
    return max((sum(weight[nodeid] for nodeid in part) for part in shares(select, workers, True, cut)), default=0.0)


def _weights(select: Sequence[str], seconds: Mapping[str, float] | None) -> list[float]:
    """Each test's expected share of a run (`shares`): 1 each without `seconds`."""
    if not seconds:
        return [1.0] * len(select)
    counts = collections.Counter(map(function_key, select))
    timed = [seconds[name] / count for name, count in counts.items() if name in seconds]
    usual = sum(timed) / len(timed) if timed else 0.0
    return [max(_TEST_S, seconds[name] / counts[name] if name in seconds else usual)
            for name in map(function_key, select)]


_SHARE = 200  # tests a part holds at least when it cuts a file
_SHARE_S = 0.3  # seconds a part is expected to take at least when it cuts a file
_FILE_S = 0.05  # what a file cut in two costs beside a cut between files: its collection, its module's fixtures
_TEST_S = 0.0005  # the least a test adds to a run (its records, pytest's reports)


def _nearest(cuts: list[int], at: list[float], even: float, after: int) -> int | None:
    """The index of `cuts` past `after` whose size `at` is nearest `even`, or None."""
    return min((cut for cut in cuts if cut > after), key=lambda cut: abs(at[cut] - even), default=None)


def _file(nodeid: str) -> str:
    return nodeid.split("::")[0]


def files_of(ids: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(nodeid.split("::")[0] for nodeid in ids))


def _shard(sandbox: Sandbox, run: SuiteRun, args: list[str], select: list[str] | None, deadline: float,
           plan: Callable[[], tuple[Trip, ...]] = tripwire.plan, count: Count | None = None,
           collect: Sequence[str] | None = None) -> SuiteResult:
    """Run one group to its end, again after each death, until every test has an outcome, time is up, or a
    run's records do not add up. Each run's tripwires are a new `plan`; each run collects the files of the
    tests it runs, or `collect`."""
    found: dict[str, TestOutcome] = {}
    expected: list[str] | None = select
    errors: dict[str, str] = {}  # collection errors, by the path pytest could not collect
    suspects: list[Suspect] = []
    after_failing: set[str] = set()
    sequences: list[tuple[str, ...]] = []
    renamed: dict[str, str] = {}
    runs = 0

    def result(*tampered: str) -> SuiteResult:
        return SuiteResult(found, tampered, tuple(suspects), frozenset(after_failing), tuple(sequences), renamed)

    while True:
        left = deadline - time.monotonic()
        pending = None if expected is None else [n for n in expected if n not in found]
        if pending == []:
            return result()
        if left <= 1:
            for nodeid in pending or ():
                found[nodeid] = TestOutcome(nodeid, "timeout", "not run: the suite's time limit (tests.timeout) "
                                                               "ran out")
            return result()
        runs += 1
        files = args if pending is None else list(collect or files_of(pending))
        trips = plan() if run.tripwires else ()
        ran, records = _run_once(sandbox, run, files, pending, left, trips, count)
        label = f"{run.what}, run {runs} ({listing(files, ', ', 2)})"
        checked = _asked(tripwire.read(records, trips, pending, label))
        suspects += checked.suspects
        after_failing |= checked.after_failing
        if checked.tampered:
            return result(*(f"{label}: {line}" for line in checked.tampered))
        sequences.append(tuple(checked.collected or ()))
        renamed |= {asked: nodeid for nodeid, asked in checked.matched.items()}
        progress = _take(checked, found, errors) or checked.ended_in_trip
        if expected is None:
            expected = [*(checked.collected or []), *errors]
            for path, detail in errors.items():  # without a list to expect, a file that fails to collect
                found.setdefault(path, TestOutcome(path, "error", f"collection failed: {detail}"))
            if checked.collected is None and not errors:
                found["."] = TestOutcome(".", "error", _death(ran, "before collecting the tests"))
                return result()
        if checked.unfinished is not None:
            found[checked.unfinished] = TestOutcome(
                checked.unfinished, "timeout" if _timed_out(ran) else "failed", _death(ran, "during this test"))
            progress = True
        if not progress:
            for nodeid in [n for n in expected if n not in found]:
                error = errors.get(nodeid.split("::")[0])
                found[nodeid] = TestOutcome(nodeid, "error" if error else "failed",
                                            f"not collected: {error}" if error else
                                            _death(ran, "before its outcome reached the gate"))
            return result()


class Collection(msgspec.Struct, frozen=True):
    """What pytest collects in a run that runs nothing: the node ids in its order; by path, each file it could
    not collect (or "." when pytest stopped before collecting), and what the base's configuration deselected,
    as outcomes; what did not add up; the tests skipped whatever runs before them (their marks), with pytest's
    report of the skip; the tests the suite runs again when they fail, with how many times; the files and
    folders its configuration left out (pytest's ignore hook), from its root, and those it skipped as it
    collected them, with pytest's report of the skip."""

    collected: tuple[str, ...]
    outcomes: dict[str, TestOutcome]
    tampered: tuple[str, ...] = ()
    skips: dict[str, str] = msgspec.field(default_factory=dict)
    marked_flaky: Mapping[str, int] = msgspec.field(default_factory=dict)
    ignored: tuple[str, ...] = ()
    skipped_files: Mapping[str, str] = msgspec.field(default_factory=dict)


def collect(sandbox: Sandbox, run: SuiteRun, deadline: float) -> Collection:
    """The tests pytest collects from `run.args`, in its order, in a run that runs none of them (pytest's
    `--collect-only`; no tripwire: nothing of a test runs)."""
    ran, records = _run_once(sandbox, run, list(run.args), None, max(1.0, deadline - time.monotonic()), (),
                             collect_only=True)
    label = f"{run.what}, their collection"
    checked = tripwire.read(records, (), None, label)
    if checked.outcomes or checked.unfinished:
        checked.tampered.append("a test ran in a run that only collects")
    if checked.tampered:
        return Collection((), {}, tuple(f"{label}: {line}" for line in checked.tampered))
    outcomes: dict[str, TestOutcome] = {}
    _take(checked, outcomes, {})
    outcomes |= {path: TestOutcome(path, "error", f"collection failed: {detail}")
                 for path, detail in checked.errors.items()}
    if checked.collected is None and not checked.errors:
        outcomes["."] = TestOutcome(".", "error", _death(ran, "before collecting the tests"))
    return Collection(tuple(checked.collected or ()), outcomes, skips=checked.skips,
                      marked_flaky=checked.marked_flaky, ignored=checked.ignored,
                      skipped_files=checked.skipped_files)


def confirm(sandbox: Sandbox, run: SuiteRun, tests: Sequence[str], others: Mapping[str, TestOutcome],
            deadline: float, progress: Progress = QUIET) -> SuiteResult:
    """`tests` once more (each skipped or xfailed after a tripwire had failed in its run, where a conftest that
    skips what follows a failure would have skipped it) with the rest of their files among `others` (the run's
    outcomes: what they may follow, in pytest's order, which the run keeps), and tripwires on up to three of
    `others` in other files, so that no tripwire's failure comes before them in their own file; with no other
    file, tripwires anywhere, as in any run. A test that timed out hosts none: it would only hold the run for
    its timeout again. The outcomes of `tests` only; `progress` counts the run's tests."""
    files = set(files_of(tests))
    mine = [nodeid for nodeid in others if "::" in nodeid and nodeid.split("::")[0] in files]
    hosts = [nodeid for nodeid, outcome in others.items() if "::" in nodeid and nodeid.split("::")[0] not in files
             and outcome.status != "timeout"]
    hosts = _RANDOM.sample(hosts, min(_HOSTS, len(hosts)))
    chosen = {*tests, *mine, *hosts}
    select = [nodeid for nodeid in dict.fromkeys([*others, *tests]) if nodeid in chosen]  # (pytest's order)
    count = progress.count(run.what, len(select))
    try:
        found = _shard(sandbox, run, files_of(select), select, deadline, lambda: tripwire.plan(hosts), count)
    finally:
        count.close()
    return replace(found, tests={nodeid: found.tests[nodeid] for nodeid in tests if nodeid in found.tests})


def control_plan(suspects: Sequence[Suspect], before: Sequence[str] = ()) -> tuple[list[str], tuple[Trip, ...]]:
    """What a control run (`control`) runs: the tests `before` (pytest's order), then each suspect's test not
    among them; each suspect's tripwire pinned to its host."""
    hosts = list(dict.fromkeys(suspect.host for suspect in suspects))
    select = [*before, *(nodeid for nodeid in hosts if nodeid not in before)]
    # A change seen before a test may have been seen before a tripwire's run of it, after its own: the guard
    # looks again there too (a tripwire that must pass runs none of the test's code).
    again = tuple(Trip(PASS, False, host=suspect.host) for suspect in suspects if suspect.replaced)
    trips = tuple(dict.fromkeys([*(suspect.trip for suspect in suspects if suspect.trip is not None), *again]))
    return select, trips


def control(sandbox: Sandbox, base: SuiteRun, suspects: Sequence[Suspect], progress: Progress = QUIET,
            before: Sequence[str] = ()) -> RunRecords:
    """The base's own suite (`base`) on the suspects' tests as `control_plan` lays them out: what tells
    tampering from the suite's way (gate/suite/tripwire.py's `confirmed`)."""
    select, trips = control_plan(suspects, before)
    seconds = _CONTROL_S + base.test_timeout * (len(select) + len(trips))
    what = f"{base.what}, the control run"
    count = progress.count(what, len(select))
    try:
        _, records = _run_once(sandbox, base, files_of(select), select, seconds, trips, count)
    finally:
        count.close()
    return tripwire.read(records, trips, select, what)


def file_prefixes(collected: Sequence[str], wanted: Sequence[str]) -> list[str]:
    """The tests of `collected` (pytest's order) from the start of each file of `wanted` to the last of
    `wanted` in it, in that order: each test of `wanted` with what its file runs before it."""
    wants = set(wanted)
    last: dict[str, int] = {}
    for index, nodeid in enumerate(collected):
        if nodeid in wants:
            last[nodeid.split("::")[0]] = index
    return [nodeid for index, nodeid in enumerate(collected) if index <= last.get(nodeid.split("::")[0], -1)]


def _run_once(sandbox: Sandbox, run: SuiteRun, args: list[str], select: list[str] | None, seconds: float,
              trips: Sequence[Trip], count: Count | None = None, collect_only: bool = False
              ) -> tuple[RunResult, list[dict[str, Any]]]:
    if run.made is not None:  # (its time is the suite's: the run has what is left of `seconds`)
        began = time.monotonic()
        run.made()
        seconds = max(1.0, seconds - (time.monotonic() - began))
    limits = replace(run.limits, wall_s=seconds, cpu_s=seconds, output_bytes=_OUTPUT_BYTES)
    key = secrets.token_hex(16)
    request = {"args": args, "select": select, "test_timeout": run.test_timeout, "plugins": list(run.plugins),
               "key": key, "tripwires": [trip.request() for trip in trips], "collect_only": collect_only,
               "rewritten": rewritten.given(run.rewritten, run.tree, args) if run.rewritten else {},
               "keep": run.keeps}
    result = sandbox.run(RunRequest(script="_gate_suite.py", harness=harness_files(),
                                    tree=run.tree,
                                    stdin=json.dumps(request).encode(), limits=limits, env=SUITE_ENV,
                                    python_path=run.python_path, read_only_tree=True,
                                    framework=True, loopback=True,
                                    on_result=_Tally(key, count) if count is not None else None))
    records = []
    for line in (result.result or b"").decode("utf-8", "replace").splitlines():
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(record, dict) and record.get("key") == key:
            records.append(record)
    if run.rewritten and run.keeps:  # (a head's run writes none: one there is a record the harness does not write)
        rewritten.keep(run.rewritten, run.tree, [record for record in records if "rewritten" in record])
        records = [record for record in records if "rewritten" not in record]
    return result, records


def harness_files() -> dict[str, bytes]:
    """The files of the program each run starts, by name."""
    return programs.harness("suite", _HARNESS, _SHARED)


@functools.cache
def harness_digest() -> str:
    """The sha256 of the program each run starts, all its files: what the code a run makes depends on."""
    digest = hashlib.sha256()
    for name, code in sorted(harness_files().items()):
        digest.update(name.encode() + b"\0" + hashlib.sha256(code).digest())
    return digest.hexdigest()


# The longest line a test's record can be (its report, its traceback's entries), with room to spare.
_RECORD_BYTES = 256 * 1024


class _Tally:
    """Counts a run's tests as their records arrive on its channel (`RunRequest.on_result`): a line that starts
    as the harness writes a test's outcome (`{"test": `) and carries the run's key is one more test; the first
    list of the tests collected gives a total the count did not know. Only a count: the records themselves are
    read and checked once the run is over (`tripwire.read`)."""

    def __init__(self, key: str, count: Count) -> None:
        self._key = f'"key": "{key}"'.encode()
        self._count = count
        self._rest = b""
        self._skipping = False  # the rest of a line longer than any record the harness writes

    def __call__(self, data: bytes) -> None:
        if self._skipping:
            end = data.find(b"\n")
            if end < 0:
                return
            data, self._skipping = data[end + 1:], False
        *lines, rest = (self._rest + data).split(b"\n")
        self._skipping = len(rest) > _RECORD_BYTES
        self._rest = b"" if self._skipping else rest
        for line in lines:
            if self._key not in line:
                continue
            if line.startswith(b'{"test": '):
                self._count.add()
            elif line.startswith(b'{"collected": ') and self._count.total is None:
                with contextlib.suppress(ValueError, KeyError, TypeError, RecursionError):
                    self._count.expect(len(json.loads(line)["collected"]))


def _asked(checked: RunRecords) -> RunRecords:
    """`checked` with each matched test (one pytest collected in place of an id asked for) under the id asked
    for, so that the run's outcomes answer what the gate asked; `matched` still says which was which."""
    if not checked.matched:
        return checked
    named = checked.matched.get
    checked.collected = [named(nodeid, nodeid) for nodeid in checked.collected or ()]
    checked.outcomes = {named(nodeid, nodeid): {**record, "test": named(nodeid, nodeid)}
                        for nodeid, record in checked.outcomes.items()}
    checked.unfinished = named(checked.unfinished, checked.unfinished) if checked.unfinished else None
    checked.after_failing = {named(nodeid, nodeid) for nodeid in checked.after_failing}
    def asked(seen: Any) -> Any:
        """A change or an object seen in a matched test (a Replaced, an Equal, or None) under the asked test's id:
        the control run on the base runs that one."""
        return seen and replace(seen, test=named(seen.test, seen.test))

    checked.replaced = [asked(change) for change in checked.replaced]
    checked.suspects = [replace(suspect, replaced=asked(suspect.replaced), equal=asked(suspect.equal))
                        for suspect in checked.suspects]
    return checked


def _take(checked: RunRecords, found: dict[str, TestOutcome], errors: dict[str, str]) -> bool:
    """Fill `found` (and `errors`) from a run's checked records; whether any test finished."""
    for path, detail in checked.errors.items():
        errors.setdefault(path, detail)
    for nodeid in checked.deselected:
        found.setdefault(nodeid, TestOutcome(nodeid, "deselected", "deselected by the base's configuration"))
    for nodeid, record in checked.outcomes.items():
        status = str(record.get("status", "failed"))
        # (a passing test has no report: a passed outcome's detail is only what the gate adds, gate/suite/order.py)
        found.setdefault(nodeid, TestOutcome(
            nodeid, status, "" if status == "passed" else clip(str(record.get("detail", ""))),
            _seconds(record.get("seconds")), _line(record.get("line")), _trace(record.get("trace")),
            _seconds(record.get("span"))))
    return bool(checked.outcomes)


# Traceback entries a test's outcome keeps (the harness sends at most as many).
_TRACE = 200
# Characters of a test's report kept: its head (where the traceback starts) and its tail (the error), as the
# harness cuts them (a record the tests' process wrote itself has no other bound).
_HEAD, _TAIL = 1500, 3500


def clip(detail: str) -> str:
    """A test's report within _HEAD + _TAIL characters: its middle cut, saying how much."""
    if len(detail) <= _HEAD + _TAIL:
        return detail
    return f"{detail[:_HEAD]}\n[... {len(detail) - _HEAD - _TAIL} characters cut ...]\n{detail[-_TAIL:]}"


def _line(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _trace(value: object) -> tuple[tuple[str, int], ...]:
    """A record's traceback entries that are a path and a line, at most _TRACE of them."""
    if not isinstance(value, list):
        return ()
    entries = [(entry[0], line) for entry in value[-_TRACE:]
               if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)
               and (line := _line(entry[1])) is not None]
    return tuple(entries)


def _seconds(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 else 0.0


def _timed_out(result: RunResult) -> bool:
    return result.timed_out or result.killed_reason == "cpu limit"


def _death(result: RunResult, when: str) -> str:
    if _timed_out(result):
        return f"the test process ran out of time {when}"
    if result.killed_reason:
        how = f"was killed ({result.killed_reason})"
    elif result.signal is not None:
        how = f"was killed by signal {result.signal}"
    else:
        how = f"exited with status {result.exit_code}"
    tail = result.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
    return f"the test process {how} {when}" + (": " + " | ".join(tail) if tail else "")
