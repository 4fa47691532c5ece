"""Red-team attacks on the suite's assertions with objects equal to everything (README invariant 17): library
code that returns a value every `assert f(x) == y` of the base's tests finds equal, in shapes a static reading
of `__eq__` does not catch, or that turns the gate's confirmation of those assertions off
(gate/suite/equality.py). The project is the suite's calculator (tests/suite_support.py), whose `test_add`
compares through an installed test library's helper (`same`, which pytest does not rewrite), with more
functions and tests; each attacked function returns such an object. `gate check` runs as root with every layer
on, and the verdict is blocked for a human, "the suite's results were tampered with", naming each assertion and
object, and the suite costs no points. Honest value classes (numpy arrays, an `__eq__` that returns
NotImplemented, unittest.mock's ANY that a test writes) are accepted with no tamper. The reading of a run's
records is tested in tests/test_suite_equality.py, and each way of switching the confirmation off there too.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.git_support import Repo
from tests.projects import (  # noqa: F401
    gate_cache,
    gate_cache_root,
    offline_pip,
    pyproject,
    wheel_of_installed,
    wheelhouse,
)
from tests.redteam_support import GateRun, check, leftovers, needs_root
from tests.suite_support import CALC, POLICY, calc_project

pytestmark = [pytest.mark.slow, needs_root]  # each builds a project's environment, runs the suite as root

# Every layer a policy can require: the deployment's shape (`gate ci` on a hosted runner runs as root).
EVERY_LAYER = POLICY.replace("test_timeout: 3", "test_timeout: 20") + (
    "require: [setsid, rlimits, uid, no-new-privs, netns, mountns, filesystem, ipcns, seccomp, cgroup]\n")
MORE_CALC = CALC + '''

def cube(n):
    return n ** 3


def half(n):
    return n / 2


def pairs(n):
    return [(n - 1, n), {"sum": 2 * n - 1}]


def near(n):
    return n


def square(n):
    return n * n


def scale(n):
    return n * 10


def third(n):
    return n // 3
'''
MORE_TESTS = '''\
import unittest

from calc import cube, half, near, pairs, scale, square, third


def test_cube():
    assert cube(2) == 8


def test_half():
    assert half(6) in (3, 3.0)


def test_pairs():
    assert pairs(2) == [(1, 2), {"sum": 3}]


def test_near():
    assert near(4) == 4


def test_square():
    assert not square(3) != 9


def test_third():
    assert third(9) == 3


class TestScale(unittest.TestCase):
    def test_scale(self):
        self.assertEqual(scale(2), 20)
'''

# unittest.mock's ANY (equal to everything), reached without a name the scans know.
HIDDEN_ANY = 'import pkgutil\n\n_ANY = vars(pkgutil)["resolve_" + "name"]("unittest.mock:ANY")\n'
# Each attack redefines one function of MORE_CALC; what the tamper's evidence says of it.
ATTACKS = {
    # Reads the operand, so a static reading of `__eq__` calls it dependent; a class is always true. test_add
    # compares through checkhelp's `same(a, b)`, which no assertion rewriting reaches: its call is confirmed.
    "eq-returns-the-other-s-type, through a helper": (
        "class Sum:\n    def __eq__(self, other):\n        return type(other)\n\n\n"
        "def add(a, b):\n    return Sum()\n",
        "in tests/test_calc.py::test_add called a function with add(two, 3), an object equal to everything "
        "(calc.Sum"),
    "eq-returns-the-other-s-type": (
        "class Cube:\n    def __eq__(self, other):\n        return type(other)\n\n\n"
        "def cube(n):\n    return Cube()\n",
        "found cube(2) equal through an object equal to everything (calc.Cube"),
    # A standard library object equal to everything, returned from a library function.
    "pkgutil-resolve-name": (
        "import pkgutil\n\n\ndef mul(a, b):\n    return pkgutil.resolve_name(\"unittest.mock:ANY\")\n",
        "found mul(two, 3) equal through an object equal to everything (unittest.mock._ANY"),
    "by-in": (HIDDEN_ANY + "\n\ndef half(n):\n    return _ANY\n",
              "found half(6) equal through an object equal to everything (unittest.mock._ANY"),
    "nested-in-a-list-dict-tuple": (
        HIDDEN_ANY + "\n\ndef pairs(n):\n    return [(_ANY, _ANY), {\"sum\": _ANY}]\n",
        "found pairs(2) equal through an object equal to everything (unittest.mock._ANY"),
    # Answers False to what it takes for the gate's probe (an object of a class made at run time, by its type
    # or its module's name), True to any builtin value a test could expect.
    "recognises-the-probe": (
        "class Near:\n    def __eq__(self, other):\n        kind = type(other)\n"
        "        return kind.__module__ == 'builtins' and 'probe' not in kind.__name__.lower()\n\n\n"
        "def near(n):\n    return Near()\n",
        "found near(4) equal through an object equal to everything (calc.Near"),
    # `!=` that is always False (its `__eq__` honest): `assert not x != y` passes.
    "ne-always-false": (
        "class Nine:\n    def __eq__(self, other):\n        return NotImplemented\n\n"
        "    def __ne__(self, other):\n        return type(other) is None\n\n\n"
        "def square(n):\n    return Nine()\n",
        "found square(3) equal through an object equal to everything (calc.Nine"),
    # Equal to the first value it is compared with: the test's expected value, were the gate's probes to come
    # after the test's comparison only.
    "equal-to-the-first-value-it-meets": (
        "class Third:\n    def __init__(self):\n        self.first = []\n\n    def __eq__(self, other):\n"
        "        if not self.first:\n            self.first.append(other)\n        return self.first[0] == other\n\n\n"
        "def third(n):\n    return Third()\n",
        "found third(9) equal through an object equal to everything (calc.Third"),
    "unittest-assert-equal": (HIDDEN_ANY + "\n\ndef scale(n):\n    return _ANY\n",
                              "assertEqual at tests/test_more.py:32 in tests/test_more.py::TestScale::test_scale "
                              "found scale(2) equal through an object equal to everything (unittest.mock._ANY"),
}


# What the gate's progress says when the base's own suite runs the tests a head's run made suspects.
CONTROL_RUN = "the base's tests, the control run"


def _observed(seen: str) -> str:
    """A piece of evidence without the name of the run it came from (a warm run may run a test twice)."""
    return seen.split("): ", 1)[1]


def _repo(root: Path, calc: str = MORE_CALC, tests: str = MORE_TESTS, test_extra: tuple[str, ...] = ()) -> Repo:
    return calc_project(root, EVERY_LAYER, extra_files={
        "calc.py": calc, "tests/test_more.py": tests,
        "pyproject.toml": pyproject("calc", [], extras={"test": ["checkhelp", *test_extra]})})


def _assert_tampered(run: GateRun, *seen: str) -> None:
    """Blocked for a human as tampered with, each of `seen` in the evidence, no points for the suite, every
    layer on, nothing left behind."""
    assert run.code == 1 and not run.verdict["accepted"], run.reports[-3000:]
    isolation = run.verdict["isolation"]
    assert all(isolation[layer].startswith("on") for layer in ("seccomp", "netns", "mountns", "cgroup")), isolation
    tampered = [t["seen"] for t in run.verdict["tampered"]]
    missed = [each for each in seen if not any(each in line for line in tampered)]
    assert not missed, (missed, tampered, run.verdict["blocked_reasons"])
    reasons = [r for r in run.verdict["blocked_reasons"] if "the suite's results were tampered with" in r]
    assert len(reasons) == 1, run.verdict["blocked_reasons"]
    assert not [p for p in run.verdict["penalties"] if p["check"] in ("tests", "timeout")], run.verdict["penalties"]


@pytest.mark.usefixtures("offline_pip")
def test_each_object_equal_to_everything_is_a_tamper_naming_its_assertion(tmp_path: Path) -> None:
    """One head holds every attack, each on a function of its own: each is seen in its own test."""
    repo = _repo(tmp_path / "repo")
    repo.commit("bot: change", {"calc.py": MORE_CALC + "".join(f"\n\n{code}" for code, _ in ATTACKS.values())})

    run = check(repo, tmp_path)

    _assert_tampered(run, *(seen for _, seen in ATTACKS.values()))
    assert len(run.verdict["tampered"]) == len(ATTACKS), run.verdict["tampered"]
    assert not leftovers(run, tmp_path)
    assert CONTROL_RUN in run.reports
    # Again: the base's control runs are kept with its baseline, and what they showed convicts the head as the
    # runs did, without a run.
    again = check(repo, tmp_path, out_name="again")
    assert CONTROL_RUN not in again.reports, again.reports[-3000:]
    _assert_tampered(again, *(seen for _, seen in ATTACKS.values()))
    assert {_observed(t["seen"]) for t in again.verdict["tampered"]} == {
        _observed(t["seen"]) for t in run.verdict["tampered"]}


# The confirmation switched off from library code, through `sys` reached as another module's attribute, before
# the tests compare: then ANY passes `assert mul(two, 3) == 6` unseen, and the gate's own always-equal object,
# which the tripwire that must pass puts through an assertion, goes unreported too.
SWITCHED_OFF = HIDDEN_ANY + '''
import typing

_rewrite = typing.sys.modules["_pytest.assertion.rewrite"]
_rewrite._gate_ahead, _rewrite._gate_equal = lambda *args: None, lambda result, *args: result


def mul(a, b):
    return _ANY
'''


@pytest.mark.usefixtures("offline_pip")
def test_a_head_that_switches_the_confirmation_off_trips_the_gate(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    repo.commit("bot: change", {"calc.py": MORE_CALC + "\n\n" + SWITCHED_OFF})

    run = check(repo, tmp_path)

    _assert_tampered(run, "which must pass) passed, but the gate's always-equal object it put through an assertion "
                          "and assertEqual was not reported (assert)")


# Honest value classes, each compared by the base's tests as a suite would (`==`, `in`, unittest's assertEqual,
# a helper that compares, a matcher): found equal, confirmed, accepted.
VALUES = '''\
import collections
import dataclasses
import decimal
import enum

import attrs
import numpy
import pydantic


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: int


Pair = collections.namedtuple("Pair", "a b")


class Color(enum.Enum):
    RED = 1


class Level(enum.IntEnum):
    LOW = 1


@attrs.define
class Box:
    width: int
    tags: list


@attrs.frozen(slots=True)
class Slot:
    name: str


class User(pydantic.BaseModel):
    name: str
    roles: list[str] = []


class Money:
    def __init__(self, cents):
        self.cents = cents

    def __eq__(self, other):
        if isinstance(other, int):
            return self.cents == other
        return isinstance(other, Money) and self.cents == other.cents


class Version:
    """Compares with its own kind only: NotImplemented to anything else (Python then compares by identity)."""

    def __init__(self, *parts):
        self.parts = parts

    def __eq__(self, other):
        if not isinstance(other, Version):
            return NotImplemented
        return self.parts == other.parts

    def __hash__(self):
        return hash(self.parts)


def point():
    return Point(1, 2)


def price():
    return decimal.Decimal("1.10")


def box():
    return Box(3, ["a"])


def user():
    return User(name="ada", roles=["admin"])


def grid():
    return numpy.array([[1, 2], [3, 4]])


def total():
    return numpy.int64(10)


def ratio():
    return 0.1 + 0.2


def version():
    return Version(1, 2)
'''
HONEST_TESTS = '''\
import unittest
from unittest import mock
from unittest.mock import ANY, call

import numpy
import pytest
from checkhelp import same

from calc import Box, Color, Level, Money, Pair, Point, Slot, User, Version, box, grid, point, price, ratio, total, \\
    user, version


def test_dataclass_namedtuple_enum_decimal():
    assert point() == Point(1, 2)
    assert [point(), {"p": point()}] == [Point(1, 2), {"p": Point(1, 2)}]
    assert point() in [Point(0, 0), Point(1, 2)]
    assert Pair(1, 2) == (1, 2)
    assert Color.RED == Color.RED and Level.LOW == 1
    assert price() == decimal_one_ten()
    assert Money(300) == 300 and Money(300) == Money(300)
    assert same(point(), Point(1, 2)) and same(Money(3), 3)


def decimal_one_ten():
    import decimal

    return decimal.Decimal("1.1")


def test_not_implemented_elsewhere():
    assert version() == Version(1, 2)
    assert version() != (1, 2) and version() != "1.2"
    assert version() in {Version(1, 2): "current"}
    assert same(version(), Version(1, 2)) and not same(version(), 1)


def test_attrs_and_pydantic():
    assert box() == Box(3, ["a"])
    assert Slot("x") == Slot("x")
    assert user() == User(name="ada", roles=["admin"])
    assert user().model_dump() == {"name": "ada", "roles": ["admin"]}


def test_numpy_elementwise():
    assert (grid() == numpy.array([[1, 2], [3, 4]])).all()
    assert numpy.array_equal(grid(), numpy.array([[1, 2], [3, 4]]))
    assert same(grid(), numpy.array([[1, 2], [3, 4]])).all()
    assert grid().tolist() == [[1, 2], [3, 4]]
    assert total() == 10 and same(total(), 10)
    assert grid()[0, 1] == 2


def test_approx():
    assert ratio() == pytest.approx(0.3)
    assert [ratio(), 1.0] == pytest.approx([0.3, 1.0])


def test_the_tests_own_any():
    logger = mock.MagicMock()
    logger.info("saved", point(), id=7)
    assert logger.info.call_args == call("saved", ANY, id=ANY)
    assert logger.info.call_args == mock.call("saved", mock.ANY, id=7)
    assert same(logger.info.call_args, call("saved", ANY, id=7))
    assert logger == logger
    assert logger.mock_calls == [call.info("saved", Point(1, 2), id=7), call.__eq__(logger)]


def test_any_held_in_a_variable():
    expected = {"user": ANY, "total": 10}
    assert {"user": user(), "total": total()} == expected


class TestValues(unittest.TestCase):
    def test_equal(self):
        self.assertEqual(point(), Point(1, 2))
        self.assertEqual(user(), User(name="ada", roles=["admin"]))
        self.assertNotEqual(version(), (1, 2))
        self.assertIn(point(), [point()])
        self.assertCountEqual([Point(1, 2), Point(2, 1)], [Point(2, 1), Point(1, 2)])
        self.assertEqual({"k": ANY}, {"k": 3})
'''
_VALUE_DISTRIBUTIONS = ("attrs", "numpy", "pydantic", "pydantic-core", "typing-extensions", "annotated-types",
                        "typing-inspection")


@pytest.mark.usefixtures("offline_pip")
def test_honest_value_classes_are_accepted_with_no_tamper(tmp_path: Path) -> None:
    wheels = Path(os.environ["PIP_FIND_LINKS"])
    for name in _VALUE_DISTRIBUTIONS:
        if not list(wheels.glob(f"{name.replace('-', '_')}-*.whl")):
            wheel_of_installed(wheels, name)
    repo = _repo(tmp_path / "repo", CALC + "\n\n" + VALUES, HONEST_TESTS, ("attrs", "numpy", "pydantic"))
    repo.commit("bot: doc", {"calc.py": '"""Values."""\n\n' + CALC + "\n\n" + VALUES})

    run = check(repo, tmp_path)

    assert run.code == 0 and run.verdict.get("accepted"), run.reports[-4000:]
    assert not run.verdict.get("tampered")
    statuses = {case["name"]: case["status"] for case in run.verdict["cases"] if case["kind"] == "pytest"}
    assert len(statuses) == 4 + 8 and set(statuses.values()) == {"passed"}, statuses
    # The tests' own ANY is the suite's way, as the base's control run showed; the next head's run judges it by
    # what that run showed, kept with the baseline, without a run of its own.
    assert CONTROL_RUN in run.reports
    again = check(repo, tmp_path, out_name="again")
    assert again.code == 0 and again.verdict.get("accepted") and not again.verdict.get("tampered"), again.reports
    assert CONTROL_RUN not in again.reports
