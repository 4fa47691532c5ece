"""The suite's equality confirmation (gate/suite/equality.py) in a real pytest process, without the sandbox:
what it reports of the assertions that find an object equal to everything, what it leaves alone (honest value
classes, unittest.mock's ANY that the test writes), that pytest's own failure reports stay as they are, and
the tripwire's always-equal object. gate/suite/tripwire.py's reading of those records is tested with
hand-made records; the whole gate, with the sandbox, in tests/test_redteam_equality.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gate.suite.harness import PASS
from gate.suite.tripwire import Equal, Suspect, Trip, confirmed, read

# Runs pytest with the confirmation installed as the harness installs it; the records go to RECORDS. With
# `trip` set, each test's call also puts the gate's always-equal object through (the tripwire's part).
DRIVER = '''\
import json, os, sys, unittest
import _pytest.assertion.rewrite as rewrite
import pytest
from gate.suite import equality

if os.environ.get("BEFORE_PYTEST_7"):
    # As pytest 6 placed the nodes it made: none as it makes them, then, once the assertion is rewritten, each
    # node of its statements at the assertion's start and with no end (its `set_location`).
    import ast, types
    rewrite.ast = types.SimpleNamespace(**{**vars(ast), "copy_location": lambda new, old: new})
    visit_assert = rewrite.AssertionRewriter.visit_Assert

    def placed(self, assert_):
        statements = visit_assert(self, assert_)
        for node in (node for statement in statements for node in ast.walk(statement)):
            if "lineno" in node._attributes:
                node.lineno, node.col_offset = assert_.lineno, assert_.col_offset
        return statements
    rewrite.AssertionRewriter.visit_Assert = placed

if os.environ.get("PYTEST_8_WALRUS"):
    # As pytest 8.3 and 8.4 left an assignment expression in a comparison: as it is, not assigned to a name.
    assign = rewrite.AssertionRewriter.assign
    rewrite.AssertionRewriter.assign = lambda self, expr: expr if type(expr).__name__ == "NamedExpr" \
        else assign(self, expr)

out = open(os.environ["RECORDS"], "w")
confirmation = equality.Confirmation(lambda record: (out.write(json.dumps(record) + "\\n"), out.flush()),
                                     "Record", "Entry")
if os.environ.get("HOOK") != "off":
    equality.hook(rewrite, confirmation)
    confirmation.wrap_unittest(unittest.TestCase)


class Plugin:
    def pytest_runtest_logstart(self, nodeid, location):
        confirmation.start(nodeid)

    def pytest_runtest_logfinish(self, nodeid, location):
        confirmation.start(None)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        if os.environ.get("TRIP"):
            confirmation.trip(item, item.cls if item.cls and issubclass(item.cls, unittest.TestCase)
                              else unittest.TestCase)
        yield


sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "--tb=short", "-o", "console_output_style=classic",
                      "tests"], plugins=[Plugin()]))
'''
CALC = '''\
import pkgutil

ANY = pkgutil.resolve_name("unittest.mock:ANY")


class TypeOfOther:
    def __eq__(self, other):
        return type(other)


class Builtins:
    """Equal to builtin values, not to objects whose class says it is a probe: a recogniser."""

    def __eq__(self, other):
        kind = type(other)
        return kind.__module__ == "builtins" and "probe" not in kind.__name__.lower()


class NeverUnequal:
    def __eq__(self, other):
        return NotImplemented

    def __ne__(self, other):
        return type(other) is None


class FirstSeen:
    """Equal to the first value it is compared with (and to what equals that): a probe after the test's
    comparison finds it unequal."""

    def __init__(self):
        self.first = []

    def __eq__(self, other):
        if not self.first:
            self.first.append(other)
        return self.first[0] == other


class Everything(list):
    def __contains__(self, item):
        return True


def add(a, b):
    return TypeOfOther()


def mul(a, b):
    return ANY


def pairs(n):
    return [(ANY, n), {"sum": ANY}]


def near(a):
    return Builtins()


def square(n):
    return NeverUnequal()


def digits(n):
    return Everything()


def third(n):
    return FirstSeen()
'''
# A helper module of the tests (pytest does not rewrite it), as an installed test library's would be.
HELPERS = "def same(one, other):\n    return one == other\n\n\ndef differ(one, other):\n    return one != other\n"
ATTACKED = '''\
import unittest

from calc import add, digits, mul, near, pairs, square, third
from helpers import differ, same


def test_add():
    assert add(2, 3) == 5


def test_mul():
    assert mul(2, 3) == 6


def test_in():
    assert 6 in [1, mul(2, 3)]


def test_nested():
    assert pairs(2) == [(1, 2), {"sum": 3}]


def test_recogniser():
    assert near(4) == 4


def test_ne():
    assert not square(3) != 9


def test_contains():
    assert 7 in digits(7)


def test_first_seen():
    assert third(9) == 3


def test_helper():
    assert same(add(2, 3), 5)


def test_helper_ne():
    assert not differ(square(3), 9)


class TestUnit(unittest.TestCase):
    def test_equal(self):
        self.assertEqual(mul(2, 3), 6)

    def test_in(self):
        self.assertIn(6, [mul(2, 3)])

    def test_named(self):
        self.assertIn(member=6, container=[mul(2, 3)])
'''
HONEST_CALC = '''\
import collections
import dataclasses
import decimal
import enum


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: int


Pair = collections.namedtuple("Pair", "a b")


class Color(enum.Enum):
    RED = 1


class Level(enum.IntEnum):
    LOW = 1


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


class Vector:
    """Like a numpy array: `==` is elementwise, its truth ambiguous."""

    def __init__(self, *items):
        self.items = list(items)

    def __eq__(self, other):
        theirs = other.items if isinstance(other, Vector) else [other] * len(self.items)
        return Vector(*(mine == each for mine, each in zip(self.items, theirs)))

    def __bool__(self):
        if len(self.items) != 1:
            raise ValueError("the truth value of a vector is ambiguous")
        return bool(self.items[0])

    def all(self):
        return all(self.items)


def point():
    return Point(1, 2)


def price():
    return decimal.Decimal("1.10")
'''
HONEST = '''\
import unittest
from unittest import mock
from unittest.mock import ANY, call

import pytest

from calc import Color, Level, Money, Pair, Point, Vector, Version, point, price
from helpers import differ, same


def test_values():
    assert point() == Point(1, 2)
    assert [point(), {"p": point()}] == [Point(1, 2), {"p": Point(1, 2)}]
    assert Pair(1, 2) == (1, 2)
    assert Color.RED == Color.RED and Level.LOW == 1
    assert price() == 1.1 or price() == price()
    assert Money(300) == 300 and Money(300) == Money(300)
    assert point() in [Point(0, 0), Point(1, 2)]
    assert (Vector(1, 2) == Vector(1, 2)).all()
    assert Vector(3) == Vector(3)
    assert 0.1 + 0.2 == pytest.approx(0.3)
    assert [0.1 + 0.2] == pytest.approx([0.3])
    assert same(point(), Point(1, 2)) and same(Money(3), 3) and not differ(Vector(3), Vector(3))
    assert isinstance(point(), Point) and same(Vector(1, 2), Vector(1, 2)).all()
    assert Version(1, 2) == Version(1, 2) and Version(1, 2) != (1, 2) and not same(Version(1), 1)
    assert Version(1) not in [(1,), 1] and differ(Version(1), "1")


def test_written_any():
    m = mock.MagicMock()
    m(1, 2, key="v")
    assert m.call_args == call(ANY, 2, key=ANY)
    assert m.call_args == mock.call(mock.ANY, 2, key="v")
    assert m == m and callable(m) and same(m.call_args, call(1, ANY, key="v"))
    assert m.mock_calls == [call(1, 2, key="v"), call.__eq__(m)]


class TestUnit(unittest.TestCase):
    def test_values(self):
        self.assertEqual(point(), Point(1, 2))
        self.assertEqual({"k": ANY}, {"k": 3})
        self.assertIn(point(), [point()])
        self.assertCountEqual([Point(1, 2), Point(2, 1)], [Point(2, 1), Point(1, 2)])
'''
FAILING = '''\
from calc import Point, point


def test_fails():
    x = 3
    assert point() == Point(x, 2)


def test_in_fails():
    assert Point(5, 5) in [point()]
'''


def _pytest(tmp_path: Path, calc: str, tests: dict[str, str], **env: str) -> tuple[list[dict[str, Any]], str]:
    """Run pytest on a project of `calc` and `tests` with the confirmation installed; its records and output."""
    (tmp_path / "tests").mkdir(parents=True, exist_ok=True)
    (tmp_path / "calc.py").write_text(calc)
    (tmp_path / "conftest.py").write_text("")
    for name, text in tests.items():
        (tmp_path / "tests" / name).write_text(text)
    (tmp_path / "driver.py").write_text(DRIVER)
    records = tmp_path / "records.jsonl"
    # The inner session's own temporary folders under this test's (pytest's default root is shared: its clean-up
    # of the oldest sessions' folders there would remove a whole earlier session's, in this test's time).
    (tmp_path / "temproot").mkdir(exist_ok=True)
    done = subprocess.run([sys.executable, str(tmp_path / "driver.py")], cwd=tmp_path, capture_output=True,
                          text=True, env={**os.environ, "RECORDS": str(records), "PYTHONDONTWRITEBYTECODE": "1",
                                          "PYTEST_DEBUG_TEMPROOT": str(tmp_path / "temproot"), **env}, timeout=120)
    return [json.loads(line) for line in records.read_text().splitlines()], done.stdout


@pytest.mark.slow
def test_every_object_equal_to_everything_is_reported_with_its_test_and_operand(tmp_path: Path) -> None:
    records, output = _pytest(tmp_path, CALC, {"test_attacked.py": ATTACKED, "helpers.py": HELPERS})

    # What the confirmation sees, it never changes (the gate decides), but for an object that takes its answer
    # from the first value it meets: a probe, which then fails its test.
    assert "1 failed, 12 passed" in output and "FAILED tests/test_attacked.py::test_first_seen" in output, output
    seen = {record["equal"].partition("::")[2]: (record["operand"], record["what"], record["how"])
            for record in records}
    assert seen == {
        "test_add": ("add(2, 3)", "calc.TypeOfOther", "assert"),
        "test_mul": ("mul(2, 3)", "unittest.mock._ANY", "assert"),
        "test_in": ("[1, mul(2, 3)]", "unittest.mock._ANY", "assert"),
        "test_nested": ("pairs(2)", "unittest.mock._ANY", "assert"),
        "test_recogniser": ("near(4)", "calc.Builtins", "assert"),
        "test_ne": ("square(3)", "calc.NeverUnequal", "assert"),
        "test_contains": ("digits(7)", "calc.Everything", "assert"),
        "test_first_seen": ("third(9)", "calc.FirstSeen", "assert"),
        "test_helper": ("add(2, 3)", "calc.TypeOfOther", "call"),
        "test_helper_ne": ("square(3)", "calc.NeverUnequal", "call"),
        "TestUnit::test_equal": ("mul(2, 3)", "unittest.mock._ANY", "assertEqual"),
        "TestUnit::test_in": ("[mul(2, 3)]", "unittest.mock._ANY", "assertIn"),
        "TestUnit::test_named": ("right of in", "unittest.mock._ANY", "assertIn"),
    }, records
    assert {record["site"] for record in records if record["equal"].endswith("::test_add")} == \
        {"tests/test_attacked.py:8"}


MOVES_AWAY = """\
import os

from calc import add


def test_moves_away(tmp_path):
    os.chdir(tmp_path)  # (not put back: glom's CLI test leaves its process there)


def test_add():
    assert add(2, 3) == 5
"""


def test_a_site_is_the_same_whatever_folder_a_test_before_it_moved_the_process_to(tmp_path: Path) -> None:
    """The base's run of a test shows an object where the head's does only when both name the same site: a path
    from the folder the run started in, not from wherever an earlier test left the process (the site was
    `../../../work/glom/test/test_match.py:84` after glom's CLI test, and a real regression read as tampering)."""
    records, output = _pytest(tmp_path, CALC, {"test_moves.py": MOVES_AWAY})

    assert "2 passed" in output, output
    assert [(record["equal"], record["site"]) for record in records] == [
        ("tests/test_moves.py::test_add", "tests/test_moves.py:11")]


# Objects with no instance dict of their own (a slotted class; one whose class gives it a `__dict__` of its
# making): the confirmation reads what they hold through their slots and through that `__dict__`, as it reads
# any object's fields, though it no longer asks a type without any `__dict__` for one.
HIDDEN_FIELDS = """\
class Everything:
    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


class Slotted:
    __slots__ = ("inner",)

    def __init__(self, inner):
        self.inner = inner

    def __eq__(self, other):
        return isinstance(other, Slotted) and self.inner == other.inner

    __hash__ = object.__hash__


class Made:
    __slots__ = ()
    __dict__ = property(lambda self: {"inner": Everything()})

    def __eq__(self, other):
        return isinstance(other, Made) and self.__dict__["inner"] == 5

    __hash__ = object.__hash__


def slotted(value):
    return Slotted(value)


def made():
    return Made()
"""
HIDDEN_TESTS = """\
from calc import Everything, Made, Slotted, made, slotted


def test_slot():
    assert slotted(Everything()) == Slotted(3)


def test_made_dict():
    assert made() == Made()


def test_honest_slot():
    assert slotted(2) == Slotted(2)
"""


def test_an_object_equal_to_everything_held_in_a_slot_or_a_class_made_dict_is_reported(tmp_path: Path) -> None:
    records, output = _pytest(tmp_path, HIDDEN_FIELDS, {"test_hidden.py": HIDDEN_TESTS})

    assert "3 passed" in output, output
    assert {(r["equal"].partition("::")[2], r["what"]) for r in records} == {
        ("test_made_dict", "calc.Everything"), ("test_slot", "calc.Everything")}, records


def test_an_honest_suite_reports_the_gate_s_object_alone_and_an_any_held_out_of_sight(tmp_path: Path) -> None:
    """Honest values and the ANY a test writes are not reported; the gate's always-equal object is, through each
    kind of assertion, in each test (the tripwire's part, here in every test's call); the test's own ANY held in
    a variable, out of sight of the assertion's source, is reported for the base's run to clear (`confirmed`)."""
    held = "from unittest.mock import ANY\n\n\ndef test_held():\n    expected = {'id': ANY}\n" \
           "    assert {'id': 5} == expected\n"
    records, output = _pytest(tmp_path, HONEST_CALC, {"test_honest.py": HONEST, "helpers.py": HELPERS,
                                                      "test_held.py": held}, TRIP="1")

    assert "4 passed" in output, output  # the mock's calls hold no call of the gate's (its `==` was not asked)
    mine = [(record["equal"], record["how"], record["what"]) for record in records if record["what"].endswith("Entry")]
    tests = ["tests/test_held.py::test_held", "tests/test_honest.py::test_values",
             "tests/test_honest.py::test_written_any", "tests/test_honest.py::TestUnit::test_values"]
    assert sorted(mine) == sorted((test, how, f"{test.split('/')[1].partition('.')[0]}.Entry") for test in tests
                                  for how in ("assert", "call", "assertEqual"))
    assert [(record["equal"], record["operand"], record["what"]) for record in records
            if not record["what"].endswith("Entry")] == [(tests[0], "expected", "unittest.mock._ANY")]


@pytest.mark.slow
def test_pytest_reports_a_failed_assertion_as_it_does_without_the_confirmation(tmp_path: Path) -> None:
    _, hooked = _pytest(tmp_path, HONEST_CALC, {"test_failing.py": FAILING})
    _, plain = _pytest(tmp_path, HONEST_CALC, {"test_failing.py": FAILING}, HOOK="off")

    def report(output: str) -> list[str]:
        return [line for line in output.splitlines() if not line.startswith(("2 failed", "="))]

    assert "assert Point(x=1, y=2) == Point(x=3, y=2)" in hooked and "test_failing.py:6: in test_fails" in hooked
    assert report(hooked) == report(plain)


@pytest.mark.slow
def test_a_suite_pinned_to_pytest_6_is_confirmed_as_on_pytest_9(tmp_path: Path) -> None:
    """pytest before 7 places the nodes it makes only once the assertion is rewritten (pyrsistent's
    `tests_require` pins pytest < 7): the confirmation's calls must compile there too, report the same objects,
    and leave pytest's failure reports as they are."""
    records, output = _pytest(tmp_path / "attacked", CALC, {"test_attacked.py": ATTACKED, "helpers.py": HELPERS},
                              BEFORE_PYTEST_7="1")
    now, _ = _pytest(tmp_path / "now", CALC, {"test_attacked.py": ATTACKED, "helpers.py": HELPERS})
    _, hooked = _pytest(tmp_path / "failing", HONEST_CALC, {"test_failing.py": FAILING}, BEFORE_PYTEST_7="1")
    _, plain = _pytest(tmp_path / "plain", HONEST_CALC, {"test_failing.py": FAILING}, HOOK="off", BEFORE_PYTEST_7="1")

    assert "1 failed, 12 passed" in output, output
    assert [(r["equal"], r["operand"], r["what"], r["how"]) for r in records] == \
        [(r["equal"], r["operand"], r["what"], r["how"]) for r in now]
    assert "assert Point(x=1, y=2) == Point(x=3, y=2)" in hooked, hooked
    assert [line for line in hooked.splitlines() if not line.startswith(("2 failed", "="))] == \
        [line for line in plain.splitlines() if not line.startswith(("2 failed", "="))]


WALRUS = """\
from calc import add, mul


def test_left():
    assert (total := add(2, 3)) == 5
    assert total == 5


def test_right():
    assert 6 == (product := mul(2, 3))


def test_both():
    assert (total := add(2, 3)) == (product := mul(2, 3))


def test_honest():
    assert (n := len("abc")) == 3 and n != 4
"""


@pytest.mark.parametrize("pytest_8", [False, True], ids=["pytest 9", "pytest 8.3"])
def test_an_object_equal_to_everything_bound_by_an_assignment_expression_is_reported(
        tmp_path: Path, pytest_8: bool) -> None:
    """`assert (y := f()) == 6`: pytest 8.3 and 8.4 leave the assignment expression in the comparison (pytest 9
    names it first); its value is confirmed either way, evaluated once, where it was."""
    records, output = _pytest(tmp_path, CALC, {"test_walrus.py": WALRUS}, **({"PYTEST_8_WALRUS": "1"} if pytest_8
                                                                              else {}))

    assert "4 passed" in output, output
    assert sorted((r["equal"].partition("::")[2], r["operand"], r["what"]) for r in records) == [
        ("test_both", "product := mul(2, 3)", "unittest.mock._ANY"),
        ("test_both", "total := add(2, 3)", "calc.TypeOfOther"),
        ("test_left", "total", "calc.TypeOfOther"),
        ("test_left", "total := add(2, 3)", "calc.TypeOfOther"),
        ("test_right", "product := mul(2, 3)", "unittest.mock._ANY")]


# boltons' test of its total_ordering: a value class found unequal to 1, whose value is near 1 (3 = 1 + 2). The
# probe near the other operand belongs to `==` only: with it, one run in seven reported Number(3) as equal to
# everything (its offset drawn 2), and the base's run, drawing another, did not, so the head was "tampered".
UNEQUAL = """\
import unittest


class Number:
    def __init__(self, val):
        self.val = int(val)

    def __eq__(self, other):
        return self.val == other


def test_unequal_to_a_near_value():
    for near in range(1, 9):
        number = Number(1 + near)
        assert number != 1
        assert number == 1 + near


class TestUnit(unittest.TestCase):
    def test_unequal(self):
        for near in range(1, 9):
            self.assertNotEqual(Number(1 + near), 1)
"""


def test_an_honest_value_unequal_to_a_value_near_its_own_is_never_reported(tmp_path: Path) -> None:
    records, output = _pytest(tmp_path, HONEST_CALC, {"test_unequal.py": UNEQUAL})

    assert "2 passed" in output, output
    assert records == []


# A test that takes `sys._getframe` away while its assertions run (attrs' test of its own fallback).
WITHOUT_GETFRAME = """\
import sys
from dataclasses import dataclass


@dataclass
class Point:
    x: int


def test_without_getframe(monkeypatch):
    monkeypatch.delattr(sys, "_getframe")
    points = (Point(1),)
    assert 1 == len(points)
    assert points[0] == Point(1)
"""


@pytest.mark.slow
def test_a_test_that_takes_getframe_away_passes_as_it_does_without_the_confirmation(tmp_path: Path) -> None:
    _, hooked = _pytest(tmp_path, HONEST_CALC, {"test_frames.py": WITHOUT_GETFRAME})
    _, plain = _pytest(tmp_path, HONEST_CALC, {"test_frames.py": WITHOUT_GETFRAME}, HOOK="off")

    assert "1 passed" in plain and "1 passed" in hooked, hooked


# Library code that switches a part of the confirmation off (reaching pytest through `sys` as another module's
# attribute, as no static reading follows), and the part of the tripwire's report that goes missing.
_REWRITE = "import typing\n\n_rewrite = typing.sys.modules['_pytest.assertion.rewrite']\n"
SWITCHED_OFF = {
    "the-comparison-s-helpers-patched": (_REWRITE + "_rewrite._gate_equal = lambda result, *args: result\n"
                                         "_rewrite._gate_ahead = lambda *args: None\n", {"assert"}),
    "the-call-s-helper-patched": (_REWRITE + "_rewrite._gate_called = lambda result, *args: result\n", {"call"}),
    # pytest's rewriting made its own again, for what it rewrites after this import.
    "the-rewriting-restored": (_REWRITE + "_rewriter = _rewrite.AssertionRewriter\n"
                               "_rewriter.visit_Compare = _rewriter.visit_Call = _rewriter.generic_visit\n",
                               {"assert", "call"}),
    "unittest-s-assertion-unwrapped": ("import typing\n\n_case = typing.sys.modules['unittest'].TestCase\n"
                                       "_case.assertEqual = _case.assertEqual.__wrapped__\n", {"assertEqual"}),
}


@pytest.mark.parametrize("name", sorted(SWITCHED_OFF))
def test_what_a_head_switches_off_leaves_the_gate_s_object_unreported(tmp_path: Path, name: str) -> None:
    code, missing = SWITCHED_OFF[name]
    records, output = _pytest(tmp_path, code + "\n\ndef mul(a, b):\n    return a * b\n",
                              {"test_switched.py": "from calc import mul\n\n\ndef test_mul():\n"
                                                   "    assert mul(2, 3) == 6\n"}, TRIP="1")

    assert "1 passed" in output, output
    assert {record["how"] for record in records if record["what"].endswith(".Entry")} == \
        {"assert", "call", "assertEqual"} - missing, records


# -- the gate's reading of those records (gate/suite/tripwire.py) ------------------------------------------------

_ADD, _MUL = "tests/test_calc.py::test_add", "tests/test_calc.py::test_mul"


def _records(*events: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"collected": [_ADD, _MUL], "unhostable": [], "always": "Entry"}, *events, {"done": 0}]


def _seen(test: str, what: str = "calc.Anything", how: str = "assert") -> dict[str, Any]:
    return {"equal": test, "site": "tests/test_calc.py:7", "operand": "add(2, 3)", "what": what, "how": how}


def _ran(test: str, status: str = "passed", *seen: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"start": test}, *seen, {"test": test, "status": status}]


def test_an_object_equal_to_everything_in_a_test_is_a_suspect() -> None:
    found = read(_records(*_ran(_ADD, "passed", _seen(_ADD)), *_ran(_MUL)), (), None, "run 1")

    equal = Equal(_ADD, "tests/test_calc.py:7", "add(2, 3)", "calc.Anything", "assert")
    assert not found.tampered and found.equal == [equal]
    assert found.suspects == [Suspect("run 1", None, equal.words(), equal)]
    assert "add(2, 3)" in equal.words() and "calc.Anything" in equal.words()


def test_an_equality_record_outside_its_test_is_tampering() -> None:
    found = read(_records(_seen(_ADD), *_ran(_ADD), *_ran(_MUL)), (), None, "run 1")

    assert found.tampered and "outside its run" in found.tampered[0]


def test_a_tripwire_that_must_pass_needs_the_gate_s_object_reported_every_way() -> None:
    trip = Trip(PASS, False, at=0.0)
    mine = [_seen(_ADD, "tests.test_calc.Entry", how) for how in ("assert", "call", "assertEqual")]

    reported = read(_records(*_ran(_ADD), *_ran(_ADD, "passed", *mine), *_ran(_MUL)), (trip,), None, "run 1")
    half = read(_records(*_ran(_ADD), *_ran(_ADD, "passed", mine[0], mine[2]), *_ran(_MUL)), (trip,), None, "run 1")
    skipped = read(_records(*_ran(_ADD), *_ran(_ADD, "skipped"), *_ran(_MUL)), (trip,), None, "run 1")

    assert not reported.suspects and not reported.equal  # the gate's own object is no suspect
    assert [suspect.trip for suspect in half.suspects] == [Trip(PASS, False, host=_ADD)]
    assert "was not reported (call)" in half.suspects[0].seen
    assert not skipped.suspects  # its call never ran


def test_the_base_clears_an_object_its_own_run_shows_there_and_confirms_the_rest() -> None:
    head = read(_records(*_ran(_ADD, "passed", _seen(_ADD)), *_ran(_MUL, "passed", _seen(_MUL))), (), None, "run 1")
    base = read(_records(*_ran(_ADD, "passed", _seen(_ADD)), *_ran(_MUL)), (), None, "control")
    failed = read(_records(*_ran(_ADD, "failed"), *_ran(_MUL, "failed")), (), None, "control")

    assert confirmed(head.suspects, base) == [f"run 1: {head.suspects[1].seen}"]
    assert confirmed(head.suspects, failed) == []  # a test the base does not pass: nothing to charge, no forgery


def test_a_tripwire_s_control_reads_the_base_s_report_of_the_object() -> None:
    trip = Trip(PASS, False, host=_ADD)
    suspect = Suspect("run 1", trip, "not reported")
    mine = [_seen(_ADD, "tests.test_calc.Entry", how) for how in ("assert", "call", "assertEqual")]
    right = read(_records(*_ran(_ADD), *_ran(_ADD, "passed", *mine), *_ran(_MUL)), (trip,), [_ADD, _MUL], "c")
    wrong = read(_records(*_ran(_ADD), *_ran(_ADD, "passed"), *_ran(_MUL)), (trip,), [_ADD, _MUL], "c")

    assert confirmed([suspect], right) == ["run 1: not reported"]
    assert confirmed([suspect], wrong) == []
