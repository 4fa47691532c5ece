"""Tripwires and counts: what proves that a run of the suite reported what its tests did (README invariant 17).

The tests share their process with the code under test, which can reach pytest whatever a static reading of
it says. So every run of the head's tests carries tests whose outcome the gate knows, chosen here, per run,
outside the sandbox: an item of the run itself runs once more, right before or right after its own run, as a
tripwire whose call must fail, or must pass (the harness makes it fail or return from inside the test
function's call: gate/suite/harness.py). A tripwire shares everything with the test it runs again (node id,
module, location, function, the item object itself), so code that forges outcomes cannot spare the tripwires
without finding the gate's plan: it forges theirs too, and one reads the wrong outcome. Each run has one that
must fail before its host and one after (so no rule by order spares both), and one that must pass.

Then the records must add up: one list of collected tests (only those the gate asked for, when it asked), and
every collected item, tripwires included, started once and reported once, in that order; a record for any
other test, a second outcome, an outcome without its start, or a record after the run's end is not what the
harness writes. A run that fails this was tampered with: its outcomes are no result (gate/checks/tests.py).

A tripwire that reads the wrong outcome is only a suspect until the base's own suite, which the change did not
touch, runs that tripwire right (`control`): a plugin or conftest of the base that rewrites outcomes, or a test
the watch on its function never sees start, must not make an honest change look tampered with.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from typing import Any

import msgspec

from gate.suite.harness import FAIL, PASS, function_of, place

_RANDOM = secrets.SystemRandom()
# A node id that names a test function (a module's `test*` function, a method of a class, parametrized or not):
# pytest collects it as a function, so it can host a tripwire, whatever the run says.
_FUNCTION = re.compile(r"\.py::(?:[^:]+::)*test[^:.\[]*(\[.*\])?$", re.DOTALL)


class Trip(msgspec.Struct, frozen=True):
    """One tripwire of a run's plan: its kind (FAIL or PASS), whether it runs before its host or after, and
    where the host is: `at` a fraction of the collected items, or `host`, a node id (a control run)."""

    kind: str
    before: bool
    at: float = 0.0
    host: str | None = None

    def request(self) -> dict[str, Any]:
        """The trip as the harness's request has it."""
        where: dict[str, Any] = {"host": self.host} if self.host is not None else {"at": self.at}
        return {"kind": self.kind, "before": self.before, **where}

    def words(self, host: str) -> str:
        """The tripwire in a report's words."""
        when = "before" if self.before else "after"
        must = "fail" if self.kind == FAIL else "pass"
        return f"the gate's tripwire ({host} run once more, {when} its own run, which must {must})"


def plan(hosts: Sequence[str] = ()) -> tuple[Trip, ...]:
    """A new run's tripwires, at random places (or on random ones of `hosts`, node ids): one that must fail
    before its host, one after its host, one that must pass on either side."""
    trips = (Trip(FAIL, True), Trip(FAIL, False), Trip(PASS, _RANDOM.random() < 0.5))
    if hosts:
        return tuple(Trip(trip.kind, trip.before, host=_RANDOM.choice(hosts)) for trip in trips)
    return tuple(Trip(trip.kind, trip.before, at=_RANDOM.random()) for trip in trips)


class Equal(msgspec.Struct, frozen=True):
    """An object equal to everything (or, for `!=`, unequal to nothing) that an assertion of `test` found
    equal (gate/suite/equality.py): where (`site`, a file and line), the operand as its source writes it, the
    object's class (`what`), and the assertion (`how`: "assert", "call" for an argument of a call in an
    assertion, or unittest's method)."""

    test: str
    site: str
    operand: str
    what: str
    how: str

    def words(self) -> str:
        """The observation in a report's words."""
        what = f"({self.what}: it equals the gate's probes, which no honest value equals)"
        if self.how == "call":
            return (f"the assertion at {self.site} in {self.test} called a function with {self.operand}, an "
                    f"object equal to everything {what}")
        how = "the assertion" if self.how == "assert" else self.how
        return (f"{how} at {self.site} in {self.test} found {self.operand} equal through an object equal to "
                f"everything {what}")


class Replaced(msgspec.Struct, frozen=True):
    """What a test depends on (its code, a helper's, a name its module binds) that was no longer as collected
    before `test` ran, as the harness saw it (gate/suite/guard.py)."""

    test: str
    what: str


class Suspect(msgspec.Struct, frozen=True):
    """A tripwire that read the wrong outcome (or a test the run said could host none), or an object equal to
    everything that an assertion found equal (`equal`), or code a test depends on replaced (`replaced`):
    tampering, once the base's own suite runs the same tripwire right, or runs the same test without that
    object or that change there. `trip` is pinned to its host."""

    run: str
    trip: Trip | None
    seen: str
    equal: Equal | None = None
    replaced: Replaced | None = None

    @property
    def host(self) -> str:
        """The test the control run runs on the base."""
        if self.equal is not None:
            return self.equal.test
        if self.replaced is not None:
            return self.replaced.test
        return str(self.trip.host if self.trip else "")


class RunRecords(msgspec.Struct):
    """What one run's records say, once checked: the collected node ids (None: pytest collected nothing it
    said), what failed to collect (by path), what the base's configuration deselected, the records of each
    test's own run, by node id (the tripwires' aside), the test that started last and never ended, the
    tripwires' outcomes, what does not add up (`tampered`), the suspects, the tests that ran after a
    tripwire had failed, and the objects equal to everything that the tests' assertions found equal; and which
    collected node ids stand in for ids asked for that pytest did not collect (the same function with other
    parameters: {collected: asked}, gate/suite/harness.py's `match`)."""

    collected: list[str] | None = None
    errors: dict[str, str] = msgspec.field(default_factory=dict)
    deselected: list[str] = msgspec.field(default_factory=list)
    outcomes: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)
    unfinished: str | None = None
    trips: list[tuple[Trip, dict[str, Any]]] = msgspec.field(default_factory=list)
    tampered: list[str] = msgspec.field(default_factory=list)
    suspects: list[Suspect] = msgspec.field(default_factory=list)
    # The tests whose own run came after a tripwire that failed: a conftest that skips or xfails what follows
    # a failure (pytest's "incremental" recipe, pytest-dependency) may have, as it would after a test's.
    after_failing: set[str] = msgspec.field(default_factory=set)
    # The run ended in a tripwire (its process died or ran out of time there): its test runs in the next run.
    ended_in_trip: bool = False
    matched: dict[str, str] = msgspec.field(default_factory=dict)
    equal: list[Equal] = msgspec.field(default_factory=list)
    replaced: list[Replaced] = msgspec.field(default_factory=list)
    # A collection's tests that are skipped whatever runs before them, with pytest's report of the skip.
    skips: dict[str, str] = msgspec.field(default_factory=dict)
    # A collection's tests that the suite runs again when they fail, with how many times (at most 2).
    marked_flaky: dict[str, int] = msgspec.field(default_factory=dict)
    # What a collection's configuration left out (pytest's ignore hook: `collect_ignore_glob`, `--ignore`).
    ignored: tuple[str, ...] = ()
    # The files and folders a collection skipped as it collected them, with pytest's report of the skip.
    skipped_files: dict[str, str] = msgspec.field(default_factory=dict)
    always: str = ""  # the class name of the gate's own always-equal object in this run (the tripwire's)


class _Due(msgspec.Struct, frozen=True):
    """An execution the run owes: a test's own run (trip None) or a tripwire on it."""

    nodeid: str
    trip: Trip | None


def read(records: Sequence[dict[str, Any]], trips: Sequence[Trip], select: Sequence[str] | None,
         run: str) -> RunRecords:
    """Check the records of one run (`run` names it in the evidence), whose plan was `trips` and which was
    asked for the node ids `select` (None: whatever it collects)."""
    found = RunRecords()
    due: list[_Due] = []
    at = 0  # the next execution due
    started = False
    done = ended = False  # the watcher said the run is over; it ended the run (a death, a timeout)
    seen: list[dict[str, Any]] = []  # what the assertions of the execution running now found equal
    for record in records:
        if done or (ended and "done" not in record):
            found.tampered.append(f"a record after the run's end ({_said(record)})")
            break
        if "done" in record:
            done = True
        elif "collected" in record:
            if found.collected is not None:
                found.tampered.append("a second list of the tests collected")
                break
            found.collected, due = _collected(record, trips, select, run, found)
            if found.tampered:
                break
        elif found.collected is None and "collect_error" in record:
            found.errors.setdefault(str(record["collect_error"]), str(record.get("detail", ""))[-600:])
        elif found.collected is None and isinstance(record.get("deselected"), list):
            found.deselected += [str(nodeid) for nodeid in record["deselected"]]
        elif "evidence" in record:  # what the harness itself saw go wrong in the tests' process
            found.tampered.append(str(record["evidence"])[:300])
        elif "replaced" in record:
            change = Replaced(str(record["replaced"]), str(record.get("what", ""))[:200])
            if found.collected is None or change.test not in found.collected:
                found.tampered.append(f"a change seen before {change.test}, which the run did not collect")
                break
            found.replaced.append(change)
            found.suspects.append(Suspect(run, None, f"{change.what}, seen before {change.test} ran",
                                          replaced=change))
        elif "equal" in record:
            if not started or str(record["equal"]) != due[at].nodeid:
                found.tampered.append(f"an equality seen in {record['equal']} outside its run")
                break
            seen.append(record)
        elif "start" in record:
            expected = due[at].nodeid if at < len(due) else None
            if found.collected is None or started or str(record["start"]) != expected:
                found.tampered.append(_out_of_turn("started", record["start"], expected, started,
                                                   found.collected is not None))
                break
            started = True
        elif "test" in record:
            expected = due[at].nodeid if at < len(due) else None
            if not started and at and str(record["test"]) == due[at - 1].nodeid:
                found.tampered.append(f"a second outcome for {record['test']}")
                break
            if found.collected is None or not started or str(record["test"]) != expected:
                found.tampered.append(_out_of_turn("reported", record["test"], expected, started,
                                                   found.collected is not None))
                break
            _took(found, due[at], record, run, seen)
            ended = record.get("end") is True
            found.ended_in_trip = ended and due[at].trip is not None
            started, at, seen = False, at + 1, []
        else:
            found.tampered.append(f"a record the harness does not write ({_said(record)})")
            break
    if started and not found.tampered:
        current = due[at]
        found.unfinished = current.nodeid if current.trip is None else None
        found.ended_in_trip = current.trip is not None
    return found


def _collected(record: dict[str, Any], trips: Sequence[Trip], select: Sequence[str] | None, run: str,
               found: RunRecords) -> tuple[list[str], list[_Due]]:
    """The collected list and the executions it owes, from the record that lists them."""
    collected = [str(nodeid) for nodeid in record.get("collected") or []]
    unhostable = {str(nodeid) for nodeid in record.get("unhostable") or []}
    found.always = str(record.get("always", ""))
    if select is not None:
        found.matched = _matched(record.get("matched"), collected, select, found)
        asked = set(select)
        unasked = [nodeid for nodeid in collected if nodeid not in asked and nodeid not in found.matched]
        if unasked:
            found.tampered.append(f"the run collected {unasked[0]}, which the gate did not ask for")
    skips = record.get("skips") or {}
    if not isinstance(skips, dict) or not set(skips) <= set(collected):
        found.tampered.append("skips said of tests the run did not collect")
    else:
        found.skips = {str(nodeid): str(said)[-600:] for nodeid, said in skips.items()}
    flaky = record.get("flaky") or {}
    if not isinstance(flaky, dict) or not set(flaky) <= set(collected) \
            or not all(tries in (1, 2) for tries in flaky.values()):
        found.tampered.append("flaky marks said of tests the run did not collect, or with no count of tries")
    else:
        found.marked_flaky = {str(nodeid): int(tries) for nodeid, tries in flaky.items()}
    ignored = record.get("ignored") or []
    found.ignored = tuple(str(path) for path in ignored) if isinstance(ignored, list) else ()
    skipped = record.get("skipped_files") or {}
    # (a file's or a folder's: a class skipped as collected is no file the base holds whole)
    found.skipped_files = {str(path): str(said)[-600:] for path, said in skipped.items()
                           if "::" not in str(path)} if isinstance(skipped, dict) else {}
    for nodeid in sorted(unhostable):
        if nodeid in collected and _FUNCTION.search(nodeid):
            found.suspects.append(Suspect(run, Trip(FAIL, True, host=nodeid),
                                          f"the run said {nodeid} cannot host a tripwire"))
    placed = place(collected, unhostable, [trip.request() for trip in trips])
    due: list[_Due] = []
    for index, nodeid in enumerate(collected):
        before, after = placed.get(index, ([], []))
        due += [_Due(nodeid, Trip(kind, True, host=nodeid)) for kind in before]
        due.append(_Due(nodeid, None))
        due += [_Due(nodeid, Trip(kind, False, host=nodeid)) for kind in after]
    return collected, due


def _matched(said: object, collected: list[str], select: Sequence[str], found: RunRecords) -> dict[str, str]:
    """The run's matches ({collected id: id asked for}) when each is one the harness's `match` could make: a
    collected id not asked for, standing in for an id asked for and not collected, of the same test function,
    one for one; else none, and the run is tampered with."""
    if not said:
        return {}
    asked, present = set(select), set(collected)
    pairs = [(str(key), str(value)) for key, value in said.items()] if isinstance(said, dict) else []
    wrong = [(key, value) for key, value in pairs if key not in present or key in asked or value not in asked
             or value in present or function_of(key) is None or function_of(key) != function_of(value)]
    if not pairs or wrong or len({value for _, value in pairs}) != len(pairs):
        key, value = (wrong or pairs or [("?", "?")])[0]
        found.tampered.append(f"the run matched {key} to {value}, which no rule of the gate matches")
        return {}
    return dict(pairs)


def _took(found: RunRecords, due: _Due, record: dict[str, Any], run: str, seen: list[dict[str, Any]]) -> None:
    """Take the outcome `record` of the execution `due`, and what its assertions found equal (`seen`): the
    gate's own always-equal object (a tripwire that must pass puts it through an assertion and unittest's
    assertEqual), or objects of the test's, each a suspect."""
    mine = {str(each.get("how")) for each in seen if str(each.get("what")).rpartition(".")[2] == found.always}
    for each in seen:
        if str(each.get("what")).rpartition(".")[2] != found.always:
            equal = Equal(due.nodeid, *(str(each.get(name, ""))[:200] for name in ("site", "operand", "what", "how")))
            if equal not in found.equal:
                found.equal.append(equal)
                found.suspects.append(Suspect(run, None, equal.words(), equal))
    if due.trip is None:
        found.outcomes.setdefault(due.nodeid, record)
        if any(trip.kind == FAIL for trip, _ in found.trips):
            found.after_failing.add(due.nodeid)
        return
    if due.trip.kind == PASS:
        record = {**record, "confirmed": sorted(mine)}
    found.trips.append((due.trip, record))
    status = str(record.get("status"))
    if not right(due.trip, record):
        words = f"{due.trip.words(due.nodeid)} read {status}"
        if due.trip.kind == PASS and status == "passed":
            missing = ", ".join(sorted(_CONFIRMED - mine))
            words = (f"{due.trip.words(due.nodeid)} passed, but the gate's always-equal object it put through an "
                     f"assertion and assertEqual was not reported ({missing})")
        found.suspects.append(Suspect(run, due.trip, words))


def right(trip: Trip, record: dict[str, Any]) -> bool:
    """Whether a tripwire's outcome is one its own test could give honestly. One that must fail may not pass
    (an error in a fixture, a skip, an expected failure can happen to it as to the test); one that must pass
    may not fail in its call, unless its process ended there or its test is expected to fail, and when it
    passes, the gate's always-equal object it put through an assertion (a comparison, a call) and unittest's
    assertEqual must have been reported (gate/suite/equality.py)."""
    status, detail = str(record.get("status")), str(record.get("detail", "")).lstrip()
    if trip.kind == FAIL:
        return status != "passed"
    if status == "passed":
        return set(record.get("confirmed", ())) >= _CONFIRMED
    return (status != "failed" or record.get("end") is True
            or detail.startswith(_EXPECTED_TO_FAIL))


# The assertions through which a tripwire that must pass puts the gate's always-equal object: a comparison and a
# call's argument in an assertion pytest rewrites, unittest's assertEqual.
_CONFIRMED = {"assert", "call", "assertEqual"}
# How pytest reports a call that passed where the test is expected to fail (a strict xfail, unittest's
# expectedFailure): a tripwire that must pass fails so honestly.
_EXPECTED_TO_FAIL = ("[XPASS(strict)]", "Unexpected success")


def _out_of_turn(verb: str, nodeid: object, expected: str | None, started: bool, collected: bool) -> str:
    if not collected:
        return f"{nodeid} {verb} before pytest had collected the tests"
    if expected is None:
        return f"{nodeid} {verb} after every test collected had its outcome"
    if verb == "reported" and not started:
        return f"an outcome for {nodeid} that never started"
    if verb == "started" and started:
        return f"{nodeid} started before {expected} had its outcome"
    return f"{nodeid} {verb} where {expected} was due"


def _said(record: dict[str, Any]) -> str:
    shown = {key: value for key, value in record.items() if key != "key"}
    return str(shown)[:120]


def confirmed(suspects: Sequence[Suspect], control: RunRecords) -> list[str]:
    """The suspects that the base's own run (`control`, run with each suspect's trip pinned to its host, and
    each suspect's test) shows are the change's: a tripwire the base carried out right, an object equal to
    everything where the base's test passed without one there, a change to what a test depends on that the
    base's run of that test does not show (or a test it did not reach). The evidence of tampering, each in one
    line. A
    suspect whose tripwire the base reads wrong too, or could not run, or whose object the base's test shows
    too (the test's own `ANY` in a variable), is the suite's way and no evidence."""
    if control.tampered:
        return []
    evidence = []
    for suspect in suspects:
        if suspect.replaced is not None:  # (a test the base's run did not reach shows nothing: evidence)
            if suspect.replaced.test not in control.outcomes or suspect.replaced not in control.replaced:
                evidence.append(f"{suspect.run}: {suspect.seen}")
            continue
        if suspect.equal is not None:
            mine = suspect.equal
            passed = control.outcomes.get(mine.test, {}).get("status") == "passed"
            if passed and not any((seen.test, seen.site, seen.operand, seen.how)
                                  == (mine.test, mine.site, mine.operand, mine.how) for seen in control.equal):
                evidence.append(f"{suspect.run}: {suspect.seen}")
            continue
        outcomes = [record for trip, record in control.trips if trip == suspect.trip]
        if suspect.trip is not None and outcomes and all(right(suspect.trip, record) for record in outcomes):
            evidence.append(f"{suspect.run}: {suspect.seen}")
    return evidence
