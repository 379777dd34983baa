"""Shard keys that are numbers: Qdrant's ``ShardKey`` is text or a number, and key 1 is not key "1".

The connector sent every namespace as a text key, so in a collection made with ``create_shard_key(c, 1)``
every row failed "Shard key 1 not found" and ``clear("1")`` cleared nothing. ``check_target`` now reads the
collection's shard keys (REST ``GET /collections/{c}/cluster``, gRPC ``CollectionClusterInfo``) and sends
a namespace of digits as the number where the keys are numbers (option ``shard_key_type``).
"""

from __future__ import annotations

from typing import Any

import pytest
from qdrant_client.http import models as m

from tests.e2e.conftest import QDRANT_TRANSPORTS
from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect
from vectordb.connector.errors import ConfigError

pytestmark = pytest.mark.timeout(120)


def make(server: QdrantServer, collection: str, *keys: Any) -> None:
    """A custom-sharded collection with ``keys`` made by the official client, point 5 in the first."""
    client = server.client()
    client.create_collection(
        collection,
        vectors_config=m.VectorParams(size=2, distance=m.Distance.DOT),
        sharding_method=m.ShardingMethod.CUSTOM,
    )
    for key in keys:
        client.create_shard_key(collection, key)
    client.upsert(
        collection,
        [m.PointStruct(id=5, vector=[1.0, 2.0], payload={"v": "theirs"})],
        shard_key_selector=keys[0],
    )


@pytest.mark.parametrize("transport", QDRANT_TRANSPORTS)
def test_a_namespace_of_digits_names_the_numeric_shard_key(
    qdrant_module_server: QdrantServer, transport: str
) -> None:
    collection = f"numbers_{transport}"
    make(qdrant_module_server, collection, 1, 2)
    uri = qdrant_module_server.uri(transport, collection)
    with connect(uri, namespace_mode="shard_key", namespace="1", on_error="report") as client:
        report = client.upsert([{"id": 5, "values": [3.0, 4.0]}, {"id": 6, "values": [3.0, 4.0]}])
        assert report.ok and report.written == 2, report
        assert client.backend.resolved_options() == {"shard_key_type": "number"}  # what tasks are handed
        assert sorted(qdrant_module_server.store.points_by_shard(collection)) == [(1, 5), (1, 6)]
        assert client.delete([6], namespace="2").ok  # key 2 holds no point 6: nothing deleted
        assert client.delete([6]).ok
        assert sorted(qdrant_module_server.store.points_by_shard(collection)) == [(1, 5)]
        client.clear("1")
    assert qdrant_module_server.store.points_by_shard(collection) == {}
    # rows that name their namespace: one that is no number fails alone, the others are written
    rows = [{"id": i, "values": [1.0, 2.0], "ns": ns} for i, ns in enumerate(["2", "eu", "02", "1"])]
    with connect(uri, namespace_mode="shard_key", namespace_column="ns", on_error="report") as client:
        report = client.upsert(rows)
    assert report.written == 2 and report.failed == 2, report
    assert sorted(f.error for f in report.failures) == [
        f"namespace {ns!r} is not an unsigned integer, and the shard keys are numbers (option shard_key_type=number)"
        for ns in ("02", "eu")
    ]
    assert sorted(qdrant_module_server.store.points_by_shard(collection)) == [(1, 3), (2, 0)]
    with (
        pytest.raises(ConfigError, match="option namespace: namespace 'eu' is not an unsigned integer"),
        connect(uri, namespace_mode="shard_key", namespace="eu") as client,
    ):
        client.upsert([{"id": 1, "values": [1.0, 2.0]}])


@pytest.mark.parametrize("transport", QDRANT_TRANSPORTS)
def test_text_keys_stay_text_and_mixed_keys_need_the_option(
    qdrant_module_server: QdrantServer, transport: str
) -> None:
    text = f"text_keys_{transport}"
    make(qdrant_module_server, text, "1")
    with connect(
        qdrant_module_server.uri(transport, text), namespace_mode="shard_key", namespace="1"
    ) as client:
        assert client.upsert([{"id": 6, "values": [1.0, 2.0]}]).ok
    assert sorted(qdrant_module_server.store.points_by_shard(text)) == [("1", 5), ("1", 6)]
    mixed = f"mixed_keys_{transport}"
    make(qdrant_module_server, mixed, "eu", 1)
    uri = qdrant_module_server.uri(transport, mixed)
    with (
        pytest.raises(
            ConfigError, match=r"option shard_key_type: collection '\w+' has shard keys of both kinds"
        ),
        connect(uri, namespace_mode="shard_key", namespace="eu") as client,
    ):
        client.upsert([{"id": 6, "values": [1.0, 2.0]}])
    for kind, namespace in (("text", "eu"), ("number", "1")):
        with connect(uri, namespace_mode="shard_key", namespace=namespace, shard_key_type=kind) as client:
            assert client.upsert([{"id": 6, "values": [1.0, 2.0]}]).ok
    assert set(qdrant_module_server.store.points_by_shard(mixed)) == {(1, 6), ("eu", 5), ("eu", 6)}


@pytest.mark.parametrize("transport", QDRANT_TRANSPORTS)
def test_create_makes_numeric_keys_when_told(qdrant_module_server: QdrantServer, transport: str) -> None:
    collection = f"made_numbers_{transport}"
    uri = qdrant_module_server.uri(transport, collection)
    with connect(
        uri, create=True, dimension=2, namespace_mode="shard_key", namespace="7", shard_key_type="number"
    ) as client:
        assert client.upsert([{"id": 1, "values": [1.0, 2.0]}]).ok
        assert client.write([{"id": 2, "values": [1.0, 2.0]}], namespace="8").ok
    assert qdrant_module_server.store.describe(collection).shard_keys == {7, 8}
    assert sorted(qdrant_module_server.store.points_by_shard(collection)) == [(7, 1), (8, 2)]
