"""Weaviate tenants named by the call (``write``/``delete``/``clear``'s ``namespace``) or by the rows
themselves (dict rows' ``namespace``), with no option ``namespace`` or ``namespace_column``: a multi-tenant
collection takes them, and a collection without multi-tenancy refuses them before anything is sent.
Against the real server the fixtures start, read back with weaviate-client."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from vectordb.connector import ConfigError, connect

if TYPE_CHECKING:
    from tests.integration.weaviate_server import WeaviateServer

pytestmark = pytest.mark.timeout(120, func_only=True)  # the server starts in setup, its own limits


def _make(server: WeaviateServer, collection: str, *, tenants: bool) -> None:
    body: dict[str, Any] = {
        "class": collection,
        "vectorConfig": {"default": {"vectorizer": {"none": {}}, "vectorIndexType": "hnsw"}},
    }
    if tenants:
        body["multiTenancyConfig"] = {"enabled": True, "autoTenantCreation": True}
    assert server.rest("POST", "/v1/schema", json=body).status_code == 200


def _ids(server: WeaviateServer, collection: str, tenant: str | None = None) -> set[str]:
    client = server.client()
    try:
        view = client.collections.get(collection)
        if tenant is not None:
            view = view.with_tenant(tenant)
        return {o.properties["original_id"] for o in view.iterator()}
    finally:
        client.close()


def _table(ids: list[str]) -> pa.Table:
    values = pa.array([[1.0, float(i), 0, 0] for i in range(len(ids))], pa.list_(pa.float32()))
    return pa.table({"id": ids, "values": values})


def test_the_calls_namespace_names_the_tenant_of_a_multi_tenant_collection(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    _make(weaviate_server, weaviate_collection, tenants=True)
    uri, options = weaviate_server.uri(weaviate_collection), weaviate_server.options()
    with connect(uri, on_error="report", **options) as client:
        assert client.write(_table(["a", "b", "c"]), namespace="t1").written == 3
        assert client.write(_table(["x"]), namespace="t2").written == 1
        assert _ids(weaviate_server, weaviate_collection, "t1") == {"a", "b", "c"}
        assert client.delete(["a"], namespace="t1").ok
        assert _ids(weaviate_server, weaviate_collection, "t1") == {"b", "c"}
        assert client.clear(namespace="t1").startswith("2 objects in tenant 't1'")
        assert _ids(weaviate_server, weaviate_collection, "t1") == set()
        assert _ids(weaviate_server, weaviate_collection, "t2") == {"x"}
        assert client.clear().startswith("1 objects in every tenant")
        assert _ids(weaviate_server, weaviate_collection, "t2") == set()


def test_dict_rows_name_their_own_tenants_and_a_row_without_fails_alone(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    _make(weaviate_server, weaviate_collection, tenants=True)
    rows = [
        {"id": "a", "values": [1.0, 0, 0, 0], "namespace": "t1"},
        {"id": "b", "values": [0, 1.0, 0, 0], "namespace": "t2"},
        {"id": "c", "values": [0, 0, 1.0, 0]},
    ]
    uri, options = weaviate_server.uri(weaviate_collection), weaviate_server.options()
    with connect(uri, on_error="report", **options) as client:
        report = client.write(rows)
    assert report.written == 2 and report.failed == 1, report
    (failure,) = report.failures
    assert failure.ids == ("c",) and "the row's namespace is null" in failure.error
    assert _ids(weaviate_server, weaviate_collection, "t1") == {"a"}
    assert _ids(weaviate_server, weaviate_collection, "t2") == {"b"}


def test_no_tenant_from_anywhere_is_a_config_error(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    _make(weaviate_server, weaviate_collection, tenants=True)
    uri, options = weaviate_server.uri(weaviate_collection), weaviate_server.options()
    with connect(uri, on_error="report", **options) as client:
        with pytest.raises(ConfigError, match=r"^option namespace: .* is multi-tenant; name the tenant"):
            client.write(_table(["a"]))
        with pytest.raises(ConfigError, match=r"^option namespace: .* is multi-tenant; name the tenant"):
            client.delete(["a"])


def test_a_namespace_into_a_collection_without_tenants_is_refused_before_sending(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    _make(weaviate_server, weaviate_collection, tenants=False)
    uri, options = weaviate_server.uri(weaviate_collection), weaviate_server.options()
    with connect(uri, on_error="report", **options) as client:
        with pytest.raises(ConfigError, match=r"^namespace 't1' \(the call's\): .* multi-tenancy off"):
            client.write(_table(["a"]), namespace="t1")
        with pytest.raises(ConfigError, match=r"^namespace 't1' \(the call's\): .* multi-tenancy off"):
            client.delete(["a"], namespace="t1")
        with pytest.raises(ConfigError, match="multi-tenancy off"):
            client.clear(namespace="t1")
        rows = [
            {"id": "a", "values": [1.0, 0, 0, 0], "namespace": "t1"},
            {"id": "b", "values": [0, 1.0, 0, 0]},
        ]
        report = client.write(rows)
    assert report.written == 1 and report.failed == 1, report
    (failure,) = report.failures
    assert failure.ids == ("a",) and failure.error_type == "Invalid" and "multi-tenancy off" in failure.error
    assert _ids(weaviate_server, weaviate_collection) == {"b"}


def test_a_calls_namespace_into_a_collection_create_made_without_tenants_says_how_to_get_them(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    uri, options = weaviate_server.uri(weaviate_collection), weaviate_server.options()
    with (
        connect(uri, create=True, dimension=4, **options) as client,
        pytest.raises(ConfigError, match="only when option namespace or namespace_column is given"),
    ):
        client.write(_table(["a"]), namespace="t1")
