"""Beam ``ml.rag`` Chunks carrying a ``sparse_embedding`` into Qdrant with ``create=true`` (the Qdrant-protocol
gRPC test server, FnApiRunner).

Without option ``sparse_column`` the collection is made with no sparse vector, and each Chunk carrying one
was refused by the server ("Not existing vector name error: sparse"): now it comes out of ``.failed`` alone,
unsent, saying which key and what to do; a Chunk without one is written. With ``sparse_column`` (the key a
Chunk's sparse embedding is read under) the made collection holds every Chunk's sparse vector.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import apache_beam as beam
import pytest
from apache_beam.ml.rag.types import Chunk, Content, Embedding
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.util import assert_that, equal_to

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.beam import WriteToVectorDB
from vectordb.connector.ids import point_id
from vectordb.connector.transports.base import forget_shared

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as running:
        yield running
        forget_shared()


def _chunks() -> list[Chunk]:
    return [
        Chunk(
            id=f"c{i}",
            content=Content(text=f"text {i}"),
            embedding=Embedding(
                dense_embedding=[1.0, 2.0, float(i)], sparse_embedding=([1, 2], [0.5, 0.5]) if i % 2 else None
            ),
        )
        for i in range(4)
    ]


def _run(server: QdrantServer, collection: str, **options: Any) -> None:
    pipeline = beam.Pipeline(runner=FnApiRunner())
    result = (
        pipeline
        | beam.Create(_chunks(), reshuffle=False)
        | WriteToVectorDB(server.grpc_uri(collection), create=True, dimension=3, on_error="report", **options)
    )
    if options.get("sparse_column"):
        assert_that(result.failed | beam.Map(lambda d: d["id"]), equal_to([]))
    else:
        failed = result.failed | beam.Map(
            lambda d: (
                d["id"],
                d["error_type"],
                "'sparse_values'" in d["error"] and "sparse_column='sparse_values'" in d["error"],
            )
        )
        assert_that(failed, equal_to([("c1", "Invalid", True), ("c3", "Invalid", True)]))
    pipeline.run().wait_until_finish()


def test_chunks_with_a_sparse_embedding_fail_alone_without_sparse_column(server: QdrantServer) -> None:
    _run(server, "chunks_no_option")
    assert server.store.count("chunks_no_option") == 2
    assert all(e.outcome == "ok" for e in server.store.log if e.collection == "chunks_no_option")


def test_chunks_with_sparse_column_are_held_whole(server: QdrantServer) -> None:
    _run(server, "chunks_option", sparse_column="sparse_values")
    official = server.client()
    assert list(official.get_collection("chunks_option").config.params.sparse_vectors or {}) == ["sparse"]
    [point] = official.retrieve("chunks_option", [point_id("c1")], with_vectors=True)
    official.close()
    assert isinstance(point.vector, dict) and point.vector["sparse"].indices == [1, 2]
