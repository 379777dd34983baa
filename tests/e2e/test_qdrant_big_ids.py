"""Qdrant ids outside int64 (2**64 + 1, -(2**63) - 1) become UUIDs, and their original is kept as text:
no JSON integer of Qdrant's nor gRPC's ``integer_value`` holds it (REST raised TypeError out of
``Client.write``, gRPC stored a rounded double). The native and Python heads stay the same bytes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect
from vectordb.connector.backends import qdrant
from vectordb.connector.ids import point_id
from vectordb.connector.transports.base import forget_shared

TRANSPORTS = ["rest", "grpc"]
BIG_IDS = [2**64 + 1, -(2**63) - 1, 10**30]


@pytest.fixture(scope="module")
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as s:
        yield s
    forget_shared()


def _write(server: QdrantServer, transport: str, collection: str, rows: list[dict[str, Any]]) -> Any:
    with connect(server.uri(transport, collection), create=True, on_error="report") as client:
        return client.write(rows)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_id_outside_int64_keeps_its_original_as_text(server: QdrantServer, transport: str) -> None:
    rows = [{"id": f"ok-{i}", "values": [1.0, 0, 0]} for i in range(3)]
    rows += [{"id": raw, "values": [0, 1.0, 0], "metadata": {"k": 1}} for raw in BIG_IDS]
    report = _write(server, transport, f"big_{transport}", rows)
    assert report.ok and report.written == 6, report
    points = server.store.points(f"big_{transport}")
    for raw in BIG_IDS:
        assert points[point_id(raw)].payload == {"k": 1, "original_id": str(raw)}


def test_the_native_heads_of_such_ids_are_pythons() -> None:
    options = qdrant.QdrantOptions(uri="qdrant+grpc://h:6334/c", namespace="n")
    ids: list[Any] = [*BIG_IDS, "doc", 5]
    metadata: list[dict[str, Any]] = [{"a": 1}, {}, {"b": [2**63 - 1]}, {"c": "x"}, {}]
    want = qdrant._python_heads(ids, metadata, "n", options)
    assert (
        qdrant._point_heads(qdrant.RowBatch(ids=ids, vectors=None, metadata=metadata, namespace="n"), options)
        == want
    )
