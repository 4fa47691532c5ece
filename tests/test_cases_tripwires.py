"""The tripwires of the case runs that share a process with the candidate (gate/cases/tripwires.py): what the
harness's call of one does, where the gate places them, and what it takes as evidence of tampering."""

from __future__ import annotations

import collections
import functools
from typing import Any

import pytest

from gate.cases import tripwires
from gate.cases.harness import wire


class Point:
    def __init__(self, x: int) -> None:
        self.x = x


def double(n: int) -> int:
    return 2 * n


@functools.wraps(double)
def wrapped(n: int) -> int:
    return double(n)


@pytest.mark.parametrize("function", [double, wrapped, Point, len, collections.OrderedDict,
                                      functools.partial(max, 1), Point(1).__init__],  # type: ignore[misc]
                         ids=["function", "wrapper", "class", "builtin", "c-class", "partial", "bound-method"])
def test_a_tripwires_call_fails_or_returns_the_token_whatever_the_function(function: Any) -> None:
    args = wire.dumps(((1,) if function is not len else ([1],), {}))
    assert wire.call(function, args, {"trip": wire.FAIL}) == {"raised": "AssertionError", "message": ""}
    assert wire.call(function, args, {"trip": wire.PASS, "token": "abc"}) == {"ok": wire.dumps("abc")}


def test_a_tripwires_function_never_runs_its_code() -> None:
    ran = []

    def noisy(n: int) -> int:
        ran.append(n)
        return n

    wire.call(noisy, wire.dumps(((1,), {})), {"trip": wire.FAIL})
    wire.call(noisy, wire.dumps(((1,), {})), {"trip": wire.PASS, "token": "t"})
    assert ran == [] and wire.call(noisy, wire.dumps(((1,), {}))) == {"ok": "1"}


def test_a_serving_runs_tripwires_are_calls_of_its_own_among_their_modules_calls() -> None:
    modules = ["a", "a", "b", "c", "c", "c"]
    for _ in range(50):
        entries = tripwires.serving(modules)
        assert [at for at, trip in entries if trip is None] == list(range(6))
        trips = [(index, at, trip) for index, (at, trip) in enumerate(entries) if trip is not None]
        assert sorted(trip["trip"] for _, _, trip in trips) == [wire.FAIL, wire.PASS]
        # Each stays among the calls of the module of the call it copies: the modules stay together.
        assert [modules[at] for at, _ in entries] == sorted(modules[at] for at, _ in entries)


@pytest.mark.parametrize(("trip", "record", "tampered"), [
    ({"trip": wire.FAIL}, {"raised": "AssertionError", "message": ""}, False),
    ({"trip": wire.FAIL}, {"load": "AttributeError: no double"}, False),
    ({"trip": wire.FAIL}, {"ok": "6"}, True),
    ({"trip": wire.FAIL}, {"raised": "AssertionError", "message": "6 != 5"}, True),
    ({"trip": wire.PASS, "token": "t1"}, {"ok": wire.dumps("t1")}, False),
    ({"trip": wire.PASS, "token": "t1"}, {"ok": wire.dumps("t2")}, True),
    ({"trip": wire.PASS, "token": "t1"}, {"raised": "AssertionError", "message": ""}, True),
])
def test_a_serving_tripwires_record_is_the_harnesss_or_evidence(trip: dict[str, Any], record: dict[str, Any],
                                                                tampered: bool) -> None:
    assert bool(tripwires.serving_tampered(trip, record)) == tampered


def test_an_in_process_pass_must_carry_its_tripwires_outcomes_in_the_order_they_ran() -> None:
    trips: list[dict[str, Any]] = [{"test": 1, "at": 1}, {"test": 0, "at": 1}, {"test": 0, "at": 0, "pass": "tok"}]
    assert tripwires.in_process_tampered({"passed": True, "tripped": ["tok", "failed", "failed"]}, trips) == ""
    assert tripwires.in_process_tampered({"failed": "AssertionError", "test": 0}, trips) == ""  # no gain
    assert "without its tripwires' outcomes" in tripwires.in_process_tampered({"passed": True}, trips)
    wrong = tripwires.in_process_tampered({"passed": True, "tripped": ["tok", "passed", "failed"]}, trips)
    assert wrong == ("the gate's tripwire (test 1 run once more, before its own run, which must fail) read "
                     "passed")
    token = tripwires.in_process_tampered({"passed": True, "tripped": ["forged", "failed", "failed"]}, trips)
    assert "which must return this run's token) read another outcome" in token


def test_an_in_process_plan_has_one_of_each_beside_its_test() -> None:
    for tests in (1, 2, 5):
        trips = tripwires.in_process(tests)
        assert [trip["at"] - trip["test"] for trip in trips[:2]] == [0, 1]
        assert trips[2]["at"] - trips[2]["test"] in (0, 1) and trips[2]["pass"]
        assert all(0 <= trip["test"] < tests for trip in trips)
