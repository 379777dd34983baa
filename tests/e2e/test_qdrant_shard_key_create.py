"""Qdrant with ``namespace_mode=shard_key`` and ``create=true``: each namespace's shard key is made the first
time a write brings it (the call's namespace, ``namespace_column``), not only option namespace's; before, every
row of another namespace failed "Shard key tenant-a not found" after the isolation's requests."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import QDRANT_TRANSPORTS, three_d_rows
from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect


@pytest.mark.parametrize("transport", QDRANT_TRANSPORTS)
def test_create_makes_each_namespaces_shard_key(qdrant_module_server: QdrantServer, transport: str) -> None:
    collection = f"skc_{transport}"
    uri = qdrant_module_server.uri(transport, collection)
    with connect(uri, create=True, namespace_mode="shard_key", on_error="report") as c:
        report = c.write(three_d_rows(4), namespace="tenant-a")
    assert report.ok and report.written == 4 and report.requests == 1, report
    rows = [{**row, "ns": ns} for ns in ("tenant-b", "tenant-c") for row in three_d_rows(2)]
    with connect(uri, create=True, namespace_mode="shard_key", namespace_column="ns", on_error="report") as c:
        report = c.write(rows)
    assert report.ok and report.written == 4, report
    assert qdrant_module_server.store.describe(collection).shard_keys == {"tenant-a", "tenant-b", "tenant-c"}
    assert len(qdrant_module_server.store.points_by_shard(collection)) == 8
