"""A row carrying a sparse vector into a Qdrant collection with no sparse vector ``sparse_vector_name``.

Dict rows carry ``sparse_values`` (a Beam Chunk its ``sparse_embedding``) without option ``sparse_column``,
and the encoders send it under ``sparse_vector_name``; ``create=true`` makes that sparse vector only with
the option. Every such row was sent and refused by the server ("Not existing vector name error: sparse"),
a reason that names neither the row's key, the collection, nor the option. Now each fails alone before
sending (``Invalid``), saying what to do; the rows without one are written. With ``sparse_column`` the made
collection has the sparse vector and every row is written. The project's Qdrant-protocol servers, REST and
gRPC, read back with qdrant-client.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from qdrant_client.http import models as m

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect
from vectordb.connector.transports.base import forget_shared

pytestmark = pytest.mark.timeout(120)

SPARSE = {"indices": [1, 5], "values": [0.5, 0.25]}
WITH_SPARSE = {1, 3}  # the rows carrying a sparse vector; 0 and 2 carry none


@pytest.fixture(scope="module")
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as s:
        yield s
    forget_shared()


def _rows(vector_key: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [{"id": i, vector_key: [1.0, 2.0]} for i in range(4)]
    for i in WITH_SPARSE:
        rows[i]["sparse_values"] = SPARSE
    return rows


LAYOUTS = {  # options, the rows' vector key
    "single": ({}, "values"),
    "named": ({"vector_columns": {"title": "t"}}, "t"),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_create_without_sparse_column_fails_the_sparse_rows_alone_before_sending(
    server: QdrantServer, transport: str, layout: str
) -> None:
    collection = f"unheld_made_{transport}_{layout}"
    options, key = LAYOUTS[layout]
    with connect(server.uri(transport, collection), create=True, on_error="report", **options) as client:
        report = client.upsert(_rows(key))
    assert report.written == 2 and report.failed == 2
    [failure] = report.failures
    assert sorted(failure.ids) == ["1", "3"]
    assert failure.error_type == "Invalid", failure.error
    for part in (
        "'sparse_values'",
        repr(collection),
        "no sparse vector 'sparse'",
        "sparse_column='sparse_values'",
    ):
        assert part in failure.error, failure.error
    sent = [entry for entry in server.store.log if entry.collection == collection]
    assert all(entry.outcome == "ok" for entry in sent), [entry.message for entry in sent]
    assert server.store.count(collection) == 2


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_an_existing_collection_without_the_sparse_vector_fails_the_sparse_rows_alone(
    server: QdrantServer, transport: str
) -> None:
    collection = f"unheld_existing_{transport}"
    server.client().create_collection(
        collection, vectors_config=m.VectorParams(size=2, distance=m.Distance.DOT)
    )
    with connect(server.uri(transport, collection), on_error="report") as client:
        report = client.upsert(_rows("values"))
    assert report.written == 2 and report.failed == 2
    [failure] = report.failures
    assert failure.error_type == "Invalid", failure.error
    for part in ("'sparse_values'", repr(collection), "option sparse_vector_name", "sparse_column"):
        assert part in failure.error, failure.error
    assert all(e.outcome == "ok" for e in server.store.log if e.collection == collection)


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_create_with_sparse_column_holds_every_row(server: QdrantServer, transport: str) -> None:
    collection = f"unheld_option_{transport}"
    with connect(
        server.uri(transport, collection), create=True, on_error="report", sparse_column="sparse_values"
    ) as client:
        report = client.upsert(_rows("values"))
    assert report.written == 4 and report.failed == 0, report.failures
    official = server.client()
    assert list(official.get_collection(collection).config.params.sparse_vectors or {}) == ["sparse"]
    points = official.retrieve(collection, [1, 2], with_vectors=True)
    vectors = {p.id: p.vector for p in points}
    assert isinstance(vectors[1], dict) and vectors[1]["sparse"].indices == [1, 5]
    official.close()
