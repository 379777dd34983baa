"""Qdrant point ids and payloads, by the native speedups and in Python alike: the same ids for any id
(integers of any sign and size, UUIDs in every form, any text: its UUIDv5 is ``uuid.uuid5``'s), the same
request bytes for any batch (nested payloads, ints beyond int64, every float bit pattern, dates, numpy
values, metadata keys that the namespace or the original id replace, rows the native path hands back
whole), the same error where Python raises one, and for JSON-like payloads the message that
qdrant-client's own classes (the oracle) build from the same points."""

from __future__ import annotations

import contextlib
import datetime
import itertools
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

from tests.payload_values import json_scalars, nested, odd_scalars, utf8
from vectordb.connector.backends import qdrant
from vectordb.connector.backends.qdrant import QdrantOptions, encode_grpc, encode_grpc_delete, encode_json
from vectordb.connector.ids import ID_NAMESPACE, canonical_uuid, point_id
from vectordb.connector.rows import RowBatch

PATHS = ["native", "python"]
NOT_BUILT = "the native speedups are not installed (pip install ./connector/native)"


@contextlib.contextmanager
def path(name: str) -> Iterator[None]:
    """The native id mapping and point heads, or the Python ones, while inside."""
    saved = qdrant._native_ids, qdrant._native_heads
    if name == "native" and None in saved:
        pytest.skip(NOT_BUILT)
    if name == "python":
        qdrant._native_ids = qdrant._native_heads = None
    try:
        yield
    finally:
        qdrant._native_ids, qdrant._native_heads = saved


def outcome(name: str, encode: Any, *args: Any) -> Any:
    """What ``encode(*args)`` gives on one path, or the type of the error it raises."""
    with path(name):
        try:
            return encode(*args)
        except Exception as exc:  # compared between the paths
            return type(exc).__name__


def both(encode: Any, *args: Any) -> tuple[Any, Any]:
    if qdrant._native_heads is None or qdrant._native_ids is None:
        pytest.skip(NOT_BUILT)
    return outcome("native", encode, *args), outcome("python", encode, *args)


# -- ids --------------------------------------------------------------------------------------------

uuids = st.uuids()
uuid_texts = st.one_of(
    uuids.map(str),
    uuids.map(lambda u: str(u).upper()),
    uuids.map(lambda u: u.hex),
    uuids.map(lambda u: u.hex.upper()),
    uuids.map(lambda u: f"{{{u}}}"),  # braces: not a UUID here, converted like any text
    uuids.map(lambda u: str(u)[:35] + "g"),
    uuids.map(lambda u: str(u).replace("-", "_")),
)
ids = st.one_of(
    st.integers(0, 2**64 - 1),
    st.integers(-(2**70), 2**70),  # negative and beyond uint64: their text's UUIDv5
    st.text(max_size=40),  # any code point, lone surrogates too (str.encode raises)
    st.text(alphabet="0123456789abcdefABCDEF-", min_size=32, max_size=36),
    uuid_texts,
    st.booleans(),
    st.integers(0, 2**63 - 1).map(np.int64),
    st.integers(0, 2**64 - 1).map(np.uint64),
    uuids,
)


@settings(max_examples=500, deadline=None)
@given(batch_ids=st.lists(ids, max_size=8))
def test_native_and_python_map_ids_alike(batch_ids: list[Any]) -> None:
    native, python = both(qdrant._point_ids, batch_ids)
    assert native == python
    if isinstance(python, list):
        assert [type(i) for i in native] == [type(i) for i in python]


@settings(max_examples=500, deadline=None)
@given(text=st.text().filter(utf8) | uuid_texts)
def test_a_text_id_is_its_uuid5_in_the_namespace(text: str) -> None:
    with path("native"):
        (got,) = qdrant._point_ids([text])
    if canonical_uuid(text) is None:
        assert got == str(uuid.uuid5(ID_NAMESPACE, text))
    else:
        assert got == str(uuid.UUID(hex=text))


@pytest.mark.parametrize("name", PATHS)
def test_ids_by_the_rule(name: str) -> None:
    some = "5E85DBC1-191F-4EC4-9F59-DC30E8685B42"
    raw = [0, 2**64 - 1, 2**64, -1, "doc-1", "", "é", some, some.lower(), some.replace("-", ""), True]
    with path(name):
        got = qdrant._point_ids(raw)
    assert got[:2] == [0, 2**64 - 1]
    assert got[2:7] == [str(uuid.uuid5(ID_NAMESPACE, str(i))) for i in raw[2:7]]
    assert got[7:10] == [some.lower()] * 3
    assert got[10] == str(uuid.uuid5(ID_NAMESPACE, "True"))


# -- payloads ---------------------------------------------------------------------------------------

keys = st.sampled_from(["namespace", "original_id", "a", "ab", "é"]) | st.text(max_size=5)
metadata_of = st.one_of(
    st.none(),
    st.dictionaries(keys, nested(json_scalars | odd_scalars, keys), max_size=4),
    st.dictionaries(keys, json_scalars, max_size=3).map(OrderedDict),  # no dict: the row goes to Python
    st.dictionaries(st.integers(0, 3), json_scalars, min_size=1, max_size=2),  # keys Python refuses
)


@st.composite
def batches(draw: st.DrawFn, scalars: st.SearchStrategy[Any] = ids) -> RowBatch:
    rows = draw(st.integers(0, 5))
    metadata = draw(st.none() | st.lists(metadata_of, min_size=rows, max_size=rows))
    return RowBatch(
        ids=draw(st.lists(scalars, min_size=rows, max_size=rows)),
        vectors=np.arange(rows * 3, dtype=np.float32).reshape(rows, 3),
        metadata=metadata,
        namespace=draw(st.none() | st.sampled_from(["ns", "", "é"])),
    )


options_of = st.builds(
    QdrantOptions,
    uri=st.just("qdrant+grpc://h/c"),
    namespace_mode=st.sampled_from(["payload", "shard_key"]),
    namespace_key=st.sampled_from(["namespace", "original_id", "a"]),
    original_id_key=st.sampled_from(["original_id", "namespace", "é"]),
    vector_name=st.none() | st.just("dense"),
)


@settings(max_examples=400, deadline=None)
@given(batch=batches(), options=options_of)
def test_native_and_python_write_the_same_requests(batch: RowBatch, options: QdrantOptions) -> None:
    native, python = both(encode_grpc, batch, "c", options)
    assert native == python
    native, python = both(encode_grpc_delete, batch, "c", options)
    assert native == python


@settings(max_examples=150, deadline=None)
@given(batch=batches(), options=options_of)
def test_native_and_python_write_the_same_rest_bodies(batch: RowBatch, options: QdrantOptions) -> None:
    rest = QdrantOptions(
        uri="qdrant://h/c",
        namespace_mode=options.namespace_mode,
        namespace_key=options.namespace_key,
        original_id_key=options.original_id_key,
    )
    native, python = both(encode_json, batch, rest)
    assert native == python


@pytest.mark.parametrize("name", PATHS)
def test_what_python_refuses_is_refused_alike(name: str) -> None:
    options = QdrantOptions(uri="qdrant+grpc://h/c")

    def encode(ids: list[Any], metadata: list[Any]) -> Any:
        batch = RowBatch(ids=ids, vectors=np.zeros((len(ids), 2), np.float32), metadata=metadata)
        return outcome(name, encode_grpc, batch, "c", options)

    assert encode(["\ud800"], [None]) == "UnicodeEncodeError"  # an id that is no UTF-8
    assert encode([1], [{"\ud800": 1}]) == "UnicodeEncodeError"
    assert encode([1], [{"x": "\ud800"}]) == "UnicodeEncodeError"
    assert encode([1], [{"x": 10**400}]) == "OverflowError"
    assert encode([1], [{1: "a", "b": 2}]) == "TypeError"  # keys of two types cannot be sorted
    assert encode(["doc"], [{1: "a"}]) == "TypeError"  # nor with the original id's key
    assert encode([1], [{1: "a"}]) == "AttributeError"  # an int key has no .encode()


def nested_lists(depth: int) -> Any:
    value: Any = 1.5
    for _ in range(depth):
        value = {"k": [value]}
    return value


@pytest.mark.parametrize("name", PATHS)
def test_deep_payloads_are_written_alike_and_too_deep_fails_alike(name: str) -> None:
    def encode(metadata: dict[str, Any]) -> Any:
        batch = RowBatch(ids=[1], vectors=np.zeros((1, 2), np.float32), metadata=[metadata])
        return outcome(name, encode_grpc, batch, "c", QdrantOptions(uri="qdrant+grpc://h/c"))

    assert encode(nested_lists(100)) == outcome("python", encode_grpc, *_deep(100))
    assert encode(nested_lists(5000)) == "RecursionError"  # an error, never a crash


def _deep(depth: int) -> tuple[RowBatch, str, QdrantOptions]:
    batch = RowBatch(ids=[1], vectors=np.zeros((1, 2), np.float32), metadata=[nested_lists(depth)])
    return batch, "c", QdrantOptions(uri="qdrant+grpc://h/c")


@pytest.mark.parametrize("name", PATHS)
def test_both_paths_write_the_payload_rules(name: str) -> None:
    """The namespace and a converted id's original (not a UUID's in another spelling) replace metadata
    keys of their names; an int within int64 is an integer, one beyond it a double; dates as ISO text;
    numpy values as Python's."""
    from qdrant_client import grpc as qg

    batch = RowBatch(
        ids=["doc-1", 7, "5E85DBC1-191F-4EC4-9F59-DC30E8685B42"],
        vectors=np.zeros((3, 2), np.float32),
        metadata=[
            {"namespace": "mine", "original_id": "x", "n": -(2**63), "big": 2**64, "f": -0.0},
            {"t": datetime.datetime(2026, 11, 25, 21, 0), "d": datetime.date(2026, 1, 2)},
            {"v": np.arange(2), "s": np.float32(0.5), "b": np.bool_(True), "i": np.int64(-3)},
        ],
        namespace="ns",
    )
    with path(name):
        points = qg.UpsertPoints.FromString(
            encode_grpc(batch, "c", QdrantOptions(uri="qdrant+grpc://h/c"))
        ).points
    first, second, third = (p.payload for p in points)
    assert first["namespace"].string_value == "ns" and first["original_id"].string_value == "doc-1"
    assert first["n"].integer_value == -(2**63) and first["big"].double_value == 2.0**64
    assert str(first["f"].double_value) == "-0.0"
    assert second["t"].string_value == "2026-11-25T21:00:00" and second["d"].string_value == "2026-01-02"
    assert "original_id" not in second and points[1].id.num == 7
    assert [v.integer_value for v in third["v"].list_value.values] == [0, 1]
    assert third["s"].double_value == 0.5 and third["b"].bool_value and third["i"].integer_value == -3
    assert "original_id" not in third  # a UUID in another spelling is the id itself: nothing kept


# -- the official classes ---------------------------------------------------------------------------

json_keys = keys.filter(utf8)
json_payloads = st.dictionaries(
    json_keys,
    st.recursive(
        json_scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(json_keys, inner, max_size=3),
    ),
    max_size=4,
)


@pytest.mark.parametrize("name", PATHS)
@settings(max_examples=150, deadline=None)
@given(
    batch_ids=st.lists(
        st.integers(0, 2**64 - 1) | st.text(max_size=12).filter(utf8) | uuid_texts,
        min_size=1,
        max_size=4,
    ),
    payloads=st.lists(json_payloads, min_size=4, max_size=4),
    namespace=st.none() | st.just("ns"),
)
def test_requests_are_the_official_classes_points(
    name: str, batch_ids: list[Any], payloads: list[dict[str, Any]], namespace: str | None
) -> None:
    from qdrant_client import grpc as qg
    from qdrant_client.conversions.conversion import RestToGrpc

    rows = len(batch_ids)
    batch = RowBatch(
        ids=batch_ids,
        vectors=np.arange(rows * 3, dtype=np.float32).reshape(rows, 3),
        metadata=payloads[:rows],
        namespace=namespace,
    )
    with path(name):
        body = encode_grpc(batch, "c", QdrantOptions(uri="qdrant+grpc://h/c"))
    points, sent = [], []
    for i, raw in enumerate(batch_ids):
        pid = point_id(raw)
        payload = dict(payloads[i])
        if namespace is not None:
            payload["namespace"] = namespace
        if isinstance(pid, str) and canonical_uuid(raw) is None:  # a UUIDv5: the original is kept
            payload["original_id"] = raw
        sent.append(payload)
        points.append(
            qg.PointStruct(
                id=qg.PointId(num=pid) if isinstance(pid, int) else qg.PointId(uuid=pid),
                vectors=qg.Vectors(vector=qg.Vector(dense=qg.DenseVector(data=batch.vectors[i].tolist()))),  # type: ignore[index]
                payload=RestToGrpc.convert_payload(payload),
            )
        )
    want = qg.UpsertPoints(collection_name="c", wait=True, points=points)
    assert qg.UpsertPoints.FromString(body) == want
    # byte for byte too, but where a key is a prefix of another: upb's deterministic order puts the
    # longer first ("ab" before "a"), ours sorts as Python does; parsers take entries in any order
    if not prefix_keys(sent):
        assert body == want.SerializeToString(deterministic=True)


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
