"""Qdrant payload namespaces: a delete with no namespace (a null namespace cell, an Arrow row's null, or
``Client.delete(ids)`` without one) is a delete in the default namespace, as ``""`` is: it removed the
id's point from every namespace. Checked against the project's servers (REST and gRPC) and, for the
request body, against qdrant-client's local mode, which applies Qdrant's own filter rules."""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import pyarrow as pa
import pytest
from qdrant_client import QdrantClient
from qdrant_client.http import models

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect
from vectordb.connector.backends.qdrant import QdrantOptions, encode_json_delete
from vectordb.connector.rows import RowBatch
from vectordb.connector.transports.base import forget_shared

VALUES = [1.0, 0.5, 0.25]


@pytest.fixture
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as running:
        yield running
        forget_shared()


def _stored(server: QdrantServer) -> set[object]:
    return set(server.store.points("c"))


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_a_null_namespace_cell_deletes_only_in_the_default_namespace(
    server: QdrantServer, transport: str
) -> None:
    with connect(
        server.uri(transport, "c"), create=True, dimension=3, op_column="op", namespace_column="ns"
    ) as client:
        rows = [
            {"id": 4, "values": VALUES, "op": "upsert", "ns": "b"},
            {"id": 5, "values": VALUES, "op": "upsert", "ns": None},  # the default namespace
        ]
        assert client.write(rows).ok
        report = client.write([{"id": 4, "op": "delete", "ns": None}, {"id": 5, "op": "delete", "ns": None}])
    assert report.ok and report.deleted == 2, report
    assert _stored(server) == {4}  # b's point 4 stays; the default namespace's 5 is gone


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_an_arrow_delete_row_with_a_null_namespace_keeps_other_namespaces_points(
    server: QdrantServer, transport: str
) -> None:
    with connect(
        server.uri(transport, "c"), create=True, dimension=3, op_column="op", namespace_column="ns"
    ) as client:
        assert client.write([{"id": 4, "values": VALUES, "op": "upsert", "ns": "b"}]).ok
        table = pa.table(
            {
                "id": pa.array([4], pa.int64()),
                "values": pa.array([None], pa.list_(pa.float32())),
                "op": ["delete"],
                "ns": pa.array([None], pa.string()),
            }
        )
        report = client.write(table)
    assert report.ok and report.deleted == 1, report
    assert _stored(server) == {4}


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_client_delete_without_a_namespace_keeps_other_namespaces_points(
    server: QdrantServer, transport: str
) -> None:
    with connect(server.uri(transport, "c"), create=True, dimension=3) as client:
        assert client.upsert([{"id": 5, "values": VALUES}], namespace="b").ok
        assert client.upsert([{"id": 6, "values": VALUES}]).ok
        report = client.delete([5, 6])
    assert report.ok and report.deleted == 2, report
    assert _stored(server) == {5}


def test_qdrants_own_rules_read_the_body_as_the_default_namespaces_points() -> None:
    """The body the connector sends, applied by qdrant-client's local mode (not the project's server)."""
    local = QdrantClient(":memory:")
    local.create_collection("c", vectors_config=models.VectorParams(size=3, distance=models.Distance.DOT))
    payloads: list[dict[str, object]] = [{"namespace": "b"}, {}, {"namespace": "b"}, {"other": 1}]
    local.upsert("c", [models.PointStruct(id=i, vector=VALUES, payload=p) for i, p in enumerate(payloads)])
    batch = RowBatch(ids=[0, 1, 3], vectors=None, op="delete")  # no namespace
    body = orjson.loads(encode_json_delete(batch, QdrantOptions(uri="qdrant://127.0.0.1:6333/c")))
    local.delete("c", points_selector=models.FilterSelector.model_validate(body))
    assert sorted(int(p.id) for p in local.scroll("c")[0]) == [0, 2]
