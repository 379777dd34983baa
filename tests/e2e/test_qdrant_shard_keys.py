"""Qdrant with ``namespace_mode=shard_key``: Qdrant keeps one point per (shard key, id) and takes no update of a
custom-sharded collection without a shard key ("Shard key not specified"), so a delete or clear without a
namespace is a ConfigError, not a request every row of which fails."""

from __future__ import annotations

import pyarrow as pa
import pytest

from tests.e2e.conftest import QDRANT_TRANSPORTS, three_d_rows
from tests.servers.qdrant_grpc import QdrantServer
from tests.servers.qdrant_rest import QdrantError
from vectordb.connector import connect
from vectordb.connector.errors import ConfigError


@pytest.mark.parametrize("transport", QDRANT_TRANSPORTS)
def test_each_shard_key_keeps_its_points_and_updates_name_one(
    qdrant_module_server: QdrantServer, transport: str
) -> None:
    collection = f"sk_{transport}"
    for namespace in ("a", "b"):
        with connect(
            qdrant_module_server.uri(transport, collection),
            create=True,
            namespace_mode="shard_key",
            namespace=namespace,
        ) as c:
            assert c.write(three_d_rows(3)).ok
    assert sorted(qdrant_module_server.store.points_by_shard(collection)) == [
        (k, i) for k in "ab" for i in range(3)
    ]
    with connect(qdrant_module_server.uri(transport, collection), namespace_mode="shard_key") as c:
        with pytest.raises(ConfigError, match="namespace_mode=shard_key: a delete without a namespace"):
            c.delete([0])
        with pytest.raises(ConfigError, match="namespace_mode=shard_key: a clear of every namespace"):
            c.clear()
        with pytest.raises(ConfigError, match="namespace_mode=shard_key: a write without a namespace"):
            c.write(pa.table({"id": [0], "values": [[1.0, 0, 0]]}))  # rows that cannot name one
        c.delete([0], namespace="a")
        assert sorted(qdrant_module_server.store.points_by_shard(collection)) == [
            ("a", 1),
            ("a", 2),
            ("b", 0),
            ("b", 1),
            ("b", 2),
        ]
        c.clear("b")
        assert sorted(qdrant_module_server.store.points_by_shard(collection)) == [("a", 1), ("a", 2)]


def test_the_server_refuses_a_delete_without_a_shard_key(qdrant_module_server: QdrantServer) -> None:
    qdrant_module_server.store.create_collection("sk_plain", {"": (3, "Dot")}, set(), True)
    with pytest.raises(QdrantError, match="Shard key not specified"):
        qdrant_module_server.store.delete_points("sk_plain", None, [], None)
