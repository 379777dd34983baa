"""Qdrant with ``namespace_mode=shard_key`` and ``create=true``: each namespace's shard key is made the first
time a write brings it (the call's namespace, ``namespace_column``), not only option namespace's; before, every
row of another namespace failed "Shard key tenant-a not found" after the isolation's requests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect
from vectordb.connector.transports.base import forget_shared

TRANSPORTS = ["rest", "grpc"]


@pytest.fixture(scope="module")
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as s:
        yield s
    forget_shared()


def _rows(n: int) -> list[dict[str, object]]:
    return [{"id": i, "values": [1.0, 0, 0]} for i in range(n)]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_create_makes_each_namespaces_shard_key(server: QdrantServer, transport: str) -> None:
    collection = f"skc_{transport}"
    uri = server.uri(transport, collection)
    with connect(uri, create=True, namespace_mode="shard_key", on_error="report") as c:
        report = c.write(_rows(4), namespace="tenant-a")
    assert report.ok and report.written == 4 and report.requests == 1, report
    rows = [{**row, "ns": ns} for ns in ("tenant-b", "tenant-c") for row in _rows(2)]
    with connect(uri, create=True, namespace_mode="shard_key", namespace_column="ns", on_error="report") as c:
        report = c.write(rows)
    assert report.ok and report.written == 4, report
    assert server.store.describe(collection).shard_keys == {"tenant-a", "tenant-b", "tenant-c"}
    assert len(server.store.points_by_shard(collection)) == 8
