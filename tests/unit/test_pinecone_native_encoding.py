"""Pinecone gRPC vectors' ids and metadata, by the native speedups and in Python alike: the same request
bytes for any batch (ids of every kind, nested metadata, ints beyond int64, every float bit pattern,
dates, numpy values, metadata the native path hands back whole, sparse rows, rows with no dense
vector), the same error where Python raises one, and for JSON-like rows the message the generated
classes (``proto/gen``, the oracle) write: the same bytes where no row has metadata."""

from __future__ import annotations

import contextlib
import datetime
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pinecone_upsert_pb2 as pb
import pytest
from hypothesis import given, settings

from tests.payload_values import json_scalars, nested, odd_scalars, utf8
from vectordb.connector import protowire as pw
from vectordb.connector.backends import pinecone
from vectordb.connector.backends.pinecone import encode_grpc
from vectordb.connector.rows import RowBatch

PATHS = ["native", "python"]
NOT_BUILT = "the native speedups are not installed (pip install ./connector/native)"


@contextlib.contextmanager
def path(name: str) -> Iterator[None]:
    """The native vector parts (and struct writer and row framing), or the Python ones, while inside."""
    saved = pinecone._native_parts, pw._native_struct, pw._native_frame_rows
    if name == "native" and None in saved:
        pytest.skip(NOT_BUILT)
    if name == "python":
        pinecone._native_parts = pw._native_struct = pw._native_frame_rows = None
    try:
        yield
    finally:
        pinecone._native_parts, pw._native_struct, pw._native_frame_rows = saved


def outcome(name: str, encode: Any, *args: Any) -> Any:
    """What ``encode(*args)`` gives on one path, or the type of the error it raises."""
    with path(name):
        try:
            return encode(*args)
        except Exception as exc:  # compared between the paths
            return type(exc).__name__


def both(encode: Any, *args: Any) -> tuple[Any, Any]:
    if pinecone._native_parts is None:
        pytest.skip(NOT_BUILT)
    return outcome("native", encode, *args), outcome("python", encode, *args)


ids = st.one_of(
    st.text(max_size=40),  # any code point, lone surrogates too (str.encode raises)
    st.text(max_size=200).filter(utf8),  # lengths of one- and two-byte varints
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-(2**70), 2**70),  # beyond int64: Python's str()
    st.booleans(),
    st.integers(0, 2**63 - 1).map(np.int64),
    st.uuids(),
    st.none(),
)
keys = st.sampled_from(["a", "ab", "é", ""]) | st.text(max_size=5)
metadata_of = st.one_of(
    st.none(),
    st.just({}),
    st.dictionaries(keys, nested(json_scalars | odd_scalars, keys), max_size=4),
    st.dictionaries(keys, json_scalars, max_size=3).map(OrderedDict),  # no dict: the row goes to Python
    st.dictionaries(st.integers(0, 3), json_scalars, min_size=1, max_size=2),  # keys that are no str
)
sparse_of = st.none() | st.lists(st.integers(0, 2**32 - 1), max_size=3).map(
    lambda ix: (np.array(ix, np.uint32), np.arange(len(ix), dtype=np.float32) / 3)
)


@st.composite
def batches(
    draw: st.DrawFn,
    id_of: st.SearchStrategy[Any] = ids,
    metadata: st.SearchStrategy[Any] = metadata_of,
    sparse: bool = True,
) -> RowBatch:
    rows = draw(st.integers(0, 5))
    dense = draw(st.booleans()) or not sparse
    return RowBatch(
        ids=draw(st.lists(id_of, min_size=rows, max_size=rows)),
        vectors=np.arange(rows * 3, dtype=np.float32).reshape(rows, 3) / 7 if dense else None,
        sparse=draw(st.none() | st.lists(sparse_of, min_size=rows, max_size=rows)) if sparse else None,
        metadata=draw(st.none() | st.lists(metadata, min_size=rows, max_size=rows)),
        namespace=draw(st.none() | st.sampled_from(["ns", "", "é"])),
    )


@settings(max_examples=500, deadline=None)
@given(batch=batches())
def test_native_and_python_write_the_same_requests(batch: RowBatch) -> None:
    native, python = both(encode_grpc, batch)
    assert native == python


@settings(max_examples=300, deadline=None)
@given(batch_ids=st.lists(ids, max_size=6), metadata=st.none() | st.lists(metadata_of, max_size=6))
def test_native_and_python_write_the_same_parts(batch_ids: list[Any], metadata: list[Any] | None) -> None:
    if metadata is not None:
        metadata = (metadata * 6)[: len(batch_ids)] if metadata else [None] * len(batch_ids)
    native, python = both(pinecone._vector_parts, batch_ids, metadata)
    assert native == python


def oracle(b: RowBatch) -> bytes:
    """The request the generated classes write."""
    msg = pb.UpsertRequest(namespace=b.namespace or "")
    for i, row_id in enumerate(b.ids):
        v = msg.vectors.add(id=str(row_id))
        if b.vectors is not None:
            v.values.extend(b.vectors[i].tolist())
        if b.sparse and b.sparse[i] is not None:
            v.sparse_values.indices.extend(b.sparse[i][0].tolist())
            v.sparse_values.values.extend(b.sparse[i][1].tolist())
        if b.metadata and b.metadata[i]:
            v.metadata.update(b.metadata[i])
    return msg.SerializeToString(deterministic=True)


json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=10,
)
json_batches = batches(  # an empty id is on the wire (proto3 leaves it out), but the checks refuse it
    id_of=st.text(min_size=1, max_size=200).filter(utf8) | st.integers(-(2**63), 2**63 - 1),
    metadata=st.none() | st.dictionaries(keys, json_values, max_size=4),
)


@pytest.mark.parametrize("name", PATHS)
@settings(max_examples=200, deadline=None)
@given(batch=json_batches)
def test_requests_are_the_generated_classes_bytes(name: str, batch: RowBatch) -> None:
    with path(name):
        ours = encode_grpc(batch)
    expected = oracle(batch)
    if batch.metadata is None:
        assert ours == expected
    else:  # the generated classes' order of map entries is their own (ours: by key), so the messages compare
        assert pb.UpsertRequest.FromString(ours) == pb.UpsertRequest.FromString(expected)


@pytest.mark.parametrize("name", PATHS)
def test_rows_the_native_path_hands_back_are_written_by_python(name: str) -> None:
    batch = RowBatch(
        ids=["a", 7, True, np.int64(3), 2**64, "é" * 70],
        vectors=np.ones((6, 2), np.float32),
        metadata=[
            OrderedDict(z=1, a="x"),
            {"t": ("x", "y")},
            None,
            {},
            {"d": datetime.date(2024, 1, 2)},
            {"k": [1]},
        ],
        namespace="ns",
    )
    with path(name):
        ours = encode_grpc(batch)
    parsed = pb.UpsertRequest.FromString(ours)
    assert [v.id for v in parsed.vectors] == ["a", "7", "True", "3", str(2**64), "é" * 70]
    assert dict(parsed.vectors[0].metadata) == {"a": "x", "z": 1.0}
    assert list(parsed.vectors[1].metadata["t"]) == ["x", "y"]
    assert not parsed.vectors[2].HasField("metadata") and not parsed.vectors[3].HasField("metadata")
    assert dict(parsed.vectors[4].metadata) == {"d": "2024-01-02"}
    assert ours == both(encode_grpc, batch)[1]


def test_errors_are_python_s() -> None:
    lone = RowBatch(ids=["\ud800"], vectors=np.ones((1, 2), np.float32))
    assert both(encode_grpc, lone) == ("UnicodeEncodeError", "UnicodeEncodeError")
    huge = RowBatch(ids=["a"], vectors=np.ones((1, 2), np.float32), metadata=[{"n": 2**1100}])
    assert both(encode_grpc, huge) == ("OverflowError", "OverflowError")
    mixed = RowBatch(ids=["a"], vectors=np.ones((1, 2), np.float32), metadata=[{"a": {1: 1, "b": 2}}])
    assert both(encode_grpc, mixed) == ("TypeError", "TypeError")
