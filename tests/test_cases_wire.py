"""The wire format and the strict comparison: what counts as data, and what counts as equal."""

from __future__ import annotations

import collections
import contextlib
import json
import math

import hypothesis
import hypothesis.strategies as st
import pytest

from gate.cases.compare import mismatch
from gate.cases.harness import wire


class AlwaysEqual:
    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 0


class Int(int):
    pass


class Str(str):
    pass


class Dict(dict):  # type: ignore[type-arg]
    pass


@pytest.mark.parametrize("value", [
    None, True, False, 0, -7, 2**100, -(2**200), 1.5, -0.0, math.inf, "", "é\udcff", b"\x00\xff",
    [1, [2.0, "x"]], (1, (True,)), {"a": 1, 2: [None]}, {(1, 2): "tuple key"}, {1, 2}, frozenset({"a"}),
    1 + 2j, collections.Counter("hello"), collections.OrderedDict(b=1, a=2),
    collections.defaultdict(list, {"k": [1]}), int, str,
])
def test_data_round_trips_with_its_exact_type(value: object) -> None:
    back = wire.loads(wire.dumps(value))
    assert type(back) is type(value)
    assert back == value
    assert wire.dumps(back) == wire.dumps(value)


def test_bool_int_float_and_list_tuple_stay_apart() -> None:
    texts = {wire.dumps(v) for v in (True, 1, 1.0, [1], (1,), {1}, frozenset({1}))}
    assert len(texts) == 7


def test_nan_round_trips() -> None:
    assert math.isnan(wire.loads(wire.dumps(math.nan)))


@pytest.mark.parametrize(("value", "named"), [
    (AlwaysEqual(), "AlwaysEqual"), (Int(3), "Int"), (Str("x"), "Str"), (Dict(a=1), "Dict"),
    ([1, AlwaysEqual()], "AlwaysEqual"), ({"k": Int(1)}, "Int"), (iter([1]), "list_iterator"),
    ((x for x in "ab"), "generator"), (print, "builtin_function_or_method"), (AlwaysEqual, "type"),
    (collections.defaultdict(AlwaysEqual), "defaultdict of type"),
])
def test_anything_else_is_not_data(value: object, named: str) -> None:
    with pytest.raises(wire.NotData, match=f"not data: .*{named}"):
        wire.dumps(value)


def test_cycles_and_deep_nesting_are_refused() -> None:
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(wire.NotData, match="deeper"):
        wire.dumps(loop)


@pytest.mark.parametrize("text", [
    "{", '{"t": "nope", "v": 1}', '{"t": "set", "v": [[1]]}', '{"t": "dict", "v": [[[1], 2]]}',
    '{"t": "class", "v": "os"}', '{"x": 1}', "[" * 200 + "]" * 200,
    '{"t": "complex", "v": []}', f'{{"t": "complex", "v": [{10 ** 400}, 0]}}',
    '{"t": "bytes", "v": 7}', '{"t": "dict", "v": 7}', '{"t": "defaultdict", "v": [], "f": ["list"]}',
    '{"t": "int", "v": []}', '{"t": "tuple", "v": 7}', '{"t": "frozenset", "v": [{"t": "set", "v": []}]}',
])
def test_forged_wire_text_is_refused_not_crashing(text: str) -> None:
    # The candidate's code can write the record itself: whatever it writes is refused, never an error of the gate's
    # (a complex of no parts stopped the gate with IndexError, exit 3, no verdict).
    with pytest.raises(wire.NotData):
        wire.loads(text)


_TAGS = ("int", "bytes", "complex", "class", "tuple", "set", "frozenset", "dict", "Counter", "OrderedDict",
         "defaultdict", "nope")
_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["t", "v", "f"]) |
                                                                                  st.text(max_size=2), inner,
                                                                                  max_size=3)
                     | st.fixed_dictionaries({"t": st.sampled_from(_TAGS), "v": inner},
                                             optional={"f": st.none() | st.sampled_from(["list", "int", "os"])}),
                     max_leaves=12)


@hypothesis.settings(max_examples=400, deadline=None)
@hypothesis.given(_JSON)
def test_any_json_a_candidate_writes_decodes_or_is_refused(raw: object) -> None:
    try:
        text = json.dumps(raw, allow_nan=True)
    except (ValueError, OverflowError):
        return
    with contextlib.suppress(wire.NotData):
        wire.loads(text)


@pytest.mark.parametrize(("expected", "got"), [
    (1, True), (True, 1), (0, False), (1, 1.0), (1.0, 1), (0.3, 0.1 + 0.2), ("1", 1), (None, 0), (None, ""),
    ([1, 2], [1, 2, 3]), ([1, 2], [2, 1]), ({"a": 1}, {"a": 1, "b": 2}), ({"a": 1}, {"a": True}),
    ([[1]], [[True]]), ({"k": [1.5]}, {"k": [1.5000001]}), ({1: "x"}, {True: "x"}), ({1, 2}, {1, 2.0}),
    (1, "1"), ("abc", "abd"),
])
def test_strict_mismatches(expected: object, got: object) -> None:
    assert mismatch(expected, got) is not None


@pytest.mark.parametrize(("expected", "got", "tol"), [
    (1, 1, None), (True, True, None), ([1, [2, "x"]], [1, [2, "x"]], None), ([1, 2], (1, 2), None),
    ({"a": [None]}, {"a": [None]}, None), (0.3, 0.1 + 0.2, 1e-9), (1, 1.0000001, 1e-6),
    ([0.3], [0.1 + 0.2], 1e-9),
    (math.nan, math.nan, None), ({1, 2}, {2, 1}, None),
])
def test_strict_matches(expected: object, got: object, tol: float | None) -> None:
    assert mismatch(expected, got, tol) is None


def test_tolerance_never_lets_a_bool_through() -> None:
    assert mismatch(1, True, 0.5) is not None
    assert mismatch(1.0, 2.0, 0.5) is not None


def test_mismatch_says_where_and_what() -> None:
    assert mismatch([1, [2, 3]], [1, [2, True]]) == "at [1][1]: expected int 3, got bool True"
