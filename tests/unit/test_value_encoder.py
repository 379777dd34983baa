"""One ``Value`` encoder (``protowire.encode_value``) for ``google.protobuf.Value`` (Pinecone, Weaviate)
and ``qdrant.Value`` (its field numbers, and an int64 ``integer``): byte for byte what the official
generated classes write for JSON values, and the values the rows' checks keep (dates, decimals, UUIDs,
durations as text, numpy values as Python's)."""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import uuid
from typing import Any

import hypothesis.strategies as st
import numpy as np
import orjson
import pytest
from google.protobuf import struct_pb2
from hypothesis import given, settings

from tests.payload_values import json_scalars, nested, utf8
from vectordb.connector import protowire as pw
from vectordb.connector.backends import qdrant

keys = st.text(max_size=6).filter(utf8)
json_values = nested(json_scalars, keys, json_only=True)


def prefix_keys(value: Any) -> bool:
    """Whether a dict in ``value`` has a key that is a prefix of another: upb's deterministic order puts
    the longer first, ours sorts as Python does (parsers take map entries in any order)."""
    if isinstance(value, dict):
        names = sorted(value)
        return any(b.startswith(a) for a, b in itertools.pairwise(names)) or any(
            prefix_keys(v) for v in value.values()
        )
    if isinstance(value, list | tuple):
        return any(prefix_keys(v) for v in value)
    return False


def google_value(value: Any) -> struct_pb2.Value:
    """The generated class's ``Value`` of a JSON value, built field by field (JSON text has no infinity)."""
    if value is None:
        return struct_pb2.Value(null_value=struct_pb2.NULL_VALUE)
    if isinstance(value, bool):
        return struct_pb2.Value(bool_value=value)
    if isinstance(value, int | float):
        return struct_pb2.Value(number_value=float(value))
    if isinstance(value, str):
        return struct_pb2.Value(string_value=value)
    if isinstance(value, dict):
        out = struct_pb2.Value()
        out.struct_value.SetInParent()
        for k, v in value.items():
            out.struct_value.fields[k].CopyFrom(google_value(v))
        return out
    out = struct_pb2.Value()
    out.list_value.SetInParent()
    out.list_value.values.extend(google_value(v) for v in value)
    return out


@settings(max_examples=300, deadline=None)
@given(value=json_values)
def test_a_json_value_is_the_generated_google_value(value: Any) -> None:
    want = google_value(value)
    ours = pw.encode_value(value)
    assert struct_pb2.Value.FromString(ours) == want
    if not prefix_keys(value):
        assert ours == want.SerializeToString(deterministic=True)


@settings(max_examples=300, deadline=None)
@given(value=json_values)
def test_a_json_value_is_the_generated_qdrant_value(value: Any) -> None:
    from qdrant_client import grpc as qg
    from qdrant_client.conversions.conversion import json_to_value

    want = json_to_value(value)
    ours = qdrant._value(value)
    assert qg.Value.FromString(ours) == want
    if not prefix_keys(value):
        assert ours == want.SerializeToString(deterministic=True)


TEXT = [
    (dt.date(2024, 1, 2), "2024-01-02"),
    (dt.datetime(2024, 1, 2, 3, 4, 5, 600), "2024-01-02T03:04:05.000600"),
    (dt.datetime(2024, 1, 2, tzinfo=dt.UTC), "2024-01-02T00:00:00+00:00"),
    (dt.time(3, 4), "03:04:00"),
    (decimal.Decimal("1.10"), "1.10"),
    (uuid.UUID(int=1), "00000000-0000-0000-0000-000000000001"),
]


@pytest.mark.parametrize(("value", "text"), TEXT, ids=[type(v).__name__ for v, _ in TEXT])
def test_values_the_checks_keep_are_their_text_in_both_forms(value: Any, text: str) -> None:
    from qdrant_client import grpc as qg

    assert struct_pb2.Value.FromString(pw.encode_value(value)) == struct_pb2.Value(string_value=text)
    assert qg.Value.FromString(qdrant._value(value)) == qg.Value(string_value=text)


def test_integers_are_qdrants_int64_where_they_fit_and_doubles_in_google_values() -> None:
    from qdrant_client import grpc as qg

    for number in (0, -1, 2**63 - 1, -(2**63), np.int64(-3), np.uint64(2**63 - 1)):
        assert qg.Value.FromString(qdrant._value(number)) == qg.Value(integer_value=int(number))
        assert struct_pb2.Value.FromString(pw.encode_value(number)) == struct_pb2.Value(
            number_value=float(number)
        )
    for wide in (2**63, np.uint64(2**63)):  # refused before encoding (an integer outside int64)
        assert qg.Value.FromString(qdrant._value(wide)) == qg.Value(double_value=float(wide))
    assert qg.Value.FromString(qdrant._value([np.bool_(True), np.float64(0.5)])) == json_to_qdrant(
        [True, 0.5]
    )


def json_to_qdrant(value: Any) -> Any:
    from qdrant_client.conversions.conversion import json_to_value

    return json_to_value(value)


def test_a_value_with_no_form_is_a_type_error_and_value_problem_says_which() -> None:
    fragment = orjson.Fragment(b"1")
    for encode in (pw.encode_value, qdrant._value):
        with pytest.raises(TypeError, match="Fragment"):
            encode({"a": [1, fragment]})
    assert pw.value_problem({"a": [1, {"b": fragment}]}) == "a Fragment has no protocol-buffers Value form"
    assert pw.value_problem({"a": [1, {"b": dt.date(2024, 1, 2)}], "n": np.arange(3)}) is None
