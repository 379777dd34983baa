"""A row's vector of Python numbers as float32, by the native speedups and by the Python path alike: for any
list or tuple (floats of every size, subnormals, -0.0, NaN, beyond float32; ints, bools, numpy scalars;
strings, ``None``, nested lists, objects) both give the same float32 bits, or both refuse it, and a dict
row gets the same reason either way; beyond float32 is an infinity, as numpy's conversion makes it.
Strings (of numbers too), bytes and bools are refused, never read as numbers; a ``None`` item is a null
element, named by its index; text is read as a JSON list of numbers, as Arrow's reader reads it."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

from vectordb.connector.rows import ColumnSpec, DimensionState, RowRules, floats, prepare_dicts
from vectordb.connector.rows.dicts import DictReader

PATHS = ["native", "python"]
RULES = RowRules(max_id_length=512, max_metadata_bytes=40_960)
FLOAT32_MAX = float(np.finfo(np.float32).max)
HALFWAY = 3.4028235677973366e38  # halfway between FLOAT32_MAX and 2**128: ties to even, so to infinity
ROUNDS_TO_MAX = float(np.nextafter(HALFWAY, 0))  # the largest double that rounds to FLOAT32_MAX


@contextlib.contextmanager
def path(name: str) -> Iterator[None]:
    """Convert with ``name`` only: the native speedups where they are built, or the Python path."""
    if name == "native" and not floats.native_floats():
        pytest.skip("the native speedups are not installed (pip install ./connector/native)")
    saved = floats._native_pack
    if name == "python":
        floats._native_pack = None
    try:
        yield
    finally:
        floats._native_pack = saved


def test_the_native_readers_are_built_wherever_rust_is() -> None:
    if shutil.which("cargo") is None:
        pytest.skip(
            "no Rust toolchain (cargo) here: the native speedups are optional; with Rust installed, "
            "`python3 -m uv pip install ./connector/native` builds them"
        )
    from vectordb.connector import protowire

    assert floats.native_floats(), (
        "cargo is here but lists of floats are not read natively: install ./connector/native"
    )
    assert protowire._native_frame_rows is not None and protowire._native_struct is not None, (
        "cargo is here but gRPC framing is not native: install ./connector/native"
    )


def converted(name: str, value: Any) -> np.ndarray | None:
    with path(name):
        return floats.float32_vector(value)


def bits(vector: np.ndarray | None) -> list[int] | None:
    return None if vector is None else vector.view(np.uint32).tolist()


python_numbers = st.one_of(
    st.floats(),  # any double: NaN, infinities, subnormals, -0.0, far beyond float32
    st.floats(width=32),
    st.floats(min_value=FLOAT32_MAX, max_value=3.5e38) | st.floats(min_value=-3.5e38, max_value=-FLOAT32_MAX),
    st.sampled_from([ROUNDS_TO_MAX, -ROUNDS_TO_MAX, HALFWAY, -HALFWAY, 5e-324, 1e-46, 7e-46]),
    st.integers(-(2**70), 2**70),
    st.integers(-(2**1100), 2**1100),  # beyond any double: no vector
    st.booleans(),
)
numpy_scalars = st.one_of(
    st.floats().map(np.float64),
    st.floats(width=32).map(np.float32),
    st.floats(width=16).map(np.float16),
    st.integers(-(2**63), 2**63 - 1).map(np.int64),
    st.integers(-128, 127).map(np.int8),
    st.booleans().map(np.bool_),
)
not_numbers = st.one_of(
    st.text(max_size=4),
    st.sampled_from(["1.5", "-0", "nan", "inf", "1e39", "x", ""]),
    st.none(),
    st.builds(object),
    st.lists(st.floats(width=32), max_size=2),
    st.dictionaries(st.text(max_size=1), st.integers(), max_size=1),
    st.binary(max_size=2),
)


def sequences(items: st.SearchStrategy[Any]) -> st.SearchStrategy[list[Any] | tuple[Any, ...]]:
    return st.lists(items, max_size=12).flatmap(lambda xs: st.sampled_from([xs, tuple(xs)]))


@settings(max_examples=400, deadline=None)
@given(value=sequences(python_numbers | numpy_scalars | not_numbers))
def test_both_paths_give_the_same_bits_or_both_refuse(value: list[Any] | tuple[Any, ...]) -> None:
    if not floats.native_floats():
        pytest.skip("the native speedups are not installed (pip install ./connector/native)")
    assert bits(converted("native", value)) == bits(converted("python", value))


@pytest.mark.parametrize("name", PATHS)
@settings(max_examples=300, deadline=None)
@given(value=sequences(python_numbers))
def test_python_numbers_become_what_numpy_makes_of_them(
    name: str, value: list[Any] | tuple[Any, ...]
) -> None:
    if any(type(x) is bool for x in value):  # True is no 1.0
        assert converted(name, value) is None
        return
    try:
        with np.errstate(over="ignore"):
            expected = np.asarray(value, dtype=np.float32).reshape(-1)
    except OverflowError:  # an int beyond any double
        assert converted(name, value) is None
        return
    got = converted(name, value)
    assert got is not None and got.dtype == np.float32 and got.shape == expected.shape
    assert bits(got) == bits(expected)  # NaN's sign and payload too; beyond float32: ±inf


@pytest.mark.parametrize("name", PATHS)
@settings(max_examples=200, deadline=None)
@given(value=sequences(numpy_scalars))
def test_numpy_scalars_are_read_as_their_float(name: str, value: list[Any] | tuple[Any, ...]) -> None:
    # each one's float(), then the nearest float32 (beyond it: an infinity); numpy's own conversion of
    # an int64 scalar rounds once, straight to float32, so it can differ by one step above 2**53; a
    # numpy bool is a flag, as Python's is (True is no 1.0)
    if any(type(x) is np.bool_ for x in value):
        assert converted(name, value) is None
        return
    with np.errstate(over="ignore"):
        expected = np.array([float(x) for x in value], dtype=np.float64).astype(np.float32)
    assert bits(converted(name, value)) == bits(expected)


@pytest.mark.parametrize("name", PATHS)
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([1.0, -0.0, 5e-324, 1e-45], [1.0, -0.0, 0.0, 1e-45]),
        ((1, -7, 2**24 + 1), [1.0, -7.0, 2.0**24]),
        ([1e39, -1e39, ROUNDS_TO_MAX, HALFWAY], [np.inf, -np.inf, FLOAT32_MAX, np.inf]),
        ([], []),
        ("[1.5, 2, -0.0]", [1.5, 2.0, -0.0]),  # text: a JSON list of numbers, as Arrow reads it
        (np.arange(3, dtype=np.int8), [0.0, 1.0, 2.0]),
        (np.arange(3, dtype=np.uint64), [0.0, 1.0, 2.0]),
    ],
)
def test_what_each_path_makes_of(name: str, value: Any, expected: list[float]) -> None:
    got = converted(name, value)
    assert got is not None
    np.testing.assert_array_equal(got, np.array(expected, dtype=np.float32))


@pytest.mark.parametrize("name", PATHS)
@pytest.mark.parametrize(
    "value",
    [
        ["x", 1.0],
        [10**400],
        [[1.0], [2.0, 3.0]],
        [[1.0, 2.0], [3.0, 4.0]],  # nested: flattened, it would be stored as another vector
        np.ones((2, 2)),
        0.5,  # a number alone
        [object()],
        "abc",
        {"a": 1},
    ],
)
def test_no_sequence_of_numbers_is_no_vector(name: str, value: Any) -> None:
    assert converted(name, value) is None


@pytest.mark.parametrize("name", PATHS)
@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (["1", "2"], "vector is not a sequence of numbers"),  # strings of numbers are not read as numbers
        ((" 7 ", 1.0), "vector is not a sequence of numbers"),
        (["1e3", 2.0], "vector is not a sequence of numbers"),
        ([b"1", 2.0], "vector is not a sequence of numbers"),
        ([True, False, True], "vector is not a sequence of numbers"),  # flags are no numbers
        ([1.0, True], "vector is not a sequence of numbers"),
        ([1, False], "vector is not a sequence of numbers"),  # ints: the native path's other branch
        (list(np.array([True, False])), "vector is not a sequence of numbers"),  # numpy's bools
        ([0.5, np.bool_(False)], "vector is not a sequence of numbers"),
        ((np.bool_(True), 2), "vector is not a sequence of numbers"),
        ([1.0, None, 2.0], "vector has a null element at index 1"),
        ((None,), "vector has a null element at index 0"),
        (["x", None], "vector is not a sequence of numbers"),
        (np.array([True, False]), "vector is not a sequence of numbers"),
        (np.array(["1", "2"]), "vector is not a sequence of numbers"),
        (np.array([1.0, 2.0], dtype=object), "vector is not a sequence of numbers"),
        (np.array([1.0, None], dtype=object), "vector has a null element at index 1"),
        ("1;2;3", "vector text is not a JSON list of numbers: '1;2;3'"),
        ("[1, null]", "vector text is not a JSON list of numbers: '[1, null]'"),
        ("[true, 1]", "vector text is not a JSON list of numbers: '[true, 1]'"),
        ('["1", 2]', "vector text is not a JSON list of numbers: '[\"1\", 2]'"),
    ],
)
def test_what_is_no_vector_of_numbers_is_refused_with_its_reason(name: str, value: Any, reason: str) -> None:
    assert converted(name, value) is None
    assert floats.vector_problem(value) == reason


@pytest.mark.parametrize("name", PATHS)
def test_a_float32_array_is_kept_and_other_arrays_are_converted(name: str) -> None:
    kept = np.arange(4, dtype=np.float32)
    assert converted(name, kept) is kept
    doubles = np.array([0.1, 1e39])
    np.testing.assert_array_equal(converted(name, doubles), np.array([0.1, np.inf], dtype=np.float32))
    assert converted(name, np.ones((1, 4), dtype=np.float32)) is None  # a row of a matrix is no vector


class Shrinking:
    """A number whose ``__float__`` empties the list it is in (and so drops the list's hold on itself)."""

    def __init__(self) -> None:
        self.victims: list[Any] = []

    def __float__(self) -> float:
        self.victims.clear()
        return 1.0


@pytest.mark.parametrize("name", PATHS)
def test_a_list_changed_by_its_own_items_is_read_without_harm(name: str) -> None:
    values: list[Any] = [Shrinking(), Shrinking(), 2.0]
    values[0].victims = values
    got = converted(name, values)  # what is left when numpy looks (native) or what was there (struct)
    assert got is not None and got.dtype == np.float32


BAD_ROWS = [
    {"id": "nan", "values": [1.0, float("nan"), 0.0, 0.0]},
    {"id": "inf", "values": [1.0, float("inf"), 0.0, 0.0]},
    {"id": "big", "values": [1e39, 0.0, 0.0, 0.0]},
    {"id": "text", "values": ["x", 0.0, 0.0, 0.0]},
    {"id": "huge", "values": [10**400, 0.0, 0.0, 0.0]},
    {"id": "short", "values": [1.0, 2.0]},
    {"id": "none", "values": [None, 0.0, 0.0, 0.0]},
    {"id": "strnum", "values": ["1", "2", "3", "4"]},
    {"id": "bool", "values": [True, False, True, True]},
    {"id": "npbool", "values": list(np.array([True, False, True, True]))},
    {"id": "jsontext", "values": "[1, 2, 3, 4]"},
    {"id": "badtext", "values": "1;2;3;4"},
    {"id": "good", "values": [0.5, 0.25, -0.0, 1]},
]


def test_each_path_refuses_the_same_rows_with_the_same_reasons() -> None:
    found = {}
    for name in PATHS:
        if name == "native" and not floats.native_floats():
            continue
        with path(name):
            prepared = prepare_dicts(BAD_ROWS, ColumnSpec(), RULES, DimensionState(4))
            read = DictReader().read_record(BAD_ROWS[-1])
        found[name] = ({i: f.error for f in prepared.failures for i in f.ids}, bits(read.vector))  # type: ignore[union-attr]
    reasons, good = found["python"]
    assert set(reasons) == {
        "nan",
        "inf",
        "big",
        "text",
        "huge",
        "short",
        "none",
        "strnum",
        "bool",
        "npbool",
        "badtext",
    }
    assert reasons["text"] == reasons["huge"] == reasons["strnum"] == reasons["bool"] == reasons["npbool"]
    assert reasons["text"] == "vector is not a sequence of numbers"
    assert reasons["none"] == "vector has a null element at index 0"
    assert reasons["badtext"] == "column 'values': vector text is not a JSON list of numbers: '1;2;3;4'"
    assert good == bits(np.array([0.5, 0.25, -0.0, 1.0], dtype=np.float32))
    assert all(other == found["python"] for other in found.values())
