"""A Beam element's multi-vector given as JSON text is read as the client's dict rows and Arrow read it
(``floats.json_multi_vector``): written when it is a list of lists of numbers, else its element is a dead
letter naming the multi-vector, its column and an excerpt of the text. Elements refused every such text
("is not a sequence of vectors of numbers") before."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector.transports.base import forget_shared

from .conftest import FAILED, counters, run_sink

NAMED = {
    "vector_columns": "title:title_vec",
    "multi_vector_columns": "colbert:tok",
    "vector_dimensions": "title:2,colbert:2",
}
ELEMENTS = [
    {"id": "ok", "title_vec": [0.3, 0.4], "tok": "[[1, 2], [3, 4.5]]"},
    {"id": "cut", "title_vec": [0.3, 0.4], "tok": "[[1, 2], [3"},
    {"id": "flat", "title_vec": [0.3, 0.4], "tok": "[1, 2]"},
]


@pytest.fixture
def qdrant() -> Iterator[QdrantServer]:
    with QdrantServer() as running:
        yield running
        forget_shared()


def test_an_elements_multi_vector_text_is_read_strictly(qdrant: QdrantServer) -> None:
    FAILED.clear()
    got = counters(run_sink(qdrant.uri("rest", "mv_text"), ELEMENTS, create=True, **NAMED))
    assert (got["written"], got["failed"]) == (1, 2), got
    reasons = {letter["id"]: letter["error"] for letter in FAILED}
    not_json = "multi-vector 'colbert' (column 'tok') text is not a JSON list of lists of numbers: "
    assert reasons == {"cut": not_json + "'[[1, 2], [3'", "flat": not_json + "'[1, 2]'"}
    points = qdrant.client().scroll("mv_text", with_vectors=True, limit=10)[0]
    assert [p.vector["colbert"] for p in points] == [[[1.0, 2.0], [3.0, 4.5]]]
