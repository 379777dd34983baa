"""Our hand-encoded Pinecone requests against the generated classes (the oracle), byte for byte."""

from __future__ import annotations

import numpy as np
import orjson
import pinecone_upsert_pb2 as pb
import pytest
from google.protobuf import json_format

from vectordb.connector.backends.pinecone import encode_grpc, encode_json
from vectordb.connector.protowire import FieldReader, encode_struct, varint
from vectordb.connector.rows import RowBatch


def batch(
    n: int = 3, dim: int = 8, *, sparse: bool = True, metadata: bool = True, namespace: str | None = "ns"
) -> RowBatch:
    rng = np.random.default_rng(7)
    return RowBatch(
        ids=[f"id-{i}" for i in range(n)],
        vectors=rng.standard_normal((n, dim)).astype(np.float32),
        sparse=[(np.array([1, 300, 70000], np.uint32), np.array([0.5, -1.25, 3.0], np.float32)), None, None][
            :n
        ]
        if sparse
        else None,
        metadata=[
            {"genre": "drama", "year": 2020, "tags": ["a", "b"], "ok": True, "n": None, "nested": {"x": 1.5}},
            {},
            {"k": "v"},
        ][:n]
        if metadata
        else None,
        namespace=namespace,
    )


def oracle(b: RowBatch) -> pb.UpsertRequest:
    msg = pb.UpsertRequest(namespace=b.namespace or "")
    for i, row_id in enumerate(b.ids):
        v = msg.vectors.add(id=row_id)
        if b.vectors is not None:
            v.values.extend(b.vectors[i].tolist())
        if b.sparse and b.sparse[i] is not None:
            v.sparse_values.indices.extend(b.sparse[i][0].tolist())
            v.sparse_values.values.extend(b.sparse[i][1].tolist())
        if b.metadata and b.metadata[i]:
            v.metadata.update(b.metadata[i])
    return msg


@pytest.mark.parametrize(
    "b",
    [
        batch(),
        batch(sparse=False, metadata=False, namespace=None),
        batch(sparse=False, metadata=False, namespace="ns"),
        RowBatch(ids=["a", "bb", "ccc"], vectors=np.ones((3, 4), np.float32), namespace="ns"),
        batch(n=1, dim=1536),
        batch(n=0),
    ],
    ids=["full", "dense-only", "dense-only-namespace", "ids-of-several-lengths", "1536-d", "empty"],
)
def test_grpc_bytes_equal_the_generated_class(b: RowBatch) -> None:
    ours = encode_grpc(b)
    expected = oracle(b)
    assert pb.UpsertRequest.FromString(ours) == expected
    if (
        b.metadata is None
    ):  # map entry order is unspecified, so with metadata only the parsed messages compare
        assert ours == expected.SerializeToString(deterministic=True)
    else:
        stripped = RowBatch(ids=b.ids, vectors=b.vectors, sparse=b.sparse, namespace=b.namespace)
        assert encode_grpc(stripped) == oracle(stripped).SerializeToString(deterministic=True)


def test_vectors_are_the_raw_float32_buffer() -> None:
    b = batch(n=2, dim=4, sparse=False, metadata=False, namespace=None)
    ours = encode_grpc(b)
    assert b.vectors[1].tobytes() in ours


def test_struct_encoding_sorts_keys_like_deterministic_serialization() -> None:
    from google.protobuf import struct_pb2

    value = {"z": 1, "a": [1, "x", {"q": False}], "m": None}
    s = struct_pb2.Struct()
    s.update(value)
    assert encode_struct(value) == s.SerializeToString(deterministic=True)


def test_json_body_matches_what_pinecone_expects() -> None:
    b = batch()
    body = orjson.loads(encode_json(b))
    assert body["namespace"] == "ns"
    first = body["vectors"][0]
    assert first["id"] == "id-0"
    assert np.array_equal(np.asarray(first["values"], dtype=np.float32), b.vectors[0])
    assert first["sparseValues"] == {"indices": [1, 300, 70000], "values": [0.5, -1.25, 3.0]}
    assert first["metadata"]["nested"] == {"x": 1.5}
    assert "metadata" not in body["vectors"][1] and "sparseValues" not in body["vectors"][1]
    # the same body decodes into the generated message (Pinecone's REST/proto JSON mapping)
    msg = json_format.ParseDict(body, pb.UpsertRequest())
    assert msg == oracle(b)


def test_json_floats_are_shortest_float32_not_double() -> None:
    b = RowBatch(ids=["a"], vectors=np.array([[0.1, 1 / 3]], dtype=np.float32))
    assert b'"values":[0.1,0.33333334]' in encode_json(b)


def test_reader_decodes_what_the_generated_class_writes() -> None:
    reply = pb.UpsertResponse(upserted_count=300).SerializeToString()
    assert FieldReader(reply).int(1) == 300
    assert varint(300) == b"\xac\x02"
