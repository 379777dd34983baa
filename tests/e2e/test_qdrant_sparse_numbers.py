"""Booleans and numeric text are no sparse indices or values, as they are no dense vector's values.

The dict reader took ``np.asarray(..., dtype)`` of a sparse vector's parts, which reads True as 1 and
"3" as 3, so ``{"indices": [True, False]}`` was stored as indices 1 and 0 while a dense ``[True, 1.0]``
failed its row (the project's Qdrant-protocol server, REST and gRPC).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from qdrant_client.http import models as m

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect
from vectordb.connector.transports.base import forget_shared

pytestmark = pytest.mark.timeout(120)

REASON = "sparse indices must be integers and values numbers"
BAD = {
    "bool indices": {"indices": [True, False], "values": [0.5, 0.25]},
    "bool value": {"indices": [7], "values": [True]},
    "bool among floats": {"indices": [1, 2], "values": [True, 0.5]},
    "numpy bool indices": {"indices": np.array([True]), "values": [1.0]},
    "text": {"indices": ["3"], "values": ["0.5"]},
    "text value": {"indices": [3], "values": np.array(["0.5"])},
}
GOOD = {
    "ints and floats": ({"indices": [1, 2], "values": [0.5, 2]}, ([1, 2], [0.5, 2.0])),
    "whole floats as indices": ({"indices": [3.0], "values": [1.0]}, ([3], [1.0])),
    "numpy": (
        {"indices": np.array([4], dtype=np.uint32), "values": np.array([0.5], dtype=np.float16)},
        ([4], [0.5]),
    ),
}


@pytest.fixture(scope="module")
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as s:
        yield s
    forget_shared()


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_booleans_and_text_fail_their_rows_and_numbers_are_stored(
    server: QdrantServer, transport: str
) -> None:
    collection = f"sparse_numbers_{transport}"
    server.client().create_collection(
        collection,
        vectors_config=m.VectorParams(size=2, distance=m.Distance.DOT),
        sparse_vectors_config={"sparse": m.SparseVectorParams()},
    )
    cases: list[tuple[str, Any]] = [*BAD.items(), *((k, v) for k, (v, _) in GOOD.items())]
    rows = [{"id": i, "values": [1.0, 1.0], "sparse": sparse} for i, (_, sparse) in enumerate(cases)]
    with connect(server.uri(transport, collection), sparse_column="sparse", on_error="report") as client:
        report = client.upsert(rows)
    failed = {cases[int(i)][0]: f.error for f in report.failures for i in f.ids if i is not None}
    assert failed.keys() == BAD.keys() and set(failed.values()) == {REASON}, report
    stored = {int(p.id): p.vector["sparse"] for p in server.client().scroll(collection, with_vectors=True)[0]}
    assert {cases[i][0]: (s.indices, s.values) for i, s in stored.items()} == {
        name: expected for name, (_, expected) in GOOD.items()
    }
