"""The head's run of the repository's suite, against the base's outcomes (docs/repository.md).

With `tests.baseline: base` (the default) each test's status on the base is what the head's outcome is compared
with (gate/checks/tests.py charges a test that passes on the base and not on the head); with `none` there is no
base run. The base runs only where its status decides something: pytest collects the base's suite (which tests
there are, in pytest's order, whether it runs at all, and which tests their marks skip whatever runs before
them: a `skip` mark, a `skipif` on a value, unittest's `skip`; skipped on the base, they never run there), the
head's suite runs in that order, and then the base runs the tests the head did not pass (failed, errored,
skipped, timed out, not collected), each with the tests before it in its file. What the gate learns of the base
is cached (`Baseline`), so a later head runs on the base only the tests no earlier head needed. A base whose
suite does not run in the gate (a file that fails to collect, a missing fixture, no test, fewer than its files
define, every test skipped, no test passing there nor on the head) stops the gate (exit 3) and is never
cached. A test charged is first run again on the head in the base's order (gate/suite/order.py). Tests the head
adds run apart from the base's (their module code never shares a process with a base test).
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
from msgspec.structs import replace

from gate import __version__
from gate.environment import cache
from gate.errors import GateFailure
from gate.limits import sandbox_limits
from gate.policy.model import Policy
from gate.progress import QUIET, Progress
from gate.sandbox.base import Sandbox
from gate.subject import Subject
from gate.suite import order, rewritten
from gate.suite.blind import blind, cause, compiled_in
from gate.suite.harness import function_key, function_of
from gate.suite.run import (
    SuiteResult,
    SuiteRun,
    TestOutcome,
    collect,
    confirm,
    control,
    control_plan,
    file_prefixes,
    files_of,
    gist,
    harness_digest,
    longest_share,
    run_suite,
    took,
    why,
)
from gate.suite.selection import SuiteTrees
from gate.suite.tripwire import Equal, Replaced, RunRecords, Suspect, Trip, confirmed, right
from gate.suite.trust import under
from gate.syntax import parse_python
from gate.verdict import listing

PASSED = "passed"


class Outcomes(msgspec.Struct, frozen=True):
    """What a suite's runs found: each base test's status on the base where the gate needed it (None without a
    baseline; a test the head passed may have none), each base test's outcome on the head, and each outcome of
    the tests the head adds; the evidence that the head's runs were tampered with, each in one line naming its
    run (then none of it is a result); what the gate saw and says (an order-dependent test, ids that change from
    run to run); why each base test that did not pass on the base did not (its report's gist); and the seconds
    each base test the base ran took there."""

    base: dict[str, str] | None
    head: dict[str, TestOutcome]
    added: dict[str, TestOutcome]
    tampered: tuple[str, ...] = ()
    said: tuple[str, ...] = ()
    base_details: dict[str, str] = msgspec.field(default_factory=dict)
    base_seconds: dict[str, float] = msgspec.field(default_factory=dict)


class Baseline(msgspec.Struct):
    """What the gate knows of the base's suite, cached by the base (`_stored`): the tests pytest collects there,
    in its order; the status of each that ran on the base, and the gist of the report of each that did not pass;
    the test functions whose parameter ids change from one collection to the next. A test with no status has
    not run on the base (a head passed it): it runs there when a head does not pass it, so a baseline from a
    partial run is never taken for a whole one. The tests skipped by their marks have their status from the
    collection (`skipped`: they never ran). `controls`: what the base's own run of a test showed when a head's
    assertion there found an object equal to everything (gate/suite/tripwire.py's `confirmed`), the objects
    its assertions found equal there, (site, operand, how) each; kept only from a control run where the test
    passed, so that a later head's suspect there is judged as that run would judge it, without a run.
    `seconds`: what each test function added to a head's run that added up (all its parameters), to share the
    next head's run out evenly over the workers (run.shares), kept until a later head's would share it out
    sooner (`_sooner`): a head can only make the next run slower by it. `marked_flaky`: the tests the base's
    collection says its suite runs again when they fail (a `flaky` mark), with how many times (order.check).
    `hosts_shown`: what control runs showed of each suspect's test (`_shown`), by all that the run did up to it
    (`_contexts`): a later head whose suspects ask for what was run is judged without a run (wrapt's monkey
    patching tests, a control run of most of the suite on every push). `skipped_files`: the files and folders
    pytest skipped as it collected them (a module-level `importorskip` of what the environment lacks), with its
    report of the skip: none of their tests gates a change, which the verdict says. `took`: the seconds each test
    took in the base's own run of it, where the base ran it (a head's run of it past its limit says how near the
    base was)."""

    collected: list[str]
    statuses: dict[str, str] = msgspec.field(default_factory=dict)
    details: dict[str, str] = msgspec.field(default_factory=dict)
    unstable: set[str] = msgspec.field(default_factory=set)
    skipped: set[str] = msgspec.field(default_factory=set)
    controls: dict[str, list[tuple[str, str, str]]] = msgspec.field(default_factory=dict)
    seconds: dict[str, float] = msgspec.field(default_factory=dict)
    marked_flaky: dict[str, int] = msgspec.field(default_factory=dict)
    hosts_shown: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)
    skipped_files: dict[str, str] = msgspec.field(default_factory=dict)
    took: dict[str, float] = msgspec.field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {"collected": self.collected, "statuses": self.statuses, "details": self.details,
                "unstable": sorted(self.unstable), "skipped": sorted(self.skipped),
                "controls": {nodeid: [list(seen) for seen in found] for nodeid, found in self.controls.items()},
                "seconds": self.seconds, "flaky": self.marked_flaky, "hosts_shown": self.hosts_shown,
                "skipped_files": self.skipped_files, "took": self.took}

    @classmethod
    def from_json(cls, data: object) -> Baseline | None:
        """The baseline cached as `data`, or None when it is not one (another shape: never read as one)."""
        if not isinstance(data, dict) or not isinstance(data.get("collected"), list):
            return None
        parts = data.get("statuses"), data.get("details"), data.get("unstable"), data.get("skipped")
        if not isinstance(parts[0], dict) or not isinstance(parts[1], dict) or not isinstance(parts[2], list) \
                or not isinstance(parts[3], list):
            return None
        collected = [str(nodeid) for nodeid in data["collected"]]
        known = set(collected)
        controls, seconds, flaky = data.get("controls", {}), data.get("seconds", {}), data.get("flaky", {})
        shown, skipped_files, took = data.get("hosts_shown", {}), data.get("skipped_files", {}), data.get("took", {})
        functions = {function_key(nodeid) for nodeid in collected}
        return cls(collected, {str(k): str(v) for k, v in parts[0].items() if k in known},
                   {str(k): str(v) for k, v in parts[1].items() if k in known}, {str(f) for f in parts[2]},
                   {str(nodeid) for nodeid in parts[3] if nodeid in known},
                   {str(nodeid): [(str(seen[0]), str(seen[1]), str(seen[2])) for seen in found]
                    for nodeid, found in (controls.items() if isinstance(controls, dict) else ())
                    if nodeid in known and isinstance(found, list)
                    and all(isinstance(seen, list) and len(seen) == 3 for seen in found)},
                   {str(name): float(taken) for name, taken in (seconds.items() if isinstance(seconds, dict) else ())
                    if name in functions and isinstance(taken, (int, float)) and 0 <= taken < math.inf},
                   {nodeid: tries for nodeid, tries in (flaky.items() if isinstance(flaky, dict) else ())
                    if nodeid in known and tries in (1, 2)},
                   {str(key): host for key, host in (shown.items() if isinstance(shown, dict) else ())
                    if isinstance(host, dict)},
                   {str(path): str(said) for path, said in
                    (skipped_files.items() if isinstance(skipped_files, dict) else ())},
                   {str(nodeid): float(taken) for nodeid, taken in (took.items() if isinstance(took, dict) else ())
                    if nodeid in known and isinstance(taken, (int, float)) and 0 <= taken < math.inf})

    def merge(self, other: Baseline) -> None:
        """Add what `other` (the same base's, cached by another gate meanwhile) knows and this does not."""
        self.statuses = {**other.statuses, **self.statuses}
        self.details = {**other.details, **self.details}
        self.unstable |= other.unstable
        self.skipped |= other.skipped
        self.marked_flaky = {**other.marked_flaky, **self.marked_flaky}
        self.controls = {**other.controls, **self.controls}
        self.hosts_shown = _last({**self.hosts_shown, **other.hosts_shown})
        self.seconds = self.seconds or other.seconds
        self.skipped_files = self.skipped_files or other.skipped_files
        self.took = {**other.took, **self.took}


def against_base(sandbox: Sandbox, policy: Policy, subject: Subject, suite: SuiteTrees,
                 progress: Progress = QUIET) -> Outcomes:
    """Run `suite` (the trees of `policy.tests`) on the head, against the base's outcomes when the policy asks
    for a baseline, then the tests the head adds; raises GateFailure when the base's suite does not run in the
    gate. `progress` counts each run's tests."""
    assert policy.tests is not None
    head = suite_run(policy, subject, suite, suite.tree, subject.import_roots, "the head's tests")
    if policy.tests.baseline == "base":
        try:
            scored = _against_baseline(sandbox, policy, subject, suite, head, progress)
        except _Refusal as refused:
            raise GateFailure(f"the base's suite does not run in the gate: {refused}; {_fix(subject)}") from None
    else:
        scored = _Scored(None, run_suite(sandbox, head, None, _deadline(policy), progress))
    outcomes = scored.head
    added = SuiteResult({})
    if suite.added and suite.added_tree is not None and not outcomes.tampered:
        added = run_suite(sandbox, replace(head, tree=suite.added_tree, args=suite.added,
                                           what="the tests the change adds"), None, _deadline(policy), progress)
    base = scored.base
    return Outcomes(None if base is None else base.statuses, outcomes.tests, added.tests,
                    (*outcomes.tampered, *added.tampered, *_confirmed(sandbox, policy, subject, suite, (
                        *outcomes.suspects, *_tripwires(added.suspects)), base, progress, outcomes)),
                    tuple(scored.said), {} if base is None else base.details, {} if base is None else base.took)


class _Scored(msgspec.Struct):
    """The base as the head is scored against it (its statuses may hold, for an order-dependent test, its
    status in the head's order: gate/suite/order.py), the head's outcomes, and what the gate says of them."""

    base: Baseline | None
    head: SuiteResult
    said: list[str] = msgspec.field(default_factory=list)


def _deadline(policy: Policy) -> float:
    assert policy.tests is not None
    return time.monotonic() + policy.tests.timeout


def _against_baseline(sandbox: Sandbox, policy: Policy, subject: Subject, suite: SuiteTrees, head: SuiteRun,
                      progress: Progress) -> _Scored:
    """The head's suite in the base's order, then on the base what decides a charge (module docstring)."""
    assert suite.base_tree is not None
    stored = _stored(subject, suite, cache.cache_dir(os.environ))
    base_run = suite_run(policy, subject, suite, suite.base_tree, suite.base_roots, "the base's tests")
    known = Baseline.from_json(cache.read_json(stored))
    if known is None:
        known = _collection(sandbox, suite, base_run, _deadline(policy))
        _keep(stored, known)
    # The head's shares may cut a file that holds most of the suite: a test that fails there for want of the
    # tests before it runs again in the base's order before it costs (order.check).
    found = run_suite(sandbox, head, known.collected, _deadline(policy), progress, cut_files=True,
                      seconds=known.seconds)
    if found.tampered:
        return _Scored(known, found)
    timed = _seconds(found, known, head.test_timeout)
    if _sooner(known, timed, head.workers):
        known.seconds = timed
        _learn(stored, known, seconds=known.seconds)
    # The base runs each test the head did not pass, and each the head collected under another parameter id
    # (unless the base's own ids are known to change), unless an earlier gate ran it there.
    renamed = {asked: nodeid for asked, nodeid in found.renamed.items() if function_of(asked) not in known.unstable}
    wanted = [nodeid for nodeid in known.collected if nodeid in renamed or (
        found.tests[nodeid].status != PASSED and nodeid not in known.statuses)]
    ran = _on_base(sandbox, base_run, known, wanted, stored, _deadline(policy), progress) if wanted \
        else SuiteResult({})
    said = [*_skipped_files(known), *_matched(found, known)]
    _refuse(known, ran.tests, stored,
            lambda rest: _on_base(sandbox, base_run, known, rest, stored, _deadline(policy), progress).tests)
    _refuse_none_passing(known, found, stored, suite)
    found = _again(sandbox, head, known.statuses, found, _deadline(policy), progress)
    if found.tampered:
        return _Scored(known, found)
    checked = order.check(sandbox, head, base_run, known, ran, found, _deadline(policy), progress)
    return _Scored(replace(known, statuses=checked.base), checked.head, [*said, *checked.said])


def _collection(sandbox: Sandbox, suite: SuiteTrees, base: SuiteRun, deadline: float) -> Baseline:
    """The base's suite as pytest collects it; raises _Refusal when it does not run in the gate."""
    assert suite.base is not None
    found = collect(sandbox, base, deadline)
    problem = ("its records do not add up: " + listing(list(found.tampered), "; ", shown=2) if found.tampered
               else collection_refusal(found.collected, found.outcomes,
                                       plain_tests(suite.base(), suite.args,
                                                   (*found.ignored, *found.skipped_files))))
    if problem:
        raise _Refusal(problem)
    return Baseline(list(found.collected), {nodeid: "skipped" for nodeid in found.skips}, dict(found.skips),
                    skipped=set(found.skips), marked_flaky=dict(found.marked_flaky),
                    skipped_files=dict(found.skipped_files))


def _skipped_files(known: Baseline) -> list[str]:
    """What the verdict says of the files pytest skips as it collects the base's suite: none of their tests ran
    on either side (the head runs the base's test files)."""
    if not known.skipped_files:
        return []
    each = [f"{path} ({cause('skipped', said, lambda _: False)})" for path, said in sorted(known.skipped_files.items())]
    return [f"pytest skips {listing(each, '; ', shown=3)} as it collects the base's suite, so none of the tests "
            "there gated this change; a module it cannot import is for the environment to install "
            "(environment.extras, groups or requirements)"]


def _on_base(sandbox: Sandbox, base: SuiteRun, known: Baseline, wanted: list[str], stored: Path, deadline: float,
             progress: Progress) -> SuiteResult:
    """Run `wanted` on the base, each with the tests before it in its file (what a test may need to have run
    first), and add what that teaches to `known` and to the cache."""
    result = run_suite(sandbox, base, file_prefixes(known.collected, wanted), deadline, progress)
    if result.tampered:  # (never from an honest run: the harness writes every record in turn)
        raise _Refusal("its records do not add up: " + listing(list(result.tampered), "; ", shown=2))
    known.unstable |= {function for asked in result.renamed if (function := function_of(asked))}
    for nodeid, outcome in result.tests.items():
        known.statuses[nodeid] = outcome.status
        known.took[nodeid] = round(outcome.seconds, 3)
        if outcome.status != PASSED:
            known.details[nodeid] = why(outcome)
    _keep(stored, known)
    return result


def _matched(found: SuiteResult, known: Baseline) -> list[str]:
    """Settle each base test the head collected only under another parameter id: the same test when the
    base's own ids change from one collection to the next (ids from the clock), said; else the head changed
    its parameters, and the base's test is not collected there (as such it is charged)."""
    said: list[str] = []
    moving: list[str] = []
    for asked, nodeid in found.renamed.items():
        if function_of(asked) in known.unstable:
            moving.append(f"{asked} as {nodeid}")
            continue
        found.tests[asked] = TestOutcome(asked, "error", f"not collected on the head: {function_of(asked)} is "
                                         f"collected there with other parameters ({nodeid}), and the base's own "
                                         "ids do not change from run to run")
    if moving:
        said.append(f"{len(moving)} tests' parameter ids change from one collection to the next (computed at "
                    "collection time: the clock, a random value), so each was matched to the test of the same "
                    f"function in the same place: {listing(moving, '; ', shown=3)}")
    return said


def _refuse(known: Baseline, ran: dict[str, TestOutcome], stored: Path,
            more: Callable[[list[str]], dict[str, TestOutcome]]) -> None:
    """Raise _Refusal when what ran on the base shows that its suite does not run in the gate: a test asks
    for a fixture nothing provides, or every test collected is skipped or xfailed (when every test with a
    status is, the rest run on the base first: `more`). Such a baseline leaves the cache."""
    problem = _fixture_refusal(ran)
    ran_there = {nodeid: status for nodeid, status in known.statuses.items() if nodeid not in known.skipped}
    whole = bool(known.collected) and known.skipped >= set(known.collected)  # every test skipped by its marks
    if not problem and (ran_there or whole) and all(status in _SKIPS for status in ran_there.values()):
        rest = [nodeid for nodeid in known.collected if nodeid not in known.statuses]
        if rest:
            ran = {**ran, **more(rest)}
            problem = _fixture_refusal(ran)
        if not problem and all(known.statuses.get(nodeid) in _SKIPS for nodeid in known.collected):
            nodeid = known.collected[0]
            problem = (f"every test pytest collected was skipped or xfailed ({len(known.collected)}; {nodeid}"
                       f"{gist(known.details.get(nodeid, ''))})")
    if problem:
        stored.unlink(missing_ok=True)
        raise _Refusal(problem)


_SKIPS = ("skipped", "xfailed")
_HOSTS_KEPT = 4096  # contexts of suspects' tests that control runs showed
_REBALANCE = 0.1  # how much sooner a head's seconds must end the next run to be kept in place of the kept ones


def _refuse_none_passing(known: Baseline, found: SuiteResult, stored: Path, suite: SuiteTrees) -> None:
    """Raise _Refusal when no test passes, on the head or on the base (where, the head having passed none,
    every test ran): a suite that fails whole in the gate (a module every test needs that the environment
    lacks) would read "fails on the base too" for every test, and charge nothing. Such a baseline leaves the
    cache. A head that passes tests shows that the suite runs here."""
    if not found.tests or any(outcome.status == PASSED for outcome in found.tests.values()) \
            or any(known.statuses.get(nodeid) == PASSED for nodeid in known.collected):
        return
    stored.unlink(missing_ok=True)
    assert suite.base is not None
    seen = blind(known.statuses, known.details, found.tests, compiled_in(suite.base()))
    causes = "; ".join(f"{cause.tests} {cause.kind}: {cause.cause}" for cause in seen.causes[:3])
    raise _Refusal(f"none of the {len(known.collected)} tests it collects passes there, nor on the head"
                   + (f" ({causes})" if causes else ""))


def _again(sandbox: Sandbox, head: SuiteRun, base: dict[str, str], found: SuiteResult, deadline: float,
           progress: Progress) -> SuiteResult:
    """`found` with each test that passes on the base and was skipped or xfailed after a tripwire had failed
    in its run (a conftest that skips or xfails what follows a failure) run once more, away from any
    tripwire's failure (run.confirm): its outcome then is the head's."""
    tests = [nodeid for nodeid, outcome in found.tests.items() if base.get(nodeid) == PASSED
             and outcome.status in _SKIPS and nodeid in found.after_failing]
    if not tests:
        return found
    again = confirm(sandbox, replace(head, what=f"{head.what} after a tripwire's failure, again away from it"),
                    tests, found.tests, deadline, progress)
    return replace(found, tests={**found.tests, **again.tests}, tampered=again.tampered,
                   suspects=(*found.suspects, *again.suspects))


def _tripwires(suspects: tuple[Suspect, ...]) -> tuple[Suspect, ...]:
    """The tripwires among `suspects` of the tests the change adds: what their own assertions find equal is
    theirs (gate/suite/equality.py confirms the base's tests)."""
    return tuple(suspect for suspect in suspects if suspect.equal is None)


def _confirmed(sandbox: Sandbox, policy: Policy, subject: Subject, suite: SuiteTrees,
               suspects: tuple[Suspect, ...], known: Baseline | None, progress: Progress, head: SuiteResult
               ) -> list[str]:
    """The evidence among the head's tripwires that read the wrong outcome: each that the base's own suite runs
    right. Without the base's tree (`baseline: none`) nothing can tell the suite's way from tampering: each is
    evidence. An object equal to everything in a test whose control the baseline `known` keeps is judged by
    what that control showed; the rest by a control run, whose clean tests' findings are kept (`_clean`), or,
    when earlier control runs showed each of its tests in the same context, by what they showed. A test
    before which something it depends on was seen changed runs there after the tests that ran before it in
    the head's run (`head`), else its file's: a test of the suite that patches a name or a helper for good
    (wrapt's monkey patching tests) does it on the base too."""
    if not suspects:
        return []
    if suite.base_tree is None:
        return [f"{suspect.run}: {suspect.seen}" for suspect in suspects]
    kept = known.controls if known is not None else {}
    cached = [suspect for suspect in suspects if suspect.equal is not None and suspect.equal.test in kept]
    rest = [suspect for suspect in suspects if suspect not in cached]
    evidence = set(confirmed(cached, _kept_control(cached, kept)))
    if rest:
        collected = known.collected if known is not None else []
        prior = {nodeid for suspect in rest if suspect.replaced is not None for nodeid in (
            head.before(suspect.host) or file_prefixes(collected, [suspect.host]))}
        before = [nodeid for nodeid in collected if nodeid in prior]
        order = _run_order(rest, before, collected)
        contexts = _contexts(rest, order)
        records = _replayed(contexts, known.hosts_shown) if known is not None and contexts else None
        if records is None:
            records = control(sandbox, suite_run(policy, subject, suite, suite.base_tree, suite.base_roots,
                                                 "the base's tests"), rest, progress, before)
            clean = _clean(records, rest, before, order, known.statuses) if known is not None else set()
            if known is not None and clean:
                _learn(_stored(subject, suite, cache.cache_dir(os.environ)), known,
                       controls=_learned(rest, records, clean), shown=_shown(records, contexts, clean))
        evidence.update(confirmed(rest, records))
    return [line for line in dict.fromkeys(f"{suspect.run}: {suspect.seen}" for suspect in suspects)
            if line in evidence]


def _kept_control(suspects: list[Suspect], kept: dict[str, list[tuple[str, str, str]]]) -> RunRecords:
    """The control run the baseline keeps for the tests of `suspects`, as its records read: each passed, with
    the objects equal to everything its assertions found there."""
    tests = {suspect.equal.test for suspect in suspects if suspect.equal is not None}
    return RunRecords(outcomes={nodeid: {"status": PASSED} for nodeid in tests},
                      equal=[Equal(nodeid, site, operand, "", how) for nodeid in tests
                             for site, operand, how in kept[nodeid]])


def _learned(suspects: list[Suspect], records: RunRecords, clean: set[str]) -> dict[str, list[tuple[str, str, str]]]:
    """What a control run's `records` show of each suspect's test where an assertion found an object equal to
    everything: kept only where the test is `clean` (`_clean`: it passed, after tests that did as the base does)
    with no tripwire pinned to it (a later control may pin none)."""
    pinned = {suspect.trip.host for suspect in suspects if suspect.trip is not None}
    return {suspect.equal.test: [(seen.site, seen.operand, seen.how) for seen in records.equal
                                 if seen.test == suspect.equal.test]
            for suspect in suspects if suspect.equal is not None and suspect.equal.test not in pinned
            and suspect.equal.test in clean}


def _run_order(suspects: list[Suspect], before: list[str], collected: list[str]) -> list[str]:
    """The tests of the control run that `suspects` and `before` ask for (run.control_plan) in the order the
    harness runs them: its files in turn, each file's in the base's order. None known (empty) when a test asked
    for is not one the base collects: which it runs in its place depends on the rest."""
    select, _ = control_plan(suspects, before)
    place = {nodeid: index for index, nodeid in enumerate(collected)}
    if any(nodeid not in place for nodeid in select):
        return []
    rank = {path: index for index, path in enumerate(files_of(select))}
    return sorted(select, key=lambda nodeid: (rank[nodeid.split("::")[0]], place[nodeid]))


def _contexts(suspects: list[Suspect], order: list[str]) -> dict[str, str]:
    """Each suspect's test in the control run that runs `order` (`_run_order`), with a key for all that the run
    does up to it: the files it collects (pytest imports each before any test runs), then the tests up to it
    and itself in `order` with the tripwires pinned to each (what a test leaves behind stays for the tests after
    it), and the test after it (which its teardown and its tripwires after it set up for)."""
    if not order:
        return {}
    _, trips = control_plan(suspects)
    pinned: dict[str, list[dict[str, Any]]] = {}
    for trip in trips:
        pinned.setdefault(str(trip.host), []).append(trip.request())
    hosts = {suspect.host for suspect in suspects}
    so_far, contexts = hashlib.sha256(json.dumps(files_of(order)).encode() + b"\n"), {}
    for index, nodeid in enumerate(order):
        so_far.update(json.dumps([nodeid, pinned.get(nodeid, [])]).encode() + b"\n")
        if nodeid in hosts:
            after = order[index + 1] if index + 1 < len(order) else None
            contexts[nodeid] = hashlib.sha256(so_far.digest() + json.dumps(after).encode()).hexdigest()[:32]
    return contexts


def _clean(records: RunRecords, suspects: list[Suspect], before: list[str], order: list[str],
           statuses: dict[str, str]) -> set[str]:
    """The suspects' tests that a control run's `records` show as the base does them, and that what is kept
    may say so of: none unless the run ran every test and tripwire it was asked for to its end in `order` (none
    timed out or took its process with it, the base's own hooks kept the order); then each test that passed,
    each of its tripwires carried out right, after tests that each did as the base does (its status on the
    base where the baseline has one, else passed; each of their tripwires right). So a test that failed once
    on a loaded machine, its clean-up not run, never leaves a change that spares a later head's."""
    select, trips = control_plan(suspects, before)
    finished = [records.outcomes.get(nodeid) for nodeid in select] + [record for _, record in records.trips]
    if not order or records.collected != order or records.tampered or records.unfinished is not None or \
            records.ended_in_trip or records.matched or len(records.trips) != len(trips) or \
            any(record is None or record.get("end") is True for record in finished):
        return set()
    hosts, clean = {suspect.host for suspect in suspects}, set()
    wrong = {str(trip.host) for trip, record in records.trips if not right(trip, record)}
    for nodeid in order:
        status = records.outcomes[nodeid].get("status")
        if nodeid in wrong or status != statuses.get(nodeid, PASSED):
            break
        if nodeid in hosts and status == PASSED:
            clean.add(nodeid)
    return clean


def _shown(records: RunRecords, contexts: dict[str, str], clean: set[str]) -> dict[str, dict[str, Any]]:
    """What a control run's `records` show of each suspect's test that is `clean` (`_clean`), by its context's
    key (`_contexts`): all that `confirmed` reads of it but its status, which is passed (as no kept tripwire's
    ended its process). What is kept can only say that the base did it right, so that a head is never spared by
    what one run of the base happened to do."""
    return {key: {"replaced": [seen.what for seen in records.replaced if seen.test == host],
                  "equal": [[seen.site, seen.operand, seen.what, seen.how] for seen in records.equal
                            if seen.test == host],
                  "trips": [[[trip.kind, trip.before, trip.at],
                             {"status": record.get("status"), "detail": str(record.get("detail", "")).lstrip()[:200],
                              "confirmed": list(record.get("confirmed", ()))}]
                            for trip, record in records.trips if trip.host == host]}
            for host, key in contexts.items() if host in clean}


def _replayed(contexts: dict[str, str], shown: dict[str, dict[str, Any]]) -> RunRecords | None:
    """The control run's records as earlier runs showed each of its tests in the same context (`_shown`), or
    None when one of them was not run so (or its record is not in that shape)."""
    if any(key not in shown for key in contexts.values()):
        return None
    records = RunRecords()
    try:
        for host, key in contexts.items():
            seen = shown[key]
            records.outcomes[host] = {"status": PASSED}
            records.replaced += [Replaced(host, str(what)) for what in seen["replaced"]]
            records.equal += [Equal(host, *(str(part) for part in found)) for found in seen["equal"]]
            records.trips += [(Trip(str(kind), bool(before), float(at), host), dict(record))
                              for (kind, before, at), record in seen["trips"]]
    except (AttributeError, KeyError, TypeError, ValueError):
        return None
    return records


def _last(shown: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The contexts last shown, at most _HOSTS_KEPT (a head's tripwires are placed at random: most never recur)."""
    return dict(list(shown.items())[-_HOSTS_KEPT:])


def suite_run(policy: Policy, subject: Subject, suite: SuiteTrees, tree: Path, roots: tuple[str, ...], what: str
         ) -> SuiteRun:
    """How the suite runs in `tree` (the head's or the base's, whose own import roots `roots` come first): the
    environment's site-packages next, then the gate's pytest when the environment has none; the plugins the
    base declares loaded. `what` names its runs in a report; the base's own runs carry no tripwires."""
    assert policy.tests is not None
    kept = rewritten.store(cache.cache_dir(os.environ), {
        "environment": subject.environment.key if subject.environment else None, "runner": list(suite.runner),
        "harness": harness_digest()})
    return SuiteRun(tree=tree, args=suite.args, python_path=(*roots, *_sites(subject), *suite.runner),
                    limits=sandbox_limits(policy.limits), test_timeout=policy.tests.test_timeout,
                    workers=policy.tests.workers, plugins=_plugins(subject), what=what,
                    tripwires=tree != suite.base_tree, rewritten=kept, keeps=tree == suite.base_tree,
                    made=suite.base if tree == suite.base_tree else None)


def _sites(subject: Subject) -> tuple[str, ...]:
    return subject.environment.site_packages if subject.environment else ()


def _plugins(subject: Subject) -> tuple[str, ...]:
    return subject.environment.plugins if subject.environment else ()


def _stored(subject: Subject, suite: SuiteTrees, where: Path) -> Path:
    """Where the baseline of `suite` is cached: by the base's SHA, the environment and the suite's settings."""
    key = cache.digest({"base": suite.base_sha, "environment": subject.environment.key if subject.environment
                        else None, "paths": list(suite.args), "roots": list(suite.base_roots),
                        "gate": __version__, "runner": list(suite.runner), "plugins": list(_plugins(subject)),
                        "baseline": "collection, statuses, flaky tries and skipped files"})
    return where / "baselines" / f"{key}.json"


def _keep(stored: Path, known: Baseline) -> None:
    """Cache `known`, with what another gate cached for the same base meanwhile."""
    with cache.locked(stored.with_suffix(".lock")):
        there = Baseline.from_json(cache.read_json(stored))
        if there is not None and there.collected == known.collected:
            known.merge(there)
        cache.write_json(stored, known.to_json())


def _learn(stored: Path, known: Baseline, controls: dict[str, list[tuple[str, str, str]]] | None = None,
           seconds: dict[str, float] | None = None, shown: dict[str, dict[str, Any]] | None = None) -> None:
    """Add `controls` and what control runs `shown`, and put `seconds`, in the baseline cached for the same
    collection as `known` (and only in it: what a run of the head taught is never a status of the base's)."""
    if not (controls or seconds is not None or shown):
        return
    with cache.locked(stored.with_suffix(".lock")):
        there = Baseline.from_json(cache.read_json(stored))
        if there is not None and there.collected == known.collected:
            there.controls.update(controls or {})
            there.hosts_shown = _last({**there.hosts_shown, **(shown or {})})
            there.seconds = seconds if seconds is not None else there.seconds
            cache.write_json(stored, there.to_json())


def _sooner(known: Baseline, timed: dict[str, float], workers: int) -> bool:
    """Whether the seconds a head's run took (`timed`) share the next run out so that it ends sooner than the
    kept seconds do, by more than _REBALANCE, as `timed` times it: kept otherwise, so that run after run each
    test has the same tests before it (the same control runs, the same order for a test that depends on it)."""
    if not known.seconds:
        return True
    kept = longest_share(known.collected, workers, known.seconds, timed)
    return longest_share(known.collected, workers, timed, timed) < kept * (1 - _REBALANCE)


def _seconds(found: SuiteResult, known: Baseline, test_timeout: float) -> dict[str, float]:
    """What each of the base's test functions added to the head's run `found` (each test at most its
    timeout)."""
    taken: dict[str, float] = {}
    for nodeid in known.collected:
        outcome = found.tests.get(nodeid)
        if outcome is not None:
            name = function_key(nodeid)
            added = min(took(outcome), test_timeout)
            taken[name] = round(taken.get(name, 0.0) + added, 4)
    return taken


class _Refusal(Exception):
    """The base's suite does not run in the gate, and why (`against_base` says what to do about it)."""


def _fix(subject: Subject) -> str:
    """What to do about a base whose suite does not run: about its compiler or its build when it did not build
    in the sandbox, else about the environment."""
    compiler = dict(subject.facts).get("compiler", "")
    built = [note.removeprefix("base: ") for key, note in subject.facts if key == "build" and note.startswith("base: ")]
    if compiler.startswith("none: "):
        return (f"its project's compiled extensions are not built: this machine has no compiler the sandbox's "
                f"build can use ({compiler.removeprefix('none: ').partition('; ')[0]}); install a C compiler "
                "and the interpreter's headers where the gate runs (gcc and python3-dev; a hosted runner has "
                "both), and see `gate doctor --repo .`")
    if built:
        return (f"the base's build failed: {built[0]}; fix its build (or what the environment installs for it) "
                "and see `gate doctor --repo .`")
    return ("fix the base (or what the environment installs: environment.extras, groups or requirements) and see "
            "`gate doctor --repo .`")


def collection_refusal(collected: tuple[str, ...], outcomes: dict[str, TestOutcome], plain: dict[str, int]) -> str:
    """Why the base's collection cannot be a baseline, in pytest's own words, or "": it did not get to its
    tests, a file failed to collect, it collected no test, or fewer in all than the files plainly define
    (`plain`: file -> count)."""
    broken = [f"{nodeid}{gist(outcome.detail) or ': ' + outcome.detail.strip()}"
              for nodeid, outcome in sorted(outcomes.items()) if "::" not in nodeid and outcome.status == "error"]
    if broken:
        return listing(broken, "; ", shown=3)
    if not collected:
        return "pytest collected no test"
    if len(collected) >= sum(plain.values()):  # (parametrized tests count more; a file the base ignores, less)
        return ""
    counts: dict[str, int] = {}
    for nodeid in collected:
        counts[nodeid.split("::")[0]] = counts.get(nodeid.split("::")[0], 0) + 1
    short = [f"{path} defines {wanted} tests, pytest collected {counts.get(path, 0)}"
             for path, wanted in sorted(plain.items()) if counts.get(path, 0) < wanted]
    return f"pytest collected {len(collected)} tests where the files define {sum(plain.values())} (" + \
        listing(short, "; ", shown=3) + ")"


def _fixture_refusal(ran: dict[str, TestOutcome]) -> str:
    """The base's tests that asked for a fixture nothing provides (a plugin the environment lacks), or ""."""
    broken = [f"{nodeid}: {gist(outcome.detail).removeprefix(': ')}" for nodeid, outcome in sorted(ran.items())
              if outcome.status == "error" and _FIXTURE.search(outcome.detail)]
    return listing(broken, "; ", shown=3)


# pytest's words for a test that asks for a fixture nothing provides (a plugin that did not load).
_FIXTURE = re.compile(r"^E\s+fixture '[^']+' not found", re.MULTILINE)
# The file names pytest collects tests from when the configuration does not say otherwise.
_TEST_FILE = re.compile(r"^(test_.*|.*_test)\.py$")


def plain_tests(tree: Path, paths: tuple[str, ...], ignored: tuple[str, ...] = ()) -> dict[str, int]:
    """The tests each test file under `paths` plainly defines (`def test_*` at its top or in a top-level
    `class Test*`, each name once), by its path relative to `tree`: fewer collected means pytest did not run
    what the base holds. Not a file in or under `ignored`, which the suite's configuration leaves out (a
    conftest's `collect_ignore_glob` for another Python, as in the project's own CI) or pytest skipped as it
    collected it (a module-level `importorskip`)."""
    found: dict[str, int] = {}
    for path in paths:
        top = tree / path
        files = [top] if top.is_file() else sorted(top.rglob("*.py"))
        for file in files:
            if not _TEST_FILE.match(file.name) or under(file.relative_to(tree).as_posix(), ignored):
                continue
            try:
                module = parse_python(file.read_bytes())
            except (SyntaxError, ValueError):
                continue  # pytest says so: a collection error
            names = {node.name for node in module.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                     and node.name.startswith("test")}
            for node in module.body:
                if isinstance(node, ast.ClassDef) and node.name.startswith("Test") and not node.bases:
                    names |= {f"{node.name}.{item.name}" for item in node.body
                              if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                              and item.name.startswith("test")}
            if names:
                found[file.relative_to(tree).as_posix()] = len(names)
    return found
