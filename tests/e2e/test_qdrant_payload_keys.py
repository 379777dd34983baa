"""Qdrant payload keys: a ``namespace_key`` that is no plain JSON path key (``tenant.id``, ``my ns``) is
quoted in the delete and clear filters, as Qdrant reads a filter's key as a path; keys the connector cannot
use are refused up front. Checked against qdrant-client's local mode (Qdrant's filter and path rules) and
the project's servers, which read filter keys as Qdrant parses paths."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from qdrant_client import QdrantClient
from qdrant_client.http import models

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect
from vectordb.connector.backends.qdrant import _json_namespace_condition
from vectordb.connector.errors import ConfigError
from vectordb.connector.transports.base import forget_shared

KEYS = ["tenant.id", "my ns", "tenant:id", "ключ", "plain_key-1"]


@pytest.fixture(scope="module")
def server() -> Iterator[QdrantServer]:
    with QdrantServer() as s:
        yield s
    forget_shared()


def _local(key: str) -> QdrantClient:
    """A local Qdrant holding what the connector writes: a point in namespace a, one in b, one in none."""
    client = QdrantClient(":memory:")
    client.create_collection("c", vectors_config=models.VectorParams(size=3, distance=models.Distance.DOT))
    payloads: list[dict[str, object]] = [{key: "a"}, {key: "b"}, {}, {"tenant": {"id": "a"}}]
    client.upsert(
        "c",
        points=[models.PointStruct(id=i, vector=[1, 0, 0], payload=p) for i, p in enumerate(payloads)],
    )
    return client


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize(("namespace", "left"), [("a", [1, 2, 3]), ("", [0, 1])])
def test_qdrants_rules_delete_just_the_namespaces_points(key: str, namespace: str, left: list[int]) -> None:
    client = _local(key)
    condition = _json_namespace_condition(key, namespace)
    selector = models.FilterSelector(filter=models.Filter.model_validate({"must": [condition]}))
    client.delete("c", points_selector=selector)
    assert sorted(int(p.id) for p in client.scroll("c")[0]) == left


@pytest.mark.parametrize("transport", ["rest", "grpc"])
@pytest.mark.parametrize("key", ["tenant.id", "my ns"])
def test_a_clear_or_delete_keeps_the_other_namespaces(server: QdrantServer, transport: str, key: str) -> None:
    collection = f"keys_{transport}_{len(key)}"
    for namespace in ("a", "b", ""):
        with connect(
            server.uri(transport, collection), create=True, namespace_key=key, namespace=namespace
        ) as c:
            c.write(
                [
                    {"id": f"{namespace}-1", "values": [1.0, 0, 0]},
                    {"id": f"{namespace}-2", "values": [0, 1.0, 0]},
                ]
            )
    with connect(server.uri(transport, collection), namespace_key=key) as c:
        c.delete(["a-2"], namespace="a")
        c.clear("")
        left = sorted(str(p.payload.get("original_id")) for p in server.store.points(collection).values())
        assert left == ["a-1", "b-1", "b-2"]
        c.clear("a")
        left = sorted(str(p.payload.get("original_id")) for p in server.store.points(collection).values())
        assert left == ["b-1", "b-2"]


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"namespace_key": ""}, "option namespace_key"),
        ({"original_id_key": ""}, "option original_id_key"),
        ({"namespace_key": 'a"b'}, "option namespace_key"),
        ({"namespace_key": "a\\b"}, "option namespace_key"),
        ({"namespace_key": "k", "original_id_key": "k"}, "options namespace_key and original_id_key"),
    ],
)
def test_keys_the_connector_cannot_use_are_refused(options: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        connect("qdrant://127.0.0.1:1/c", **options)
