"""What decides a test's outcome, held as it was collected: the code of the test functions and their helpers.

A test's outcome is its function's code run against the code under test. Code in the tests' process can leave
pytest and its reports alone and change the test instead: replace the `__code__` of a test function, a fixture,
a helper the tests call (their own, an installed test library's, pytest's `approx` and `raises`, unittest's
assertions), or rebind a name a test module looks up (`same = lambda a, b: True`). The tripwires cannot see
that: a test whose code no longer checks anything passes honestly. So once pytest has collected, the harness
(gate/suite/harness.py) notes, for each test module and conftest, the code of every function it defines or
imports, of its classes' methods (their bases' too: unittest.TestCase's), of the functions of the modules it
imports, and the objects its names are bound to; and the code of the framework's own assertion helpers. Before
each test runs (and as its call starts, for the code), what that test depends on must be as noted: a change is
reported, naming what changed and the test it was seen before.

A change is the change's only if the base's own suite, run on that test, does not show it too
(gate/suite/tripwire.py, `confirmed`): a base whose tests rewrite code themselves is the suite's way.

This module is imported by the harness with the framework, before any path of the tree is on `sys.path`
(gate/suite/harness.py, `_OWN`), and imports only the standard library.
"""

from __future__ import annotations

import itertools
import operator
import os
import sys
import types
from collections.abc import Iterable
from typing import Any

# The framework's helpers that decide a test's outcome from inside it: pytest's approx, raises, warns, fail and
# skip (in `_pytest.python_api` before pytest 8.4), and unittest's assertions. What runs a test and reports it
# is the tripwires' to prove (gate/suite/tripwire.py).
HELPERS = ("_pytest.python_api", "_pytest.approx", "_pytest.raises", "_pytest.recwarn", "_pytest.outcomes",
           "unittest.case")


class Guard:
    """The code and the names that each collected test depends on, as noted after collection (`note`);
    `changed` says what is no longer so (each change once)."""

    def __init__(self) -> None:
        # By module name: (function, its code as noted, or None if it was foreign already then, label).
        self._codes: dict[str, list[tuple[Any, Any, str]]] = {}
        self._names: dict[str, list[tuple[dict[str, Any], str, Any, str]]] = {}  # (namespace, name, value, label)
        self._shared: list[str] = []  # the modules every test depends on: the framework's, the conftests
        self._told: set[str] = set()
        # By module name: the functions, their codes, the namespaces, names and values, as parallel tuples.
        self._fast: dict[str, tuple[tuple[Any, ...], ...]] = {}

    def note(self, items: Iterable[Any]) -> None:
        """Note what the collected `items` depend on, as it is now."""
        self._fast.clear()  # (made from what is noted)
        seen: set[int] = set()  # (pytest's namespace holds what its modules define: noted once)
        for name in HELPERS:
            module = sys.modules.get(name)
            if module is not None:
                self._shared.append(name)
                self._codes[name] = _codes_of(module, deep=True, seen=seen)
                self._names[name] = []
        for name, module in list(sys.modules.items()):
            if isinstance(module, types.ModuleType) and str(module.__dict__.get("__file__")).endswith("conftest.py"):
                self._shared.append(name)
                self._note_module(name, module)
        for item in items:
            module = getattr(item, "module", None)
            if isinstance(module, types.ModuleType) and module.__name__ not in self._codes:
                self._note_module(module.__name__, module)

    def _note_module(self, name: str, module: types.ModuleType) -> None:
        try:
            self._note_one(name, module)
        except Exception as error:  # an object that refuses to be looked at: said, as a change would be
            self._codes[name], self._names[name] = [(_unreadable, None, f"what {name} holds could not be read "
                                                                        f"({type(error).__name__})")], []

    def _note_one(self, name: str, module: types.ModuleType) -> None:
        codes = _codes_of(module, deep=True)
        names = []
        for attribute, value in list(vars(module).items()):
            if isinstance(value, types.ModuleType) and value is not module and not _standard(value):
                codes += _codes_of(value, deep=False)
            if isinstance(value, (types.FunctionType, types.ModuleType, type)) or _inner(value) is not None:
                names.append((vars(module), attribute, value, f"the name {attribute} of {name}"))
        self._codes[name] = codes
        self._names[name] = names

    def changed(self, item: Any, names: bool) -> list[str]:
        """What `item` depends on that is no longer as noted (its names too when `names`: not while its own
        fixtures run, which may patch them as tests do), each change told once, with what it is now: the change
        is noted in turn, so that a later one (the code under test's, after a test of the suite's own that
        patched for good) is told too, and told apart."""
        module = getattr(getattr(item, "module", None), "__name__", None)
        found = []
        for name in (*self._shared, *([module] if module in self._codes else [])):
            if self._unchanged(name, names):
                continue
            codes = self._codes[name]
            for index, (function, code, label) in enumerate(codes):
                now = function.__code__
                if now is not code and code is not None:  # (None: foreign when noted, told once below)
                    found.append(f"{label} (now {_where(now)})")
                    codes[index] = (function, now, label)
                elif code is None and label not in self._told:
                    found.append(label)
                    self._told.add(label)
            bound = self._names[name] if names else []
            for index, (namespace, attribute, value, label) in enumerate(bound):
                now = namespace.get(attribute, _GONE)
                if now is not value:
                    found.append(f"{label} was bound to another object ({_what(now)})")
                    bound[index] = (namespace, attribute, now, label)
            self._fast.pop(name, None)
        return found

    def _unchanged(self, name: str, names: bool) -> bool:
        """Whether every code and (with `names`) every name of module `name` is as noted: the check before
        each test, of thousands of functions, made in C (`map`), the labels read only when one differs."""
        if name not in self._fast:
            entries, bound = self._codes[name], self._names[name]
            self._fast[name] = (tuple(f for f, _, _ in entries), tuple(c for _, c, _ in entries),
                                tuple(n for n, _, _, _ in bound), tuple(a for _, a, _, _ in bound),
                                tuple(v for _, _, v, _ in bound))
        functions, noted, namespaces, attributes, values = self._fast[name]
        try:
            return all(map(operator.is_, map(_CODE, functions), noted)) and (not names or all(
                map(operator.is_, map(dict.get, namespaces, attributes, itertools.repeat(_GONE)), values)))
        except Exception:  # (an object that refuses to be looked at: the slow path says what it can)
            return False


_GONE = object()
_CODE = operator.attrgetter("__code__")


# The folder the run started in (the tree's top), bound as this module loads, as gate/suite/equality.py binds it:
# a place is a path from here whatever folder a test moved the process to (glom's `os.chdir(tmp_path)`).
_STARTED_IN = os.getcwd()


def _where(code: Any) -> str:
    """A code object's function and place, the file relative to the folder the run started in (the tree: the
    same on the base's run as on the head's)."""
    try:
        filename = code.co_filename
        path = os.path.relpath(filename, _STARTED_IN) if os.path.isabs(filename) else filename
        return f"{code.co_name} at {path}:{code.co_firstlineno}"
    except Exception:
        return "code of another kind"


def _what(value: Any) -> str:
    """What a name is bound to now, in a few words, read without running code of the tests' process: a
    function by its code's place, else its type's name."""
    if value is _GONE:
        return "unbound"
    function = value if isinstance(value, types.FunctionType) else _inner(value)
    if isinstance(function, types.FunctionType):
        return _where(function.__code__)
    return "a " + str(_QUALNAME(type(value)))


_QUALNAME = type.__dict__["__qualname__"].__get__


def _standard(module: types.ModuleType) -> bool:
    """A module of the standard library (`os`, `json`: a test module's imports that hold no test helper; the
    framework's own, unittest's included, are noted as HELPERS)."""
    return module.__name__.partition(".")[0] in sys.stdlib_module_names


def _unreadable() -> None:
    """Stands for a module whose functions could not be noted: its code is never the one noted (None)."""


def _codes_of(module: types.ModuleType, deep: bool, seen: set[int] | None = None) -> list[tuple[Any, Any, str]]:
    """(function, its code, a label) for the functions `module` holds and, when `deep`, its classes' methods
    (their bases' too, the standard library's and the framework's included), but those in `seen`."""
    found: list[tuple[Any, Any, str]] = []
    seen = set() if seen is None else seen
    for value in list(vars(module).values()):
        if isinstance(value, type) and deep:
            for klass in value.__mro__[:-1]:
                for member in list(vars(klass).values()):
                    _add(member, found, seen)
        else:
            _add(value, found, seen)
    return found


def _add(value: Any, found: list[tuple[Any, Any, str]], seen: set[int]) -> None:
    """Each Python function `value` is or wraps (a method, a fixture, a decorator's `__wrapped__`)."""
    for _ in range(8):
        if isinstance(value, types.FunctionType) and id(value) not in seen:
            seen.add(id(value))
            label = f"the code of {value.__module__}.{value.__qualname__} was replaced"
            elsewhere = _elsewhere(value)
            if elsewhere:  # replaced before it was noted (at import, while pytest collected)
                found.append((value, None, f"{label} (by code of {elsewhere})"))
            else:
                found.append((value, value.__code__, label))
        value = _inner(value)
        if value is None:
            return


def _elsewhere(function: types.FunctionType) -> str | None:
    """The file `function`'s code says it comes from, when that is not the file of the module it was defined in
    (its globals': a function keeps them when its `__code__` is replaced), else None. Code made at run time
    (`<string>`, a dataclass's `__init__`) and a decorator's wrapper are not told apart from what they wrap."""
    made = function.__code__.co_filename
    defined = function.__globals__.get("__file__")
    if made.startswith("<") or not isinstance(defined, str) or "__wrapped__" in function.__dict__:
        return None
    # The names only: an environment's bytecode may have been compiled where it no longer is.
    return None if os.path.basename(made) == os.path.basename(defined) else made


def _inner(value: Any) -> Any:
    """What `value` wraps (a method's function, a decorator's `__wrapped__`, a pytest fixture's function), or
    None; read without running code of the tests' process (an attribute lookup on an object of theirs could)."""
    if isinstance(value, (staticmethod, classmethod, types.MethodType)):
        return value.__func__
    if isinstance(value, types.FunctionType):
        return value.__dict__.get("__wrapped__")
    if type(value).__module__ == "_pytest.fixtures" and type(value).__name__ == "FixtureFunctionDefinition":
        return value._fixture_function  # (pytest 8.4 and later; before, a fixture is a wrapped function)
    return None
