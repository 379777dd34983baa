"""``protowire.encode_struct``, by the native speedups and in Python alike: the same bytes for any metadata
(nested dicts and lists, every float bit pattern, ints of any size, text of any code point, and values the
native path hands back to Python: numpy scalars and arrays, dates, dict subclasses, other objects), the
same error where Python raises one, and for JSON-like metadata what ``google.protobuf``'s own ``Struct``
(the oracle) reads back as the same message."""

from __future__ import annotations

import contextlib
import datetime
import itertools
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from google.protobuf import struct_pb2
from hypothesis import given, settings

from tests.payload_values import json_scalars, nested, odd_scalars
from vectordb.connector import protowire as pw

PATHS = ["native", "python"]


@contextlib.contextmanager
def path(name: str) -> Iterator[None]:
    if name == "native" and pw._native_struct is None:
        pytest.skip("the native speedups are not installed (pip install ./connector/native)")
    saved = pw._native_struct
    if name == "python":
        pw._native_struct = None
    try:
        yield
    finally:
        pw._native_struct = saved


def encoded(name: str, fields: Any) -> bytes | str:
    """The bytes, or the type of the error raised."""
    with path(name):
        try:
            return pw.encode_struct(fields)
        except Exception as exc:  # compared between the paths
            return type(exc).__name__


keys = st.text(max_size=6)  # any code point, surrogates included


@settings(max_examples=400, deadline=None)
@given(fields=st.dictionaries(keys, nested(json_scalars | odd_scalars, keys), max_size=5))
def test_native_and_python_write_the_same_bytes(fields: dict[str, Any]) -> None:
    if pw._native_struct is None:
        pytest.skip("the native speedups are not installed (pip install ./connector/native)")
    assert encoded("native", fields) == encoded("python", fields)


@pytest.mark.parametrize("name", PATHS)
@settings(max_examples=150, deadline=None)
@given(
    fields=st.dictionaries(
        keys.filter(lambda t: not any(0xD800 <= ord(c) <= 0xDFFF for c in t)),
        nested(json_scalars, keys, json_only=True),
        max_size=5,
    )
)
def test_json_metadata_is_protobufs_own_struct(name: str, fields: dict[str, Any]) -> None:
    want = struct_pb2.Struct()
    want.update(fields)
    got = encoded(name, fields)
    assert isinstance(got, bytes) and struct_pb2.Struct.FromString(got) == want
    # byte for byte too, but where a key is a prefix of another: upb's deterministic order puts the
    # longer first ("ab" before "a"), ours sorts as Python does; parsers take entries in any order
    if not prefix_keys(fields):
        assert got == want.SerializeToString(deterministic=True)


def prefix_keys(value: Any) -> bool:
    """Whether any dict in ``value`` has a key that is a prefix of another of its keys."""
    if isinstance(value, dict):
        names = sorted(value)
        if any(b.startswith(a) for a, b in itertools.pairwise(names)):
            return True
        return any(prefix_keys(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(prefix_keys(v) for v in value)
    return False


@pytest.mark.parametrize("name", PATHS)
@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"": "", "a": [], "b": {}, "c": ()},
        {"z": 1, "a": 2, "é": 3, "\U0001f600": 4, "B": 5},  # sorted by code point
        {"x": OrderedDict(b=1, a=2)},  # a dict subclass: Python's Mapping branch
        {"t": datetime.datetime(2026, 11, 25, 21, 0), "n": np.float64(0.1), "v": np.arange(2)},
    ],
)
def test_both_paths_agree_on(name: str, fields: dict[str, Any]) -> None:
    with path("python"):
        want = pw.encode_struct(fields)
    assert encoded(name, fields) == want


@pytest.mark.parametrize("name", PATHS)
def test_what_python_refuses_is_refused_alike(name: str) -> None:
    assert encoded(name, {1: "a", "b": 2}) == "TypeError"  # keys of two types cannot be sorted
    assert encoded(name, {"x": 10**400}) == "OverflowError"
    assert encoded(name, {"x": "\ud800"}) == "UnicodeEncodeError"


@pytest.mark.parametrize("name", PATHS)
def test_a_key_that_is_no_text_is_written_as_its_text(name: str) -> None:
    # as Qdrant's payload encoder wrote them, now that both are protowire.encode_value (it was an
    # AttributeError here); the rows' checks refuse such keys, so only a hand-built batch holds one
    assert encoded(name, {"x": {1: "a"}}) == encoded("python", {"x": {"1": "a"}})
    assert encoded(name, {1: "a"}) == encoded("python", {"1": "a"})


def nested_dicts(depth: int) -> dict[str, Any]:
    value: Any = 1.5
    for _ in range(depth):
        value = {"k": [value]}
    return value


@pytest.mark.parametrize("name", PATHS)
def test_deep_metadata_is_written_alike_and_too_deep_fails_alike(name: str) -> None:
    with path("python"):
        want = pw.encode_struct(nested_dicts(100))
    assert encoded(name, nested_dicts(100)) == want  # past the native depth: Python writes the rest
    assert encoded(name, nested_dicts(5000)) == "RecursionError"  # an error, never a crash
