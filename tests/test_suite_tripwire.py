"""The records of a run of the suite must add up, and its tripwires read what they must (gate/suite/tripwire.py):
the rules the gate applies to what a run's harness wrote, on records as the harness writes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gate.suite.harness import FAIL, PASS, place
from gate.suite.tripwire import RunRecords, Suspect, Trip, confirmed, read

A, B, C = "tests/test_a.py::test_a", "tests/test_a.py::test_b[1]", "tests/test_a.py::TestC::test_c"
COLLECTED = [A, B, C]
TRIPS = (Trip(FAIL, True, at=0.0), Trip(FAIL, False, at=0.5), Trip(PASS, True, at=0.9))


def ran(nodeid: str, status: str, **more: Any) -> list[dict[str, Any]]:
    return [{"start": nodeid}, {"test": nodeid, "status": status, **more}]


def honest(a: str = "passed") -> list[dict[str, Any]]:
    """The records of an honest run of COLLECTED under TRIPS, where test_a reads `a`; the tripwire that must pass
    reports the gate's always-equal object, through an assertion (a comparison, a call) and assertEqual
    (gate/suite/equality.py)."""
    always = [{"equal": C, "site": "tests/test_a.py:9", "operand": "made()", "what": "test_a.Entry", "how": how}
              for how in ("assert", "call", "assertEqual")]
    return [{"collected": COLLECTED, "unhostable": [], "always": "Entry"}, *ran(A, "failed"), *ran(A, a),
            *ran(B, "passed"), *ran(B, "failed"), {"start": C}, *always, {"test": C, "status": "passed"},
            *ran(C, "passed"), {"done": 0}]


def checked(records: list[dict[str, Any]], select: list[str] | None = None) -> RunRecords:
    return read(records, TRIPS, select, "run 1")


def test_the_plan_puts_each_tripwire_beside_its_host() -> None:
    assert place(COLLECTED, set(), [trip.request() for trip in TRIPS]) == {0: (["fail"], []), 1: ([], ["fail"]),
                                                                            2: (["pass"], [])}


def test_a_position_on_an_item_that_cannot_host_goes_to_the_next_one_around_the_end() -> None:
    trips = [{"kind": FAIL, "before": True, "at": 0.9}]
    assert place(COLLECTED, {C}, trips) == {0: (["fail"], [])}
    assert place(COLLECTED, set(COLLECTED), trips) == {}
    assert place([], set(), trips) == {}


def test_an_honest_run_adds_up_and_keeps_each_tests_own_outcome() -> None:
    found = checked(honest(a="failed"))

    assert not found.tampered and not found.suspects
    assert {nodeid: record["status"] for nodeid, record in found.outcomes.items()} == {
        A: "failed", B: "passed", C: "passed"}
    assert [(trip.kind, trip.host, record["status"]) for trip, record in found.trips] == [
        (FAIL, A, "failed"), (FAIL, B, "failed"), (PASS, C, "passed")]
    # What a conftest that follows failures could have skipped: every test after a tripwire that failed.
    assert found.after_failing == {A, B, C}
    late = read([{"collected": COLLECTED, "unhostable": []}, *ran(A, "passed"), *ran(B, "passed"),
                 *ran(B, "failed"), *ran(C, "passed")], (Trip(FAIL, False, at=0.5),), None, "run 1")
    assert late.after_failing == {C} and not late.tampered


def test_a_tripwire_that_must_fail_and_passes_is_a_suspect() -> None:
    records = honest()
    records[2]["status"] = "passed"

    found = checked(records)

    assert not found.tampered
    [suspect] = found.suspects
    assert suspect.trip == Trip(FAIL, True, host=A)
    assert suspect.seen == f"the gate's tripwire ({A} run once more, before its own run, which must fail) read passed"


@pytest.mark.parametrize(("status", "more", "suspect"), [
    ("failed", {}, True),
    ("failed", {"end": True}, False),  # its process died there (the run ends)
    ("failed", {"detail": "[XPASS(strict)] known"}, False),
    ("failed", {"detail": "Unexpected success"}, False),
    ("error", {}, False),  # a fixture's error: as its test would have
    ("skipped", {}, False),
])
def test_a_tripwire_that_must_pass_fails_only_in_its_call(status: str, more: dict[str, Any], suspect: bool) -> None:
    records = honest()[:9] + ran(C, status, **more)
    found = checked(records)
    assert bool(found.suspects) == suspect, found.suspects


@pytest.mark.parametrize(("change", "seen"), [
    (lambda r: r.insert(1, {"test": A, "status": "passed"}), f"an outcome for {A} that never started"),
    (lambda r: r.insert(0, {"test": A, "status": "passed"}), f"{A} reported before pytest had collected"),
    (lambda r: r.insert(3, {"test": A, "status": "passed"}), f"a second outcome for {A}"),
    (lambda r: r.insert(4, {"test": A, "status": "passed"}), f"a second outcome for {A}"),
    (lambda r: r.insert(1, {"start": B}), f"{B} started where {A} was due"),
    (lambda r: r.insert(-1, {"test": C, "status": "passed"}), f"a second outcome for {C}"),
    (lambda r: r.insert(-1, {"test": A, "status": "passed"}), "after every test collected had its outcome"),
    (lambda r: r.append({"test": C, "status": "passed"}), "a record after the run's end"),
    (lambda r: r.insert(1, {"collected": COLLECTED}), "a second list of the tests collected"),
    (lambda r: r.insert(1, {"verdict": "passed"}), "a record the harness does not write"),
    (lambda r: r.insert(1, {"evidence": "an object equal to everything"}), "an object equal to everything"),
    (lambda r: r.__delitem__(slice(1, 3)), f"{B} started where {A} was due"),  # the tripwire never ran
], ids=["outcome-without-start", "before-collection", "second-outcome", "outcome-between", "out-of-order",
        "extra-at-the-end", "another-at-the-end", "after-done", "second-list", "unknown", "harness-evidence",
        "missing-tripwire"])
def test_records_that_do_not_add_up_are_tampering(change: Any, seen: str) -> None:
    records = honest()
    change(records)

    found = checked(records)

    assert found.tampered and seen in found.tampered[0], found.tampered


def test_an_outcome_of_the_watcher_ends_the_run_and_the_rest_is_left_to_the_next() -> None:
    records = [{"collected": COLLECTED, "unhostable": []}, *ran(A, "failed"), {"start": A},
               {"test": A, "status": "failed", "end": True}, {"done": 0}]

    found = checked(records)

    assert not found.tampered and found.outcomes[A]["status"] == "failed" and B not in found.outcomes
    assert not checked([*records[:-2], {"done": 0}]).tampered  # the watcher itself killed: A never ended
    assert checked([*records[:-2], {"done": 0}]).unfinished == A


def test_the_run_collects_only_what_the_gate_asked_for() -> None:
    found = checked(honest(), select=[A, B])
    assert found.tampered == [f"the run collected {C}, which the gate did not ask for"]


def test_a_collections_flaky_marks_are_read_only_of_tests_it_collected() -> None:
    assert read([{"collected": COLLECTED, "flaky": {B: 2}}, {"done": 0}], (), None, "c").marked_flaky == {B: 2}
    for odd_marks in ({"tests/test_z.py::test_z": 1}, {B: 3}, {B: "2"}, [B]):
        odd = read([{"collected": COLLECTED, "flaky": odd_marks}, {"done": 0}], (), None, "c")
        assert odd.tampered == ["flaky marks said of tests the run did not collect, or with no count of tries"]
        assert not odd.marked_flaky


def test_a_test_function_the_run_says_cannot_host_a_tripwire_is_a_suspect() -> None:
    doctest = "tests/test_a.py::tests.test_a.helper"
    records = [{"collected": [doctest, *COLLECTED], "unhostable": [doctest, C]}]

    found = checked(records)

    assert [suspect.host for suspect in found.suspects] == [C]


def test_a_suspect_is_evidence_once_the_bases_own_run_reads_its_tripwire_right() -> None:
    pinned = (Trip(FAIL, True, host=A),)
    suspect = Suspect("the head's tests, run 1", pinned[0], "it read passed")
    right = read([{"collected": [A], "unhostable": []}, *ran(A, "failed"), *ran(A, "failed"), {"done": 0}],
                 pinned, [A], "control")
    wrong = read([{"collected": [A], "unhostable": []}, *ran(A, "passed"), *ran(A, "passed"), {"done": 0}],
                 pinned, [A], "control")
    absent = read([{"collected": [], "unhostable": []}, {"done": 0}], pinned, [A], "control")

    assert confirmed([suspect], right) == ["the head's tests, run 1: it read passed"]
    assert confirmed([suspect], wrong) == [] and confirmed([suspect], absent) == []


def test_a_run_that_ends_in_a_tripwire_leaves_its_test_to_the_next_run() -> None:
    records: list[dict[str, Any]] = [{"collected": COLLECTED, "unhostable": []}, {"start": A},
                                     {"test": A, "status": "timeout", "end": True}, {"done": 0}]
    found = checked(records)
    assert not found.tampered and not found.outcomes and found.ended_in_trip
    assert found.unfinished is None and not found.suspects  # (a timeout is an outcome its test could give)
    died = checked([*records[:2], {"done": 0}])  # the watcher itself killed there
    assert died.ended_in_trip and died.unfinished is None


def test_what_a_baseline_keeps_beside_the_statuses_is_read_back_as_it_was_and_a_malformed_entry_is_not() -> None:
    """The base's control runs are cached with its baseline (gate/suite/baseline.py): read back, they judge a
    suspect as the run did; an entry of another shape, or for a test the base does not collect, is not one (the
    test's control runs again)."""
    from gate.suite.baseline import Baseline

    kept = Baseline(COLLECTED, controls={A: [("tests/test_a.py:3", "x", "assert")], B: []})
    again = Baseline.from_json(kept.to_json())
    assert again is not None and again.controls == kept.controls
    odd = {**kept.to_json(), "controls": {A: [["tests/test_a.py:3", "x"]], C: "passed", "tests/test_z.py::t": []}}
    read_back = Baseline.from_json(odd)
    assert read_back is not None and read_back.controls == {}
    older = {key: value for key, value in kept.to_json().items() if key not in ("controls", "seconds")}
    assert Baseline.from_json(older) == Baseline(COLLECTED)
    # The seconds each test function took (to share the next run out): a number of seconds, for a collected one.
    function = "tests/test_a.py::test_b"  # (B's function, for all its parameters)
    timed = {**kept.to_json(), "seconds": {function: 0.5, A: 0.25, "tests/test_z.py::test_z": 1.0}}
    assert Baseline.from_json(timed).seconds == {function: 0.5, A: 0.25}  # type: ignore[union-attr]
    for odd_time in (-1, float("nan"), float("inf"), "1.0"):
        skewed = {**kept.to_json(), "seconds": {function: odd_time}}
        assert Baseline.from_json(skewed).seconds == {}  # type: ignore[union-attr]
    # What each test took in the base's own run of it (a head's timeout says it): a number, for a collected one.
    took = {**kept.to_json(), "took": {A: 55.0, C: float("inf"), "tests/test_z.py::test_z": 1.0}}
    assert Baseline.from_json(took).took == {A: 55.0}  # type: ignore[union-attr]
    # The tests the base's collection marks flaky (gate/suite/order.py): only collected ones.
    marked = {**kept.to_json(), "flaky": {A: 2, B: 1, C: 5, "tests/test_z.py::test_z": 1}}
    assert Baseline.from_json(marked).marked_flaky == {A: 2, B: 1}  # type: ignore[union-attr]
    for odd_marks in (A, [A], {A: [2]}):
        assert Baseline.from_json({**kept.to_json(), "flaky": odd_marks}).marked_flaky == {}  # type: ignore


def test_a_place_the_guard_names_does_not_move_with_the_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    """What a name was rebound to is told by its code's place, which the base's run must name alike: a path from
    the folder the run started in, not from wherever a test moved the process (glom's CLI test `os.chdir`s to
    its tmp_path and leaves it there)."""
    from gate.suite import guard

    code = guard._where.__code__
    before = guard._where(code)
    monkeypatch.chdir(tmp_path)

    assert guard._where(code) == before == f"_where at gate/suite/guard.py:{code.co_firstlineno}"
