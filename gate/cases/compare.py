"""Strict comparison of an expected value with what came back, in the gate's process (never the candidate's).

Both sides are plain data already (`wire.loads` made `got`; `expected` comes from JSON or YAML). Types must be
the same exact builtin types: `True` is not `1`, `1` is not `1.0`. A JSON array matches a list or a tuple
(JSON has no tuples); an object matches a dict with the same keys. Floats are equal only when they are the
same number (NaN equals NaN), unless the case sets `tol`: then any two numbers that are not bools match within
`tol` (`math.isclose` with `abs_tol`).
"""

from __future__ import annotations

import math

from gate.cases.harness import wire

_MAX_SHOWN = 60


def mismatch(expected: object, got: object, tol: float | None = None) -> str | None:
    """None when `got` matches `expected`; otherwise where and how they differ, in a few words."""
    return _diff(expected, got, tol, "")


def show(value: object) -> str:
    """`value` for a report: its type and a repr cut to a few dozen characters."""
    try:
        text = repr(value)
    except ValueError:  # an int of more digits than Python converts to decimal (sys.set_int_max_str_digits)
        return f"{type(value).__name__} (too long to show)"
    if len(text) > _MAX_SHOWN:
        text = text[: _MAX_SHOWN - 3] + "..."
    return f"{type(value).__name__} {text}"


def _diff(expected: object, got: object, tol: float | None, at: str) -> str | None:
    where = f"at {at}: " if at else ""
    if tol is not None and _number(expected) and _number(got):
        if _close(expected, got, tol):
            return None
        return f"{where}expected {show(expected)} within {tol}, got {show(got)}"
    if not _same_type(expected, got):
        return f"{where}expected {show(expected)}, got {show(got)}"
    if isinstance(expected, list | tuple):
        return _diff_sequence(expected, got, tol, at)  # type: ignore[arg-type]
    if isinstance(expected, dict):
        return _diff_dict(expected, got, tol, at)  # type: ignore[arg-type]
    if isinstance(expected, set | frozenset):
        return _diff_set(expected, got, at)  # type: ignore[arg-type]
    if isinstance(expected, float) and math.isnan(expected) and math.isnan(got):  # type: ignore[arg-type]
        return None
    if expected != got:
        return f"{where}expected {show(expected)}, got {show(got)}"
    return None


def _close(expected: object, got: object, tol: float) -> bool:
    try:
        return math.isclose(float(expected), float(got), rel_tol=0.0, abs_tol=tol)  # type: ignore[arg-type]
    except OverflowError:  # an int too big for a float is not within any tolerance of one that fits
        return False


def _number(value: object) -> bool:
    return type(value) is int or type(value) is float


def _same_type(expected: object, got: object) -> bool:
    if type(expected) is list:
        return type(got) is list or type(got) is tuple
    return type(expected) is type(got)


def _diff_sequence(expected: list[object] | tuple[object, ...], got: list[object] | tuple[object, ...],
                   tol: float | None, at: str) -> str | None:
    for index, (want, have) in enumerate(zip(expected, got, strict=False)):
        found = _diff(want, have, tol, f"{at}[{index}]")
        if found:
            return found
    if len(expected) != len(got):
        where = f"at {at}: " if at else ""
        return f"{where}expected {len(expected)} items, got {len(got)}"
    return None


def _diff_dict(expected: dict[object, object], got: dict[object, object], tol: float | None,
               at: str) -> str | None:
    where = f"at {at}: " if at else ""
    # Keys match by their wire text, so that the key True is not the key 1.
    have = {_key(key): (key, value) for key, value in got.items()}
    want = {_key(key): (key, value) for key, value in expected.items()}
    missing = [key for text, (key, _) in want.items() if text not in have]
    if missing:
        return f"{where}missing key {show(missing[0])}"
    extra = [key for text, (key, _) in have.items() if text not in want]
    if extra:
        return f"{where}unexpected key {show(extra[0])}"
    for text, (key, value) in want.items():
        found = _diff(value, have[text][1], tol, f"{at}[{key!r}]")
        if found:
            return found
    return None


def _diff_set(expected: set[object] | frozenset[object], got: set[object] | frozenset[object],
              at: str) -> str | None:
    where = f"at {at}: " if at else ""
    want = {_key(item): item for item in expected}
    have = {_key(item): item for item in got}
    missing = [item for text, item in want.items() if text not in have]
    if missing:
        return f"{where}missing item {show(missing[0])}"
    extra = [item for text, item in have.items() if text not in want]
    if extra:
        return f"{where}unexpected item {show(extra[0])}"
    return None


def _key(value: object) -> str:
    return wire.dumps(value)
