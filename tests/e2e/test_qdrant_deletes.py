"""Qdrant deletes: the bytes and JSON qdrant-client's own models read, and the points deleted in the
project's Qdrant servers, read back with qdrant-client."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import orjson
import pytest
from qdrant_client import grpc as qg
from qdrant_client.conversions.conversion import GrpcToRest
from qdrant_client.http import models

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect
from vectordb.connector.backends.qdrant import QdrantOptions, encode_grpc_delete, encode_json_delete
from vectordb.connector.ids import ID_NAMESPACE, point_id
from vectordb.connector.rows import RowBatch
from vectordb.connector.transports.base import forget_shared

GIVEN = str(uuid.uuid4())
IDS = [7, 0, GIVEN, "doc-1"]  # an unsigned integer (0 too), a UUID, and an id that becomes its UUIDv5
POINTS = [7, 0, GIVEN, str(uuid.uuid5(ID_NAMESPACE, "doc-1"))]


def options(**fields: object) -> QdrantOptions:
    return QdrantOptions(uri="qdrant://127.0.0.1:6333/c", **fields)  # type: ignore[arg-type]


def test_a_delete_by_ids_parses_as_qdrant_clients_delete_points() -> None:
    batch = RowBatch(ids=IDS, vectors=None, op="delete")
    parsed = qg.DeletePoints.FromString(encode_grpc_delete(batch, "c", options(ordering="strong")))
    assert (
        parsed.collection_name == "c" and parsed.wait and parsed.ordering.type == qg.WriteOrderingType.Strong
    )
    # no namespace is the default one: the ids' points without the namespace key, not every namespace's
    has_id, empty = parsed.points.filter.must
    assert [GrpcToRest.convert_point_id(i) for i in has_id.has_id.has_id] == POINTS
    assert empty.is_empty.key == "namespace"
    assert not parsed.HasField("shard_key_selector")
    body = orjson.loads(encode_json_delete(batch, options()))
    first, second = models.FilterSelector.model_validate(body).filter.must  # type: ignore[misc]
    assert first.has_id == POINTS and second.is_empty.key == "namespace"


def test_in_a_payload_namespace_the_filter_holds_the_ids_and_the_namespace() -> None:
    batch = RowBatch(ids=IDS, vectors=None, namespace="a", op="delete")
    parsed = qg.DeletePoints.FromString(encode_grpc_delete(batch, "c", options(namespace_key="tenant")))
    has_id, field = parsed.points.filter.must
    assert [GrpcToRest.convert_point_id(i) for i in has_id.has_id.has_id] == POINTS
    assert (field.field.key, field.field.match.keyword) == ("tenant", "a")
    body = orjson.loads(encode_json_delete(batch, options(namespace_key="tenant")))
    selector = models.FilterSelector.model_validate(body)
    first, second = selector.filter.must  # type: ignore[misc]
    assert first.has_id == POINTS and (second.key, second.match.value) == ("tenant", "a")


def test_in_a_shard_key_namespace_the_request_names_the_shard() -> None:
    batch = RowBatch(ids=["doc-1"], vectors=None, namespace="eu", op="delete")
    parsed = qg.DeletePoints.FromString(encode_grpc_delete(batch, "c", options(namespace_mode="shard_key")))
    assert [k.keyword for k in parsed.shard_key_selector.shard_keys] == ["eu"]
    assert parsed.points.HasField("points")
    body = orjson.loads(encode_json_delete(batch, options(namespace_mode="shard_key")))
    assert body == {"points": [point_id("doc-1")], "shard_key": "eu"}


@pytest.fixture
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as running:
        yield running
        forget_shared()


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_namespaces_delete_leaves_the_points_of_another(server: QdrantServer, transport: str) -> None:
    uri = server.uri(transport, "docs")
    rows = [{"id": i, "values": [1.0, 2.0]} for i in ("a1", "a2", 5)]
    with connect(uri, create=True, namespace="a") as client:
        assert client.upsert(rows).ok
    with connect(uri, create=True, namespace="b") as client:
        assert client.upsert([{"id": "b1", "values": [3.0, 4.0]}]).ok
        report = client.delete(["a1", "b1", 5, "missing"])  # in b: a1 and 5 are a's, and stay
    assert report.ok and report.deleted == 4, report
    official = server.client(prefer_grpc=transport == "grpc")
    try:
        points, _ = official.scroll("docs", limit=10)
    finally:
        official.close()
    assert sorted(
        str(p.payload["original_id"]) if "original_id" in p.payload else str(p.id) for p in points
    ) == [
        "5",
        "a1",
        "a2",
    ]


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_no_namespace_and_the_empty_one_are_one_default_namespace(
    server: QdrantServer, transport: str
) -> None:
    """Payload namespaces: a row of no namespace and one of ``""`` land alike, without the namespace key,
    and a delete or clear of ``""`` reaches both (it matched ``namespace == ""`` and left them)."""
    uri = server.uri(transport, "docs")
    with connect(uri, create=True, op_column="op") as client:
        rows = [{"id": i, "values": [1.0, 2.0]} for i in ("n1", "n2", "n3")]
        assert client.upsert([*rows, {"id": "e1", "values": [1.0, 2.0], "namespace": ""}]).ok
        assert client.upsert([{"id": "x1", "values": [3.0, 4.0], "namespace": "x"}]).ok
        assert client.delete(["n1", "x1"], namespace="").deleted == 2  # x1 is x's: it stays
        assert client.write([{"id": "n2", "op": "delete", "namespace": ""}]).deleted == 1
    official = server.client(prefer_grpc=transport == "grpc")
    try:
        points, _ = official.scroll("docs", limit=10, with_payload=True)
        assert {p.payload["original_id"]: p.payload.get("namespace") for p in points} == {
            "n3": None,
            "e1": None,  # "" stored as no namespace, as None is
            "x1": "x",
        }
        with connect(uri) as client:
            client.clear("")
        points, _ = official.scroll("docs", limit=10, with_payload=True)
        assert [p.payload["original_id"] for p in points] == ["x1"]
    finally:
        official.close()
