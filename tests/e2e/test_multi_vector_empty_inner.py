"""One process, ``create=true``, no ``vector_dimensions``: a row whose multi-vector holds an empty vector
(``[[]]``) fails alone, naming it, and the name's dimension comes from the other rows. Once, ``[[]]`` and
``[[1, 2]]`` tied and the smaller length won: Qdrant made the collection without ``colbert`` (size 0) and
every later write failed "has no vector 'colbert'"; Weaviate's encoder raised a bare ValueError."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pytest

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect
from vectordb.connector.ids import ORIGINAL_ID_KEY
from vectordb.connector.transports.base import forget_shared

if TYPE_CHECKING:
    from tests.integration.weaviate_server import WeaviateServer

pytestmark = pytest.mark.timeout(120)
F32 = pa.list_(pa.float32())
OPTIONS = {"vector_columns": {"title": "t"}, "multi_vector_columns": {"colbert": "tok"}, "on_error": "report"}
EMPTY = "multi-vector 'colbert' holds an empty vector"


def rows() -> pa.Table:
    """A tie between a row holding an empty vector and one of 2-dimensional vectors."""
    return pa.table(
        {"id": ["a", "b"], "t": pa.array([[1, 2]] * 2, F32), "tok": pa.array([[[]], [[1, 2]]], pa.list_(F32))}
    )


@pytest.fixture
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as running:
        yield running
        forget_shared()


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_qdrant_makes_colbert_and_fails_the_row_alone(server: QdrantServer, transport: str) -> None:
    for _ in range(2):  # a second write finds the collection as the first made it
        with connect(server.uri(transport, "c"), create=True, **OPTIONS) as client:
            report = client.write(rows())
        assert report.written == 1
        assert {f.ids: f.error for f in report.failures} == {("a",): EMPTY}
    params = server.client().get_collection("c").config.params.vectors
    assert sorted(params) == ["colbert", "title"] and params["colbert"].size == 2
    point = server.client().retrieve("c", [_point_id(server)], with_vectors=True)[0]
    assert point.vector == {"title": [1.0, 2.0], "colbert": [[1.0, 2.0]]}


def _point_id(server: QdrantServer) -> str:
    """The one stored point's id (the connector maps 'b' to a UUID)."""
    points, _ = server.client().scroll("c", limit=10)
    assert len(points) == 1
    return str(points[0].id)


def test_weaviate_fails_the_row_alone(weaviate_server: WeaviateServer, weaviate_collection: str) -> None:
    uri = weaviate_server.uri(weaviate_collection)
    with connect(uri, **weaviate_server.options(), create=True, **OPTIONS) as client:
        report = client.write(rows())
    assert report.written == 1
    assert {f.ids: f.error for f in report.failures} == {("a",): EMPTY}
    client = weaviate_server.client()
    try:
        found = {
            str(o.properties.get(ORIGINAL_ID_KEY)): {k: np.asarray(v).tolist() for k, v in o.vector.items()}
            for o in client.collections.get(weaviate_collection).iterator(include_vector=["title", "colbert"])
        }
    finally:
        client.close()
    assert found == {"b": {"title": [1.0, 2.0], "colbert": [[1.0, 2.0]]}}
