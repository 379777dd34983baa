"""A collection whose named vector is called "size" (or "distance") is read as named vectors over REST.

``_describe_collection`` took any ``vectors`` object with a "size" key for the unnamed vector's params,
so a named vector "size" crashed the write with a bare ``TypeError`` (``int()`` of its params).
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


@pytest.fixture(scope="module")
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as s:
        yield s
    forget_shared()


def write(server: QdrantServer, transport: str, collection: str, names: tuple[str, ...], length: int) -> Any:
    """One row, a vector of ``length`` under each name (columns of the same names)."""
    vectors = {n: [1.0 + i for i in range(length)] for n in names}
    with connect(
        server.uri(transport, collection), vector_columns={n: n for n in names}, on_error="report"
    ) as client:
        return client.upsert([{"id": 1, **vectors}])


@pytest.mark.parametrize("names", [("size",), ("distance",), ("size", "distance")])
@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_a_vector_named_size_is_a_named_vector(
    server: QdrantServer, transport: str, names: tuple[str, ...]
) -> None:
    collection = f"named_{transport}_{'_'.join(names)}"
    server.client().create_collection(
        collection, vectors_config={n: m.VectorParams(size=2, distance=m.Distance.DOT) for n in names}
    )
    report = write(server, transport, collection, names, 2)
    assert report.ok and report.written == 1, report
    (point,) = server.client().retrieve(collection, [1], with_vectors=True)
    assert point.vector == {n: [1.0, 2.0] for n in names}
    # the dimension is the named vector's: a row of another length fails alone, before sending
    report = write(server, transport, collection, names, 3)
    assert report.failed == 1 and "expected 2" in str(report), report
