"""Weaviate: clearing a multi-tenant collection one of whose tenants is inactive (COLD). A batch delete
cannot reach such a tenant: the clear used to empty the tenants listed before it and then fail. It is
refused before anything is deleted, unless the collection activates tenants on a request. Against the
real server the fixtures start."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from vectordb.connector import ConfigError, connect

if TYPE_CHECKING:
    from tests.integration.weaviate_server import WeaviateServer

pytestmark = pytest.mark.timeout(120, func_only=True)  # the server starts in setup, its own limits

TENANTS = ["t1", "t2", "t3", "t4"]


def _filled(server: WeaviateServer, collection: str, *, activation: bool) -> None:
    """Four tenants of three objects each, ``t3`` then made COLD."""
    body = {
        "class": collection,
        "vectorConfig": {"default": {"vectorizer": {"none": {}}, "vectorIndexType": "hnsw"}},
        "multiTenancyConfig": {
            "enabled": True,
            "autoTenantCreation": True,
            "autoTenantActivation": activation,
        },
    }
    assert server.rest("POST", "/v1/schema", json=body).status_code == 200
    rows = [{"id": f"{t}-{i}", "values": [1.0, float(i), 0, 0], "ns": t} for t in TENANTS for i in range(3)]
    with connect(server.uri(collection), namespace_column="ns", **server.options()) as client:
        assert client.write(rows).written == 12
    cold = [{"name": "t3", "activityStatus": "COLD"}]
    assert server.rest("PUT", f"/v1/schema/{collection}/tenants", json=cold).is_success


def _counts(server: WeaviateServer, collection: str) -> dict[str, int]:
    hot = [{"name": "t3", "activityStatus": "HOT"}]
    assert server.rest("PUT", f"/v1/schema/{collection}/tenants", json=hot).is_success
    client = server.client()
    try:
        view = client.collections.get(collection)
        return {t: sum(1 for _ in view.with_tenant(t).iterator()) for t in TENANTS}
    finally:
        client.close()


def test_a_cold_tenant_refuses_the_clear_before_anything_is_deleted(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    _filled(weaviate_server, weaviate_collection, activation=False)
    uri, options = weaviate_server.uri(weaviate_collection), weaviate_server.options()
    refused = r"cannot clear: tenants 't3' \(COLD\) are inactive .* nothing was deleted"
    with connect(uri, namespace_column="ns", **options) as client:
        with pytest.raises(ConfigError, match=refused):
            client.clear()
        with pytest.raises(ConfigError, match=refused):
            client.clear(namespace="t3")
        assert client.clear(namespace="t1").startswith("3 objects in tenant 't1'")  # an active one
    assert _counts(weaviate_server, weaviate_collection) == {"t1": 0, "t2": 3, "t3": 3, "t4": 3}


def test_a_collection_that_activates_its_tenants_is_cleared_whole(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    _filled(weaviate_server, weaviate_collection, activation=True)
    uri, options = weaviate_server.uri(weaviate_collection), weaviate_server.options()
    with connect(uri, namespace_column="ns", **options) as client:
        assert client.clear().startswith("12 objects in every tenant")
    assert _counts(weaviate_server, weaviate_collection) == dict.fromkeys(TENANTS, 0)
