"""The wire format for results: plain data of exact builtin types, as tagged JSON.

Used on both sides: inside the sandbox (standalone, copied next to the harness) to encode what the candidate
returned, and in the gate to decode it. Only these exact types are data: None, bool, int, float, str, bytes,
list, tuple, dict, set, frozenset, complex, the standard library's Counter, OrderedDict and defaultdict (of a
builtin factory), and those builtin classes themselves. A subclass, or any other object, is refused as "not
data: <type name>", so an object with its own `__eq__` never reaches a comparison.

JSON keeps bool, int and float apart by itself (`true`, `1`, `1.0`; NaN and infinities as Python's json writes
them) and lists as arrays; every JSON object on the wire is a tag: {"t": "tuple" | "set" | "frozenset", "v":
[...]}, {"t": "dict" | "Counter" | "OrderedDict" | "defaultdict", "v": [[key, value], ...], "f": factory}
(keys need not be strings), {"t": "bytes", "v": hex}, {"t": "complex", "v": [real, imag]}, {"t": "class", "v":
name} and {"t": "int", "v": hex} for integers too long for a JSON number.
"""

from __future__ import annotations

import collections
import json
import sys
from collections.abc import Callable
from typing import Any

MAX_DEPTH = 100
_BIG = 1 << 63
_SEQUENCES: dict[type, str] = {tuple: "tuple", set: "set", frozenset: "frozenset"}
_TYPES: dict[str, type] = {"tuple": tuple, "set": set, "frozenset": frozenset}
# Mappings of the standard library that datasets' reference solutions return; exact types only, like the rest.
_MAPPINGS: dict[type, str] = {
    dict: "dict", collections.Counter: "Counter", collections.OrderedDict: "OrderedDict"}
_MAPPING_TYPES: dict[str, type] = {name: kind for kind, name in _MAPPINGS.items()}
# Builtin classes that cross as themselves (a test may pass `int` as an argument, or a default factory).
_CLASSES: dict[str, type] = {kind.__name__: kind for kind in (
    int, float, complex, bool, str, bytes, list, tuple, dict, set, frozenset)}


# One encoder for every value (json.dumps builds a new one per call for any non-default option).
_TEXT = json.JSONEncoder(allow_nan=True, separators=(",", ":"))


class NotData(Exception):
    """A value that is not plain data of exact builtin types (or a wire text that does not decode to it)."""


def dumps(value: object) -> str:
    """Encode `value`; raise NotData naming the first type that is not data."""
    return _TEXT.encode(_encode(value, 0))


def loads(text: str | bytes) -> Any:
    """Decode a wire text back to the value; raise NotData when it is not a valid encoding."""
    try:
        raw = json.loads(text)
        return _decode(raw, 0)
    except NotData:
        raise
    except Exception as exc:  # (the candidate's code can write the text: any failure to decode it is its own)
        raise NotData(f"malformed result: {type(exc).__name__}") from None


def type_name(value: object) -> str:
    """The name a report uses for the type of `value`: qualified by its module unless it is a builtin or the
    harness's own."""
    kind = type(value)
    module = getattr(kind, "__module__", "")
    name = getattr(kind, "__qualname__", "?")
    return name if module == "builtins" or module.startswith("_gate_") else f"{module}.{name}"


def _encode(value: object, depth: int) -> object:
    if depth > MAX_DEPTH:
        raise NotData(f"nested deeper than {MAX_DEPTH}")
    if value is None or type(value) is bool or type(value) is str or type(value) is float:
        return value
    if type(value) is int:
        return value if -_BIG < value < _BIG else {"t": "int", "v": format(value, "x")}
    if type(value) is list:
        return [_encode(item, depth + 1) for item in value]
    if type(value) is tuple or type(value) is set or type(value) is frozenset:
        items = [_encode(item, depth + 1) for item in value]
        if type(value) is not tuple:
            items.sort(key=lambda item: json.dumps(item, allow_nan=True))  # the same set, the same text
        return {"t": _SEQUENCES[type(value)], "v": items}
    if type(value) in _MAPPINGS:
        return {"t": _MAPPINGS[type(value)], "v": _pairs(value, depth)}  # type: ignore[arg-type]
    if type(value) is collections.defaultdict:
        factory = value.default_factory
        if factory is not None and not any(factory is kind for kind in _CLASSES.values()):
            raise NotData(f"not data: defaultdict of {type_name(factory)}")
        return {"t": "defaultdict", "v": _pairs(value, depth), "f": factory and factory.__name__}
    if type(value) is bytes:
        return {"t": "bytes", "v": value.hex()}
    if type(value) is complex:
        return {"t": "complex", "v": [value.real, value.imag]}
    if type(value) is type and any(value is kind for kind in _CLASSES.values()):
        return {"t": "class", "v": value.__name__}
    raise NotData(f"not data: {type_name(value)}")


def _pairs(mapping: dict[object, object], depth: int) -> list[list[object]]:
    return [[_encode(key, depth + 1), _encode(item, depth + 1)] for key, item in mapping.items()]


def _decode(raw: object, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise NotData(f"nested deeper than {MAX_DEPTH}")
    if isinstance(raw, list):
        return [_decode(item, depth + 1) for item in raw]
    if not isinstance(raw, dict):
        return raw  # None, bool, int, float or str: json.loads makes nothing else
    tag, body = raw["t"], raw["v"]
    if tag == "int":
        return int(body, 16)  # hex is exempt from the limit on decimal digits
    if tag == "bytes":
        return bytes.fromhex(body)
    if tag in _MAPPING_TYPES or tag == "defaultdict":
        items = [(_decode(k, depth + 1), _decode(v, depth + 1)) for k, v in body]
        if tag != "defaultdict":
            return _MAPPING_TYPES[tag](dict(items))  # Counter(pairs) would count the pairs
        factory = raw["f"]
        return collections.defaultdict(None if factory is None else _CLASSES[factory], items)
    if tag == "complex":
        return complex(float(body[0]), float(body[1]))
    if tag == "class":
        return _CLASSES[body]
    if tag in _TYPES and isinstance(body, list):
        return _TYPES[tag](_decode(item, depth + 1) for item in body)
    raise NotData(f"malformed result: unknown tag {tag!r}")


def message(exc: BaseException) -> str:
    """An exception's message, short, or a placeholder when its `__str__` fails."""
    try:
        return str(exc)[:300]
    except BaseException:
        return "(unprintable)"


def describe(exc: BaseException) -> str:
    """`TypeName: message`, for a report."""
    text = message(exc)
    return f"{type_name(exc)}: {text}" if text else type_name(exc)


def call(function: Any, encoded_args: str, trip: dict[str, Any] | None = None) -> dict[str, str]:
    """Call `function` with the wire-encoded (args, kwargs) and say how it went, as the harnesses report it:
    {"ok": wire text}, {"raised": type name, "message": text} or {"notdata": why}. A tripwire's call (`trip`:
    {"trip": FAIL} or {"trip": PASS, "token"}) raises AssertionError as the function starts, or returns the
    token from there (`tripwire`)."""
    args, kwargs = loads(encoded_args)
    try:
        if trip is None:
            value = function(*args, **kwargs)
        else:
            tripwire(str(trip["trip"]), _starts(function), lambda: function(*args, **kwargs), always=True)
    except Tripped:
        value = str(trip["token"]) if trip is not None else None
    except BaseException as exc:
        return {"raised": type_name(exc), "message": message(exc)}
    try:
        return {"ok": dumps(value)}
    except NotData as exc:
        return {"notdata": str(exc)}


# The tripwires' kinds (the gate's tests of the harness: gate/suite/tripwire.py has the suite's): what their
# call must do.
FAIL, PASS = "fail", "pass"


class Tripped(BaseException):
    """Raised as a tripwire that must pass starts: its caller takes it for a return. A BaseException, so that
    no `except Exception` on its way takes it for a failure."""


def tripwire(kind: str, targets: tuple[Any, ...], run: Callable[[], Any], always: bool = False) -> None:
    """Run `run()` as a tripwire of `kind`: as a frame of one of `targets` (code objects) starts, or a call of
    one of them (a builtin) begins, a profile hook raises AssertionError there (FAIL) or Tripped (PASS), before
    any of it runs. When `run()` ends without starting one, it ends as it does, or with `always` (a callable
    of C, whose start no hook sees) raises the same then."""
    raised: BaseException = AssertionError() if kind == FAIL else Tripped()
    fired = []

    def hook(frame: Any, event: str, arg: Any) -> None:
        if (event == "call" and any(frame.f_code is target for target in targets)) or (
                event == "c_call" and any(arg is target for target in targets)):
            sys.setprofile(None)
            fired.append(True)
            raise raised

    sys.setprofile(hook)
    try:
        run()
    except BaseException:
        if fired or not always:
            raise
    finally:
        sys.setprofile(None)
    if always:
        raise raised


def _starts(function: Any) -> tuple[Any, ...]:
    """What starts when `function` is called: its code (through a bound method, what it wraps, a class's
    `__init__` and `__new__`), and itself (a builtin's call)."""
    found: list[Any] = [function]
    for each in (function, getattr(function, "__init__", None), getattr(function, "__new__", None)):
        for _ in range(16):
            each = getattr(each, "__func__", each)
            code = getattr(each, "__code__", None)
            if code is not None:
                found.append(code)
            each = getattr(each, "__wrapped__", None)
            if each is None:
                break
    return tuple(found)
