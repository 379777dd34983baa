"""A named vector's NaN or infinity fails its row naming the vector, its input column and the index, in
Beam as in the client ("vector 'title' (column 'title_vec') has NaN or infinity at index 1"): the sink
builds the client's ``Columns`` itself, and left out each name's column, so Beam's reasons named no
column."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector.transports.base import forget_shared

from .conftest import FAILED, counters, run_sink

NAMED = {
    "vector_columns": "title:title_vec",
    "multi_vector_columns": "colbert:tokens",
    "vector_dimensions": "title:2,colbert:2",
}
ELEMENTS = [
    {"id": "ok", "title_vec": [0.3, 0.4], "tokens": [[1.0, 2.0]]},
    {"id": "nan", "title_vec": [0.3, math.nan], "tokens": [[1.0, 2.0]]},
    {"id": "inf", "title_vec": [0.3, 0.4], "tokens": [[1.0, 2.0], [3.0, math.inf]]},
]


@pytest.fixture
def qdrant() -> Iterator[QdrantServer]:
    with QdrantServer() as running:
        yield running
        forget_shared()


@pytest.mark.parametrize("batching", ["bounded", "unbounded"])
def test_a_named_vectors_nan_names_its_column(qdrant: QdrantServer, batching: str) -> None:
    FAILED.clear()
    got = counters(
        run_sink(
            qdrant.uri("rest", "named"),
            ELEMENTS,
            create=True,
            batching=batching,
            max_buffering_s=0.5,
            **NAMED,
        )
    )
    assert (got["written"], got["failed"]) == (1, 2), got
    reasons = {letter["id"]: letter["error"] for letter in FAILED}
    assert "vector 'title' (column 'title_vec') has NaN or infinity at index 1" in reasons["nan"], reasons
    assert (
        "multi-vector 'colbert' (column 'tokens'): vector 1 has NaN or infinity at index 1" in reasons["inf"]
    ), reasons
