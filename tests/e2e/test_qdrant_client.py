"""The Qdrant backend through the engine, over REST and gRPC, against the Qdrant-protocol servers: rows read
back with the official qdrant-client and compared exactly; ids, named and sparse vectors, namespaces,
refusals isolated to the rows at fault with Qdrant's reason, throttles, keys, wait and ordering; and the
encoders checked against qdrant-client's generated classes and REST models."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from google.protobuf import json_format
from qdrant_client import grpc as qg
from qdrant_client import models

from tests.servers import qdrant_grpc
from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect
from vectordb.connector.backends.qdrant import QdrantOptions, encode_grpc, encode_json
from vectordb.connector.errors import AuthError, ConfigError, DimensionMismatch
from vectordb.connector.ids import ID_NAMESPACE, ORIGINAL_ID_KEY, as_uuid, canonical_uuid, point_id
from vectordb.connector.rows import RowBatch
from vectordb.connector.transports.base import forget_shared

pytestmark = pytest.mark.timeout(60)
TRANSPORTS = ["rest", "grpc"]


@pytest.fixture
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as running:
        yield running
        forget_shared()


qdrant_server = qdrant_grpc.qdrant_server  # the fixture, for tests that want the official client's view


def _vectors(n: int, dim: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)


def _table(ids: Any, vectors: np.ndarray, **columns: list[Any]) -> pa.Table:
    values = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), vectors.shape[1]).cast(
        pa.list_(pa.float32())
    )
    return pa.table({"id": ids, "values": values, **columns})


# -- ids --------------------------------------------------------------------------------------------


def test_id_rule() -> None:
    some = str(uuid.uuid4())
    assert point_id(0) == 0 and point_id(2**64 - 1) == 2**64 - 1 and point_id(np.uint64(7)) == 7
    assert point_id(some) == some and point_id(some.upper()) == some
    assert point_id(some.replace("-", "")) == some
    for other in ("doc-1", "7", -1, 2**64, True, f"{{{some}}}"):
        assert point_id(other) == str(uuid.uuid5(ID_NAMESPACE, str(other))), other
    assert as_uuid(5) == str(uuid.uuid5(ID_NAMESPACE, "5"))  # Weaviate takes no integers
    # the namespace is part of the data already written: it must never change
    assert str(ID_NAMESPACE) == "5e85dbc1-191f-4ec4-9f59-dc30e8685b42"


# -- encoders against the official classes ----------------------------------------------------------


def _batch() -> RowBatch:
    return RowBatch(
        ids=[0, 7, "doc-1", "5E85DBC1-191F-4EC4-9F59-DC30E8685B42"],
        vectors=_vectors(4, 3, seed=1),
        sparse=[None, (np.array([1, 5], np.uint32), np.array([0.5, 0.25], np.float32)), None, None],
        metadata=[{"a": 1, "b": [1, "x", None], "c": {"d": 1.5}}, {}, {"t": True}, {}],
        namespace="ns",
    )


@pytest.mark.parametrize("vector_name", [None, "dense"])
def test_grpc_encoding_matches_the_generated_classes(vector_name: str | None) -> None:
    batch = _batch()
    options = QdrantOptions(uri="qdrant+grpc://h/c", vector_name=vector_name, ordering="medium")
    ours = qg.UpsertPoints.FromString(encode_grpc(batch, "c", options))
    points = []
    for i, raw_id in enumerate(batch.ids):
        pid = point_id(raw_id)
        dense = qg.Vector(dense=qg.DenseVector(data=batch.vectors[i].tolist()))  # type: ignore[index]
        named = {vector_name or "": dense}
        sparse = batch.sparse[i]  # type: ignore[index]
        if sparse is not None:
            named["sparse"] = qg.Vector(
                sparse=qg.SparseVector(indices=sparse[0].tolist(), values=sparse[1].tolist())
            )
        if vector_name is None and sparse is None:
            vectors = qg.Vectors(vector=dense)
        else:
            vectors = qg.Vectors(vectors=qg.NamedVectors(vectors=named))
        payload = {**batch.metadata[i], "namespace": "ns"}  # type: ignore[index]
        if isinstance(pid, str) and canonical_uuid(str(raw_id)) is None:  # a UUIDv5: the original kept
            payload[ORIGINAL_ID_KEY] = raw_id
        from qdrant_client.conversions.conversion import RestToGrpc

        points.append(
            qg.PointStruct(
                id=qg.PointId(num=pid) if isinstance(pid, int) else qg.PointId(uuid=pid),
                vectors=vectors,
                payload=RestToGrpc.convert_payload(payload),
            )
        )
    want = qg.UpsertPoints(
        collection_name="c",
        wait=True,
        points=points,
        ordering=qg.WriteOrdering(type=qg.WriteOrderingType.Medium),
    )
    assert ours == want, json_format.MessageToDict(ours)
    # vectors are the matrix's own float32 bytes
    vectors = ours.points[2].vectors
    dense = vectors.vectors.vectors[vector_name].dense if vector_name else vectors.vector.dense
    assert np.asarray(dense.data, np.float32).tobytes() == batch.vectors[2].tobytes()  # type: ignore[index]


def test_rest_bodies_are_valid_qdrant_requests() -> None:
    batch = _batch()
    options = QdrantOptions(uri="qdrant://h/c")
    with_sparse = models.PointsList.model_validate_json(encode_json(batch, options))
    assert [str(p.id) for p in with_sparse.points] == [str(point_id(i)) for i in batch.ids]
    assert with_sparse.points[1].vector["sparse"] == models.SparseVector(indices=[1, 5], values=[0.5, 0.25])  # type: ignore[index]
    batch.sparse = None
    columnar = models.PointsBatch.model_validate_json(encode_json(batch, options))
    got = np.asarray(columnar.batch.vectors, dtype=np.float32)
    assert got.tobytes() == batch.vectors.tobytes()  # type: ignore[union-attr]
    assert columnar.batch.payloads[2] == {"t": True, "namespace": "ns", ORIGINAL_ID_KEY: "doc-1"}  # type: ignore[index]
    # float32 in its shortest form, never the double's 17 digits
    assert b"0.10000000149" not in encode_json(
        RowBatch(ids=[1], vectors=np.array([[0.1]], np.float32)), options
    )


# -- through the engine -----------------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_round_trip_read_back_with_the_official_client(server: QdrantServer, transport: str) -> None:
    some = str(uuid.uuid4())
    ids = ["doc-a", "doc-b", some, "doc-d"]
    vectors = _vectors(4, 5, seed=2)
    table = _table(ids, vectors, title=["a", "b", "c", "d"], rank=[1, 2, 3, 4], score=[0.5, 1.5, 2.5, 3.5])
    with connect(
        server.uri(transport, "docs"), create=True, metric="euclidean", namespace="team-1"
    ) as client:
        report = client.upsert(table)
    assert report.ok and report.written == 4, report
    official = server.client(prefer_grpc=transport == "grpc")
    info = official.get_collection("docs").config.params.vectors
    assert info == models.VectorParams(size=5, distance=models.Distance.EUCLID)
    records = {r.id: r for r in official.retrieve("docs", [point_id(i) for i in ids], with_vectors=True)}
    assert len(records) == 4
    for i, raw in enumerate(ids):
        record = records[point_id(raw)]
        assert np.asarray(record.vector, np.float32).tobytes() == vectors[i].tobytes()
        want = {"title": "abcd"[i], "rank": i + 1, "score": 0.5 + i, "namespace": "team-1"}
        if raw != some:
            want[ORIGINAL_ID_KEY] = raw
        assert record.payload == want
    official.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_integer_ids_stay_integers_and_a_rerun_replaces(server: QdrantServer, transport: str) -> None:
    uri = server.uri(transport, "nums")
    with connect(uri, create=True, metric="dotproduct") as client:
        ids = pa.array([1, 2, 2**63], pa.uint64())
        client.upsert(_table(ids, _vectors(3, 4, seed=3)))
        changed = _vectors(3, 4, seed=4)
        client.upsert(_table(ids, changed))
    stored = server.store.points("nums")
    assert sorted(stored) == [1, 2, 2**63]
    assert stored[2].vector().tobytes() == changed[1].tobytes()
    assert ORIGINAL_ID_KEY not in stored[1].payload


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_named_dense_and_sparse_vectors(server: QdrantServer, transport: str) -> None:
    vectors = _vectors(3, 4, seed=5)
    rows = [
        {"id": 1, "values": vectors[0], "sparse": {"indices": [2, 9], "values": [0.5, 1.5]}},
        {"id": 2, "values": vectors[1], "sparse": None},
        {"id": 3, "values": vectors[2], "sparse": {"indices": [4], "values": [2.0]}},
    ]
    options = {"vector_name": "text", "sparse_column": "sparse", "sparse_vector_name": "bm25", "create": True}
    with connect(server.uri(transport, "hybrid"), **options) as client:
        report = client.upsert(rows)
    assert report.ok, report
    official = server.client(prefer_grpc=transport == "grpc")
    params = official.get_collection("hybrid").config.params
    assert set(params.vectors) == {"text"} and set(params.sparse_vectors or {}) == {"bm25"}  # type: ignore[arg-type]
    records = {r.id: r for r in official.retrieve("hybrid", [1, 2, 3], with_vectors=True)}
    assert np.asarray(records[1].vector["text"], np.float32).tobytes() == vectors[0].tobytes()  # type: ignore[index]
    assert records[1].vector["bm25"] == models.SparseVector(indices=[2, 9], values=[0.5, 1.5])  # type: ignore[index]
    assert set(records[2].vector) == {"text"}  # type: ignore[arg-type]
    official.close()

    with (
        pytest.raises(ConfigError, match="option vector_name"),
        connect(server.uri(transport, "hybrid"), vector_name="other") as client,
    ):
        client.upsert(rows)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_refused_rows_are_isolated_whatever_the_message(server: QdrantServer, transport: str) -> None:
    """Qdrant refuses a request whole and its message names no point: the engine finds the rows."""
    server.store.create_collection("docs", {"": (4, "Dot")}, set(), False)
    server.script(reject_ids=frozenset({"13", "57"}), reject_named=False)
    with connect(server.uri(transport, "docs"), batch_size=20, on_error="report") as client:
        report = client.upsert(_table(list(range(100)), _vectors(100, 4, seed=6)))
    assert report.written == 98
    assert sorted(report.failed_ids, key=str) == ["13", "57"]
    reasons = {f.error for f in report.failures}
    assert len(reasons) == 1 and "Wrong input: a point refused" in reasons.pop()
    assert sorted(server.store.points("docs")) == sorted(set(range(100)) - {13, 57})


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_rows_of_another_dimension_fail_alone(server: QdrantServer, transport: str) -> None:
    server.store.create_collection("docs", {"": (4, "Dot")}, set(), False)
    rows = [{"id": i, "values": [0.5] * (3 if i == 2 else 4)} for i in range(5)]
    with connect(server.uri(transport, "docs")) as client:
        report = client.write(rows)
    assert report.written == 4 and report.failed_ids == ["2"]
    assert report.failures[0].error == "vector has 3 dimensions; expected 4"
    with pytest.raises(DimensionMismatch), connect(server.uri(transport, "docs"), dimension=5) as client:
        client.write([{"id": 9, "values": [0.5] * 5}])


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_server_dimension_refusal_fails_each_row_with_qdrants_reason(
    server: QdrantServer, transport: str
) -> None:
    """A collection made again with another size after the client checked it: Qdrant refuses each
    request whole with a message that names no point; every row fails with that reason, none is kept."""
    server.store.create_collection("docs", {"": (4, "Dot")}, set(), False)
    with connect(server.uri(transport, "docs"), batch_size=8, on_error="report") as client:
        assert client.write([{"id": 0, "values": [1.0] * 4}]).ok  # checked: dimension 4
        server.store.delete_collection("docs")
        server.store.create_collection("docs", {"": (5, "Dot")}, set(), False)
        report = client.write([{"id": i, "values": [0.5] * 4} for i in range(1, 17)])
    assert report.written == 0 and sorted(report.failed_ids, key=int) == [str(i) for i in range(1, 17)]
    assert all(
        f.error.endswith("Wrong input: Vector dimension error: expected dim: 5, got 4")
        for f in report.failures
    ), report.failures
    assert server.store.points("docs") == {}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_throttles_are_retried_after_retry_after(server: QdrantServer, transport: str) -> None:
    server.store.create_collection("docs", {"": (4, "Dot")}, set(), False)
    server.script(throttle_first=3, retry_after_s=0.05, fail_first=0)
    with connect(server.uri(transport, "docs"), batch_size=10) as client:
        report = client.upsert(_table(list(range(30)), _vectors(30, 4, seed=7)))
    assert report.ok and report.throttled == 3 and report.retries >= 3, report
    assert len(server.store.points("docs")) == 30


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_api_key(server: QdrantServer, transport: str) -> None:
    server.store.create_collection("docs", {"": (2, "Dot")}, set(), False)
    server.script(api_key="s3cret-key")
    with (
        pytest.raises(AuthError) as refused,
        connect(server.uri(transport, "docs"), api_key="wrong-key") as client,
    ):
        client.upsert([{"id": 1, "values": [1.0, 2.0]}])
    assert "Invalid API key or JWT" in str(refused.value) and "wrong-key" not in str(refused.value)
    with connect(server.uri(transport, "docs"), api_key="s3cret-key") as client:
        assert "s3cret" not in repr(client) + repr(client.options)
        assert client.upsert([{"id": 1, "values": [1.0, 2.0]}]).ok
    assert server.store.log[-1].headers["api-key"] == "s3cret-key"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_missing_collection(server: QdrantServer, transport: str) -> None:
    with (
        pytest.raises(ConfigError, match=r"collection 'nope' does not exist \(option create=true makes it\)"),
        connect(server.uri(transport, "nope")) as client,
    ):
        client.upsert([{"id": 1, "values": [1.0, 2.0]}])
    assert not server.store.exists("nope")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_wait_false_and_ordering(server: QdrantServer, transport: str) -> None:
    server.store.create_collection("docs", {"": (2, "Dot")}, set(), False)
    with connect(server.uri(transport, "docs"), wait=False, ordering="strong") as client:
        assert client.upsert([{"id": 1, "values": [1.0, 2.0]}]).ok
    entry = server.store.log[-1]
    assert entry.outcome == "ok" and entry.wait is False and entry.ordering == "strong"
    with connect(server.uri(transport, "docs")) as client:
        client.upsert([{"id": 2, "values": [1.0, 2.0]}])
    assert server.store.log[-1].wait is True and server.store.log[-1].ordering is None


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_namespace_as_shard_key(server: QdrantServer, transport: str) -> None:
    uri = server.uri(transport, "tenants")
    for tenant, start in (("acme", 0), ("globex", 10)):
        with connect(uri, create=True, namespace_mode="shard_key", namespace=tenant) as client:
            report = client.upsert(_table(list(range(start, start + 3)), _vectors(3, 4, seed=start)))
            assert report.ok, report
    coll = server.store.describe("tenants")
    assert coll.custom_sharding and coll.shard_keys == {"acme", "globex"}
    points = server.store.points("tenants")
    assert {pid: p.shard_key for pid, p in points.items()} == {
        0: "acme",
        1: "acme",
        2: "acme",
        10: "globex",
        11: "globex",
        12: "globex",
    }
    assert all("namespace" not in p.payload for p in points.values())
    with connect(uri, namespace_mode="shard_key", namespace="acme") as client:
        client.clear("acme")
    assert sorted(server.store.points("tenants")) == [10, 11, 12]
    with pytest.raises(ConfigError, match="namespace_mode=shard_key"):
        server.store.create_collection("flat", {"": (4, "Dot")}, set(), False)
        with connect(server.uri(transport, "flat"), namespace_mode="shard_key", namespace="x") as client:
            client.upsert([{"id": 1, "values": [1.0] * 4}])


@pytest.mark.parametrize("namespace_mode", ["payload", "shard_key"])
def test_grpc_points_of_one_unnamed_vector_framed_in_one_pass_are_the_official_bytes(
    namespace_mode: str,
) -> None:
    # the common case (one unnamed dense vector, no sparse) is framed around the matrix at once
    # (protowire.frame_rows): the bytes protobuf itself writes, ids 0 and UUIDs, payloads, ordering, shard key
    from qdrant_client.conversions.conversion import RestToGrpc

    batch = _batch()
    batch.sparse = None
    options = QdrantOptions(uri="qdrant+grpc://h/c", ordering="strong", namespace_mode=namespace_mode)
    body = encode_grpc(batch, "c", options)
    points = []
    for i, raw_id in enumerate(batch.ids):
        pid = point_id(raw_id)
        payload = dict(batch.metadata[i])  # type: ignore[index]
        if namespace_mode == "payload":
            payload["namespace"] = "ns"
        if isinstance(pid, str) and canonical_uuid(str(raw_id)) is None:  # a UUIDv5: the original kept
            payload[ORIGINAL_ID_KEY] = raw_id
        dense = qg.Vector(dense=qg.DenseVector(data=batch.vectors[i].tolist()))  # type: ignore[index]
        points.append(
            qg.PointStruct(
                id=qg.PointId(num=pid) if isinstance(pid, int) else qg.PointId(uuid=pid),
                vectors=qg.Vectors(vector=dense),
                payload=RestToGrpc.convert_payload(payload),
            )
        )
    want = qg.UpsertPoints(
        collection_name="c",
        wait=True,
        points=points,
        ordering=qg.WriteOrdering(type=qg.WriteOrderingType.Strong),
    )
    if namespace_mode == "shard_key":
        want.shard_key_selector.shard_keys.add().keyword = "ns"
    assert qg.UpsertPoints.FromString(body) == want
    assert body == want.SerializeToString(deterministic=True)
