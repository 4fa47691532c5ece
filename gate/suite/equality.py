"""Equality decided at run time: what an assertion of the base's tests finds equal is confirmed (README
invariant 17).

This module runs in the tests' process (the suite's harness, gate/suite/harness.py, starts it before pytest
imports any module of the tree), on the standard library only. The code under test shares that process, so
its objects decide what `==` says about them: an object equal to everything (an `__eq__` that returns
`type(other)`, `unittest.mock.ANY` returned from a library function) passes `assert f(x) == 4` whatever
`f` computed. So what an assertion compares is confirmed here:

- `assert` statements of the modules pytest rewrites (the base's test modules and conftests): the rewriting
  is pytest's, with a step before and after each `==`, `!=`, `in` and `not in`, and each call (`hook`); its
  failure messages and line numbers stay as they are. A call's arguments are confirmed as a comparison's
  operands: a helper the assertion calls may compare them where nothing is rewritten (`assert same(f(x), 4)`,
  with `same` in an installed test library or a helper module of the tests). unittest's `assertEqual` family
  and `assertIn`, which compare inside unittest, are confirmed as they start and as they return. Before as
  well as after: an object that takes its answer from the first value it meets meets a probe first.
- Values of exact builtin types, walked through lists, tuples and dicts, need nothing: the interpreter
  compares them. Any other object in them whose class compares its own way is compared once more with probes
  no honest value equals: an instance of a class made for this run, with a plausible name; a random int and
  str; the builtin operand it was compared with, altered. A dataclass, a namedtuple, an Enum, a Decimal, an
  attrs or pydantic model, an `__eq__` that compares fields, a numpy array: each equals none of them. An object
  equal to a probe is equal to everything (or, for `!=`, unequal to nothing), and the assertion it passed
  proves nothing. A container's `__contains__` is probed the same way for `in`.
- What is seen is written on the result channel as the test's (`{"equal": node id, "site", "operand",
  "what", "how"}`), and the gate decides outside (gate/suite/tripwire.py): an object the base's own run of
  that test does not show there is the change's. An object the operand's own source names (`call(ANY, 3)`:
  the name `ANY` or `mock.ANY`, a class it calls) is the test's, and is not reported.

The code under test can reach this module as it can reach pytest, so the gate checks that it works: every
run's tripwire that must pass also puts an always-equal object of the gate's through an assertion that
pytest rewrites as the tripwire runs (its comparison and a call), and through unittest's `assertEqual`; the
gate must see all three reported (`trip`), or the run was tampered with.
"""

from __future__ import annotations

import ast
import contextlib
import os
import secrets
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

# Operators confirmed, and the truth of their result that means "found equal" (`!=` found equal is False).
_OPERATORS = {ast.Eq: ("==", True), ast.NotEq: ("!=", False), ast.In: ("in", True), ast.NotIn: ("not in", False)}
# The rewritten assertions call these attributes of pytest's rewriting module (`@pytest_ar`), as its own
# helpers: before a comparison, after it, around a call.
AHEAD, HELPER, CALLED = "_gate_ahead", "_gate_equal", "_gate_called"
# Exact types whose equality is the interpreter's own: nothing to confirm.
_PLAIN = frozenset({int, float, complex, str, bytes, bool, type(None), type(...), type(NotImplemented), range,
                    slice, bytearray, type, type(len), type(_OPERATORS.get), type(lambda: 0),
                    type(object.__eq__), type(int.__eq__)})
# Builtin types whose `==` an object inherits: the interpreter's comparison, of its value or items.
_BUILTIN_EQ = frozenset({int, float, complex, str, bytes, bool, tuple, list, dict, set, frozenset, bytearray,
                         type(None)})
# Bound as this module loads: a test may take `sys._getframe` away (attrs' tests do) while its assertions run.
_FRAME = sys._getframe
# The folder the run started in (the tree's top), bound as this module loads: a site is a path from here, the same
# in every run of that file, whatever folder a test moved the process to before (glom's `os.chdir(tmp_path)`).
_STARTED_IN = os.getcwd()
_MOST = 1_000_000  # values walked per comparison: a bound on a pathological structure
_OBJECTS = 64  # objects probed or walked into per comparison
_DEPTH = 3  # objects walked into, nested
_REPORTS = 4  # observations reported per test
_NAMES = ("Record", "Entry", "Item", "Value", "Result", "Node", "Token", "Field", "Pair", "Span", "Event",
          "Config", "Message", "Payload", "Element", "Option")
# unittest's assertions that compare inside unittest, and how: only their passing matters.
_UNITTEST = {"assertEqual": "==", "assertEquals": "==", "failUnlessEqual": "==", "assertListEqual": "==",
             "assertTupleEqual": "==", "assertDictEqual": "==", "assertSequenceEqual": "==",
             "assertCountEqual": "==", "assertAlmostEqual": "==", "assertAlmostEquals": "==",
             "failUnlessAlmostEqual": "==", "assertIn": "in"}


def names(count: int) -> list[str]:
    """`count` different class names a test's module could hold, at random (the harness picks its run's)."""
    chosen = list(_NAMES)
    secrets.SystemRandom().shuffle(chosen)
    return chosen[:count]


class Confirmation:
    """Confirms what the assertions of the running test find equal, and reports what is equal to everything.
    `write` takes a record for the result channel; `probe` and `always` name the classes of this run's probe
    (nothing equals it) and of the gate's own always-equal object (its tripwire)."""

    def __init__(self, write: Callable[[dict[str, Any]], None], probe: str, always: str) -> None:
        self._write = write
        self.always = always
        self.test: str | None = None  # the node id of the test running now, while it runs
        self._reported: set[tuple[str, str, str]] = set()
        self._nesting = 0  # unittest's assertions call each other: the outermost confirms
        generator = secrets.SystemRandom()
        self._probe = type(probe, (), {"__slots__": (), "__module__": "conftest"})()
        self._int = generator.randrange(10**6, 10**9)
        self._str = "".join(generator.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(generator.randrange(6, 11)))
        self._offset = generator.randrange(1, 8)  # (what `_altered` adds)
        self._always = type(always, (), {"__slots__": (), "__eq__": lambda self, other: True,
                                         "__ne__": lambda self, other: False, "__hash__": object.__hash__})
        self._sources: dict[str, _Parsed | None] = {}
        self._plain_pair: tuple[Any, Any] | None = None  # the operands `ahead` found plain, for `seen` next

    def start(self, nodeid: str | None) -> None:
        """The test `nodeid` starts (None: it ended)."""
        self.test = nodeid
        self._reported = set()

    # -- what assertions call ------------------------------------------------------------------------------

    def ahead(self, left: Any, right: Any, where: tuple[Any, ...]) -> None:
        """A rewritten assertion's comparison, before it compares (`seen` comes after): its operands meet the
        probes first, so that an object that takes its answer from what it meets first (equal to the first value
        it is compared with, or True once it has counted the probes) is seen either way."""
        # Comparing plain operands runs no code but the interpreter's, which changes neither: `seen`, next, needs
        # no second look at them.
        self._plain_pair = (left, right) if _plain(left) and _plain(right) else None
        if self._plain_pair is None and self.test is not None:
            self._confirm(left, right, str(where[0]), "assert", _FRAME(1), where[1:])

    def seen(self, result: Any, left: Any, right: Any, equal: bool, where: tuple[Any, ...]) -> Any:
        """A rewritten assertion's comparison: `result` of `left OP right`, which is "found equal" when its
        truth is `equal`; `where` is (OP, each operand's line, column, end line and end column). Returns
        `result`, as it was."""
        pair, self._plain_pair = self._plain_pair, None
        if type(result) is bool:
            if result is not equal:
                return result
        else:
            try:
                if bool(result) is not equal:
                    return result
            except Exception:  # (an array's truth: the assertion says so itself)
                return result
        if (pair is not None and pair[0] is left and pair[1] is right) or (_plain(left) and _plain(right)):
            return result
        self._confirm(left, right, str(where[0]), "assert", _FRAME(1), where[1:])
        return result

    def called(self, result: Any, where: tuple[int, ...], *values: Any) -> Any:
        """A rewritten assertion's call with the arguments `values` (`where`: each one's line, column, end line
        and end column), before it is made (`result` None) and after (its `result`). Each argument is confirmed
        as a comparison's operand, for `==` and `!=`: the function may compare it where nothing is rewritten.
        Returns `result`, as it was."""
        if self.test is None or all(map(_plain, values)):
            return result
        frame = _FRAME(1)
        budget = [_MOST, _OBJECTS]
        try:
            with _quiet():
                for index, value in enumerate(values):
                    found = self._walk(value, _ANY_WAY, None, budget)
                    if found is not None:
                        self._report(found, index, "==", "call", frame, where)
        except Exception:  # (what the code under test raised from a probe: no confirmation, no failure)
            pass
        return result

    def _confirm(self, left: Any, right: Any, operator: str, how: str, frame: Any, where: tuple[Any, ...]) -> None:
        if self.test is None:
            return
        try:
            with _quiet():
                for side, found in self._universal(left, right, operator):
                    self._report(found, side, operator, how, frame, where)
        except Exception:  # (what the code under test raised from a probe: no confirmation, no failure)
            pass

    def _universal(self, left: Any, right: Any, operator: str) -> Iterator[tuple[int, Any]]:
        """(operand index, object) for each operand that holds an object equal to everything."""
        budget = [_MOST, _OBJECTS]
        if operator in ("in", "not in"):
            found = self._walk(left, "==", right, budget)
            if found is not None:
                yield 0, found
            container = type(right)
            if container is list or container is tuple:
                found = self._walk(right, "==", left, budget)
            elif container in _PLAIN or container in (dict, set, frozenset) or container in _VIEWS:
                found = None  # hashed, or the interpreter's own
            else:
                found = self._container(right, budget)
            if found is not None:
                yield 1, found
            return
        for index, (value, other) in enumerate(((left, right), (right, left))):
            found = self._walk(value, operator, other, budget)
            if found is not None:
                yield index, found

    def _walk(self, value: Any, operator: str, other: Any, budget: list[int]) -> Any:
        """The first object in `value` (items of builtin containers, the fields of an object that compares its
        own way, nested) equal to a probe, else None. `other` is what `value` was compared with; `operator` is
        the comparison's, or `_ANY_WAY` (a call's argument): equal to a probe, or unequal to none by its own
        `__ne__`."""
        stack: list[tuple[Any, int]] = [(value, 0)]
        seen: set[int] = set()
        while stack:
            item, depth = stack.pop()
            kind = type(item)
            if kind in _PLAIN:
                continue
            budget[0] -= 1
            if budget[0] < 0:
                return None
            if kind is list or kind is tuple or kind is dict or kind is set or kind is frozenset:
                if id(item) not in seen:
                    seen.add(id(item))
                    items = item.values() if kind is dict else item
                    if not _PLAIN.issuperset(map(type, items)):
                        stack.extend((each, depth) for each in items)
                continue
            budget[1] -= 1
            if budget[1] < 0 or id(item) in seen:
                continue
            seen.add(id(item))
            compares, method = _compares(kind, "__eq__")
            unequal = _compares(kind, "__ne__")[0] if operator != "==" else _IDENTITY
            if operator == "!=" and unequal is not _IDENTITY:
                compares, method = _compares(kind, "__ne__")
            asked = "==" if operator == _ANY_WAY else operator
            if compares is _OWN and self._equal_to_probe(item, asked, other if item is value else None):
                return item
            if operator == _ANY_WAY and unequal is _OWN and self._equal_to_probe(item, "!=", None):
                return item
            if compares is _MOCK and _mock_answers(method) and self._equal_to_probe(item, asked, None):
                return item
            if compares in (_OWN, _BUILTIN) and depth < _DEPTH:
                stack.extend((each, depth + 1) for each in _held(item, kind))
        return None

    def _equal_to_probe(self, item: Any, operator: str, other: Any) -> bool:
        # A value near `other` tells only after `==`: an honest object found equal to `other` is not equal to it
        # too, but one found unequal to `other` may well be (`Number(3) != 1`, with 1 + 2 near 1).
        near = self._altered(other) if operator == "==" else ()
        for probe in (self._probe, self._int, self._str, *near):
            try:
                truth = bool(item != probe) if operator == "!=" else bool(item == probe)
            except Exception:
                continue
            if truth is (operator != "!="):
                return True
        return False

    def _container(self, container: Any, budget: list[int]) -> Any:
        """`container` when it holds a probe (`__contains__`, or the items of a list or tuple it is), else the
        first object of its items equal to a probe, else None."""
        kind = type(container)
        if _compares(kind, "__contains__")[0] is _OWN:
            for probe in (self._probe, self._int, self._str):
                try:
                    if probe in container:
                        return container
                except Exception:
                    continue
            return None
        if issubclass(kind, list | tuple):
            return self._walk(list(_held(container, kind)), "==", None, budget)
        return None

    def _altered(self, other: Any) -> tuple[Any, ...]:
        """A value of the same builtin type as `other` and near it, not equal to it: what a test comparing with
        `other` did not expect."""
        kind = type(other)
        if kind is int:
            return (other + self._offset,)
        if kind is float and other == other:
            return (other + (abs(other) + 1.0) * self._offset,)
        if kind is str:
            return (other + self._str[0],)
        if kind is bytes:
            return (other + self._str[:1].encode(),)
        return ()

    # -- unittest ------------------------------------------------------------------------------------------

    def wrap_unittest(self, case: Any) -> None:
        """Confirm the comparisons of unittest's assertions that passed (`case`: unittest.TestCase)."""
        for name, operator in _UNITTEST.items():
            method = case.__dict__.get(name)
            if method is not None:
                setattr(case, name, self._unittest(name, method, operator))

    def _unittest(self, name: str, method: Callable[..., Any], operator: str) -> Callable[..., Any]:
        confirmation = self
        code = getattr(method, "__code__", None)
        # The names of its two operands, for a call that names them (`assertIn(member=..., container=...)`).
        named = code.co_varnames[1:3] if code is not None and code.co_argcount >= 3 else ("first", "second")

        def assertion(self: Any, *args: Any, **kwargs: Any) -> Any:
            operands = [*args[:2], *(kwargs[each] for each in named[len(args):] if each in kwargs)]
            confirm = not confirmation._nesting and len(operands) == 2 and not (_plain(operands[0])
                                                                                 and _plain(operands[1]))
            if confirm:  # before it compares, and after (`Confirmation.ahead`)
                confirmation._confirm(operands[0], operands[1], operator, name, _FRAME(1), ())
            confirmation._nesting += 1
            try:
                result = method(self, *args, **kwargs)
            finally:
                confirmation._nesting -= 1
            if confirm:
                confirmation._confirm(operands[0], operands[1], operator, name, _FRAME(1), ())
            return result

        assertion.__name__ = assertion.__qualname__ = name
        assertion.__doc__ = method.__doc__
        assertion.__wrapped__ = method  # type: ignore[attr-defined]
        return assertion

    # -- the report ----------------------------------------------------------------------------------------

    def _report(self, found: Any, side: int, operator: str, how: str, frame: Any, where: tuple[Any, ...]) -> None:
        mine = isinstance(found, self._always)
        # The gate's own object is told by its class and counted by how it was seen (gate/suite/tripwire.py): its
        # operand is not looked up in the test's source (a parse of the whole file, in every run's tripwire).
        path, line, operand = self._operand(frame, side, how, where, read=not mine)
        if operand is not None and _named(operand[0], found, frame, operand[2]):
            return  # the test wrote it
        text = operand[1] if operand is not None else ("left" if side == 0 else "right") + f" of {operator}"
        site = f"{path}:{line}"
        if self.test is None or (site, text, how) in self._reported or (len(self._reported) >= _REPORTS
                                                                        and not mine):
            return
        self._reported.add((site, text, how))
        self._write({"equal": self.test, "site": site, "operand": text, "what": _what(found), "how": how})

    def _operand(self, frame: Any, side: int, how: str, where: tuple[Any, ...], read: bool = True
                 ) -> tuple[str, int, tuple[ast.expr, str, dict[str, str]] | None]:
        """The operand's file (relative to the working directory) and line, and when the source has it (and is
        `read`), its node, its text and the names the module imports (`where`: a rewritten assertion's
        operands' spans; else unittest's arguments, at the caller's line)."""
        filename = frame.f_code.co_filename
        path = os.path.relpath(filename, _STARTED_IN) if os.path.isabs(filename) else filename
        parsed = self._parsed(filename) if read else None
        line = where[4 * side] if where else frame.f_lineno
        if parsed is None:
            return path, line, None
        if where:
            node = parsed.spans.get(tuple(where[4 * side:4 * side + 4]))
            return path, line, None if node is None else (node, _text(parsed.source, node), parsed.imported)
        for call in parsed.calls.get(line, ()):
            if len(call.args) > side and isinstance(call.func, ast.Attribute) and call.func.attr == how:
                return path, line, (call.args[side], _text(parsed.source, call.args[side]), parsed.imported)
        return path, line, None

    def _parsed(self, filename: str) -> _Parsed | None:
        if filename not in self._sources:
            try:
                with open(filename, encoding="utf-8") as file:
                    source = file.read()
                self._sources[filename] = _Parsed.of(source)
            except (OSError, ValueError, SyntaxError):
                self._sources[filename] = None
        return self._sources[filename]

    # -- the tripwire --------------------------------------------------------------------------------------

    def trip(self, item: Any, case: type) -> None:
        """The gate's always-equal object through an assertion pytest rewrites now, compiled as `item`'s module
        would be (its file, its function's name and line), as a comparison's operand and a call's argument,
        and through `case.assertEqual` (unittest's, or the test's own class): the gate must see all three
        reported while the tripwire runs."""
        try:
            self._always.__module__ = getattr(getattr(item, "module", None), "__name__", "conftest")
            always = self._always()
            expected = secrets.randbelow(10**6)
            self._through_rewriting(item, always, expected)
            case.assertEqual(_a_case(case), always, expected)  # type: ignore[attr-defined]
        except Exception:  # (the confirmation was made to fail: the gate sees nothing reported)
            pass

    def _through_rewriting(self, item: Any, always: Any, expected: int) -> None:
        rewrite = sys.modules["_pytest.assertion.rewrite"]
        path = str(getattr(item, "path", None) or item.fspath)
        function = getattr(item, "originalname", None) or item.name.partition("[")[0]
        line = getattr(getattr(getattr(item, "obj", None), "__code__", None), "co_firstlineno", 1)
        source = "\n" * (line - 1) + (f"def {function}(made, expected, same):\n    assert made() == expected\n"
                                      "    assert same(made(), expected)\n")
        tree = ast.parse(source)
        rewrite.rewrite_asserts(tree, source.encode(), path, item.config)
        namespace: dict[str, Any] = {"__name__": getattr(getattr(item, "module", None), "__name__", "test")}
        exec(compile(tree, path, "exec", dont_inherit=True), namespace)
        namespace[function](lambda: always, expected, lambda one, other: one == other)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """No warning from a probe's comparison (numpy's "elementwise comparison failed") reaches the test: one it
    records (`pytest.warns`, `recwarn`) or turns into an error (`filterwarnings = error`) is the test's own."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _plain(value: Any, depth: int = 0) -> bool:
    """Whether `value` is made of exact builtin types only, nested in lists, tuples, sets and dicts (the values):
    what the interpreter alone compares. (The quick answer for most assertions; `_walk` reads the rest.)"""
    kind = type(value)
    if kind in _PLAIN:
        return True
    if kind is list or kind is tuple or kind is set or kind is frozenset or kind is dict:
        items = value.values() if kind is dict else value
        return _PLAIN.issuperset(map(type, items)) or (
            depth < 8 and all(_plain(item, depth + 1) for item in items))
    return False


# The "operator" of a call's argument: whatever the function does with it, `==` or `!=`.
_ANY_WAY = "== or !="
# How a class compares: as `object` does (identity), as a builtin type does, its own way, or as a MagicMock does.
_IDENTITY, _BUILTIN, _OWN, _MOCK = "identity", "builtin", "own", "mock"
_VIEWS: tuple[type, ...] = (type({}.keys()), type({}.items()))


def _compares(kind: type, method: str) -> tuple[str, Any]:
    """How instances of `kind` answer `method` (`__eq__`, `__ne__`, `__contains__`), and with what: read from
    the classes of its method resolution order as the interpreter reads them, not through attributes the class
    could redefine."""
    for klass in _mro(kind):
        found = _DICT(klass).get(method)
        if found is None:
            continue
        if klass is object:
            return _IDENTITY, None
        if klass in _BUILTIN_EQ:
            return _BUILTIN, None
        if type(found) in _PLAIN:  # a function (a class's own `def`), a builtin's slot: no mock
            return _OWN, found
        if _mock_class(type(found)):  # a MagicMock's method once asked for: a mock, which records each call
            return _MOCK, found
        if type(found).__name__ == "MagicProxy" and type(found).__module__ in _MOCKS:
            return _IDENTITY, None  # a MagicMock's, never asked for: identity
        return _OWN, found
    return _IDENTITY, None


def _mro(kind: type) -> tuple[type, ...]:
    mro: tuple[type, ...] = _MRO(kind)
    return mro


# The real method resolution order and namespace of a class, whatever attributes its metaclass defines.
_MRO = type.__dict__["__mro__"].__get__
_DICT = type.__dict__["__dict__"].__get__
_DICTOFFSET = type.__dict__["__dictoffset__"].__get__
_SEQUENCES = (list, tuple, set, frozenset)


def _mock_class(kind: type) -> bool:
    return any(klass.__name__ == "NonCallableMock" and klass.__module__ in _MOCKS for klass in _mro(kind))


def _mock_answers(method: Any) -> bool:
    """Whether a MagicMock's comparison method (a mock itself) was given an answer. Else it compares by
    identity, and asking it would add a call to the mock's `mock_calls`, which the test may check."""
    state = vars(method)
    side_effect = state.get("_mock_side_effect")
    default = getattr(side_effect, "__qualname__", "").startswith(("_get_eq.", "_get_ne."))
    return not (default and repr(state.get("_mock_return_value")) == "sentinel.DEFAULT")


def _held(item: Any, kind: type) -> list[Any]:
    """What an object holds that its comparison may read: a builtin container's items (read as that type's),
    the values of its attributes."""
    held: list[Any] = []
    if issubclass(kind, dict):
        held += dict.values(item)
    elif issubclass(kind, _SEQUENCES):
        held += list(iter(item) if kind in _SEQUENCES else _builtin_items(item, kind))
    # (Without a `__dict__` in any class of its order, nor a dict of its own, an object has none to read: a C
    # type's, a slotted class's. Asked anyway, the lookup's AttributeError costs every assertion on one.)
    if _DICTOFFSET(kind) or any("__dict__" in _DICT(klass) for klass in _MRO(kind)):
        with contextlib.suppress(AttributeError, TypeError):
            held += object.__getattribute__(item, "__dict__").values()
    for slot in _slots(kind):
        try:
            held.append(object.__getattribute__(item, slot))
        except (AttributeError, TypeError):
            continue
    return held


def _slots(kind: type) -> tuple[str, ...]:
    """The slots of `kind`'s classes (a class's slots are made with it: they never change), remembered by the
    class's identity (its own `__hash__` and `__eq__` could be anything)."""
    known = _SLOTS.get(id(kind))
    if known is not None and known[0] is kind:
        return known[1]
    found: list[str] = []
    for klass in _MRO(kind):
        slots = _DICT(klass).get("__slots__", ())
        found += [slots] if isinstance(slots, str) else [slot for slot in slots if isinstance(slot, str)]
    _SLOTS[id(kind)] = (kind, tuple(found))
    return tuple(found)


_SLOTS: dict[int, tuple[type, tuple[str, ...]]] = {}


def _builtin_items(item: Any, kind: type) -> list[Any]:
    for base in _SEQUENCES:
        if issubclass(kind, base):
            return list(base.__iter__(item))
    return []


# Where `ANY` and its kind come from: a test that names them there wrote them.
_MOCKS = ("unittest.mock", "mock", "mock.mock")


def _named(node: ast.AST, found: Any, frame: Any, imported: dict[str, str]) -> bool:
    """Whether the operand's source writes `found`, an object of unittest.mock's (`ANY`): by a name the test
    module imports from it (`imported`: name -> the module it is imported from), or as an attribute of the
    module itself (`mock.ANY`). Never a name the code under test could have bound (a local variable, a
    module of the tree's attribute)."""
    if type(found).__module__ not in _MOCKS:
        return False
    for part in ast.walk(node):
        if isinstance(part, ast.Name) and imported.get(part.id) in _MOCKS and frame.f_globals.get(part.id) is found:
            return True
        if isinstance(part, ast.Attribute):
            owner = _module(part.value, frame)
            if owner is not None and owner.__name__ in _MOCKS and vars(owner).get(part.attr) is found:
                return True
    return False


def _module(node: ast.AST, frame: Any) -> Any:
    """The module a dotted name of the test's module globals names (`mock`, `unittest.mock`), else None."""
    if isinstance(node, ast.Name):
        value = frame.f_globals.get(node.id)
    elif isinstance(node, ast.Attribute):
        owner = _module(node.value, frame)
        value = vars(owner).get(node.attr) if owner is not None else None
    else:
        return None
    return value if type(value) is type(os) else None


class _Parsed:
    """A test file as its reports read it: the source, the names its top level imports, and its nodes indexed
    by where they are (an expression by its span, a call by its first line: each the first in `ast.walk`'s
    order, as a walk for each report would find it), walked once rather than once a report."""

    __slots__ = ("calls", "imported", "source", "spans")

    def __init__(self, source: str, tree: ast.Module) -> None:
        self.source = source
        self.imported = _imports(tree)
        self.spans: dict[tuple[Any, ...], ast.expr] = {}
        self.calls: dict[int, list[ast.Call]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.expr):
                self.spans.setdefault((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset), node)
                if isinstance(node, ast.Call):
                    self.calls.setdefault(node.lineno, []).append(node)

    @classmethod
    def of(cls, source: str) -> _Parsed:
        return cls(source, ast.parse(source))


def _imports(tree: ast.Module) -> dict[str, str]:
    """The names the module's top level imports, each with the module it comes from."""
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.update({alias.asname or alias.name: node.module for alias in node.names})
        elif isinstance(node, ast.Import):
            found.update({alias.asname or alias.name.partition(".")[0]: alias.name for alias in node.names})
    return found


def _text(source: str, node: ast.AST) -> str:
    text = " ".join((ast.get_source_segment(source, node) or "").split())
    return text if len(text) <= 80 else text[:77] + "..."


def _what(found: Any) -> str:
    """The class of `found` in words (its module and name, as the class says)."""
    kind = type(found)
    try:
        return f"{kind.__module__}.{kind.__qualname__}"
    except Exception:
        return "an object"


def _a_case(case: type) -> Any:
    """An instance of the TestCase class `case` to call its assertions on, made without running its code."""
    instance: Any = object.__new__(case)
    import unittest

    unittest.TestCase.__init__(instance)
    return instance


def _constant(value: tuple[Any, ...]) -> ast.expr:
    """A tuple of constants as the rewritten code's constant (a fresh node for each place it is used)."""
    constant: ast.expr = ast.Constant(value)  # type: ignore[arg-type]
    return constant


_Node = TypeVar("_Node", bound=ast.AST)


def _placed(node: _Node, like: ast.AST) -> _Node:
    """`node` at `like`'s place in the source, with every node in it that has none. Before pytest 7 the nodes
    pytest makes have no place until the assertion is rewritten, when pytest gives every node of its statements
    the assertion's start (and no end): `node` is then left without one too, since a node that had the module's
    first line as its end would end before it starts (an AST Python 3.11 refuses to compile)."""
    if getattr(like, "lineno", None) is None:
        return node
    return ast.fix_missing_locations(ast.copy_location(node, like))


def _by_name(rewriter: Any, statement: ast.stmt, operand: ast.expr) -> ast.expr:
    """`operand` of the comparison `statement` makes, by a name: pytest 8 leaves an assignment expression
    there (`assert (y := f()) == 6`), which is then given a name of pytest's, assigned just before the
    comparison (where the comparison would have evaluated it), so that the confirmation sees its value."""
    if not isinstance(operand, ast.NamedExpr):
        return operand
    name = rewriter.variable()
    statements = rewriter.statements
    statements.insert(statements.index(statement), _placed(ast.Assign([ast.Name(name, ast.Store())], operand),
                                                           operand))
    return ast.Name(name, ast.Load())


def hook(rewrite: Any, confirmation: Confirmation) -> None:
    """Have pytest's assertion rewriting (the module `rewrite`) route each `==`, `!=`, `in` and `not in` of
    an assertion through `confirmation`: `left == right` becomes `ahead(left, right, ...)`, then `seen(left ==
    right, left, right, ...)`, the same operands (pytest's names for them), the result unchanged; and each call
    `f(a, b)` becomes `called(None, ..., a, b)`, then `called(f(a, b), ..., a, b)`."""
    setattr(rewrite, AHEAD, confirmation.ahead)
    setattr(rewrite, HELPER, confirmation.seen)
    setattr(rewrite, CALLED, confirmation.called)
    rewriter = rewrite.AssertionRewriter
    compare, visit_call = rewriter.visit_Compare, rewriter.visit_Call

    def visit_Call(self: Any, call: ast.Call) -> tuple[ast.expr, str]:
        statements = self.statements
        start = len(statements)
        res, explanation = visit_call(self, call)
        for index in range(len(statements) - 1, start - 1, -1):
            statement = statements[index]
            if isinstance(statement, ast.Assign) and isinstance(res, ast.Name) and len(statement.targets) == 1 \
                    and isinstance(statement.targets[0], ast.Name) and statement.targets[0].id == res.id \
                    and isinstance(statement.value, ast.Call):
                made = statement.value
                # The arguments pytest named (an unpacked `*args`, `**kwargs` left out), with their source's span.
                keywords = [(mine.value, theirs.value) for mine, theirs in zip(made.keywords, call.keywords,
                                                                                strict=False) if mine.arg]
                pairs = [*zip(made.args, call.args, strict=False), *keywords]
                named = [(new, old) for new, old in pairs if isinstance(new, ast.Name)]
                if named:
                    where = tuple(position for _, old in named for position in (
                        old.lineno, old.col_offset, old.end_lineno, old.end_col_offset))
                    values = [ast.Name(new.id, ast.Load()) for new, _ in named]
                    ahead = self.helper(CALLED, ast.Constant(None), _constant(where), *values)
                    statements.insert(index, _placed(ast.Expr(ahead), made))
                    after = self.helper(CALLED, made, _constant(where), *values)
                    statement.value = _placed(after, made)
                break
        return res, explanation

    def visit_Compare(self: Any, comp: ast.Compare) -> tuple[ast.expr, str]:
        statements = self.statements
        start = len(statements)
        res, explanation = compare(self, comp)
        results = {node.id for node in ast.walk(res) if isinstance(node, ast.Name)}
        operands = [comp.left, *comp.comparators]
        pair = 0
        for statement in statements[start:]:
            if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                    and isinstance(statement.targets[0], ast.Name) and statement.targets[0].id in results
                    and isinstance(statement.value, ast.Compare) and len(statement.value.ops) == 1):
                continue
            found, pair = statement.value, pair + 1
            operator = _OPERATORS.get(type(found.ops[0]))
            if operator is None or pair >= len(operands):
                continue
            found.left = _by_name(self, statement, found.left)
            found.comparators[0] = _by_name(self, statement, found.comparators[0])
            left, right = found.left, found.comparators[0]
            if not (isinstance(left, ast.Name) and isinstance(right, ast.Name)):
                continue
            where = (operator[0], *(position for operand in operands[pair - 1:pair + 1] for position in (
                operand.lineno, operand.col_offset, operand.end_lineno, operand.end_col_offset)))
            ahead = self.helper(AHEAD, ast.Name(left.id, ast.Load()), ast.Name(right.id, ast.Load()), _constant(where))
            statements.insert(statements.index(statement), _placed(ast.Expr(ahead), found))
            call = self.helper(HELPER, found, ast.Name(left.id, ast.Load()), ast.Name(right.id, ast.Load()),
                               ast.Constant(operator[1]), _constant(where))
            statement.value = _placed(call, found)
        return res, explanation

    rewriter.visit_Call = visit_Call
    rewriter.visit_Compare = visit_Compare
