"""A collection whose partition key is Int64 takes no namespace, by one rule for upsert, delete and clear:
option namespace (or namespace_column) is a ConfigError before any row, a namespace given per call fails
its rows as Invalid in one request's time, and clear(namespace) is a ConfigError. Before, the upsert failed
every row ("field 'tenant' (Int64) cannot hold '5'") and the delete took about two requests a row for
Milvus's "comparison between incompatible types"."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from vectordb.connector import ConfigError, connect

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer

WHY = "stores the namespace in its partition key field 'tenant' (Int64), which takes no namespace"


def make(server: LiteServer, name: str) -> None:
    """VarChar key, FloatVector ``vector`` (dim 2), Int64 partition key ``tenant``; 20 rows of tenant 5."""
    from pymilvus import DataType

    client = server.client
    schema = client.create_schema(enable_dynamic_field=True)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=2)
    schema.add_field("tenant", DataType.INT64, is_partition_key=True)
    index = client.prepare_index_params()
    index.add_index("vector", index_type="AUTOINDEX", metric_type="COSINE")
    client.create_collection(name, schema=schema, index_params=index, num_partitions=4)
    client.insert(name, [{"id": f"r{i}", "vector": [1.0, 0.0], "tenant": 5} for i in range(20)])


def count(server: LiteServer, name: str) -> int:
    server.client.load_collection(name)
    return len(server.client.query(name, filter="", output_fields=["id"], limit=100))


@pytest.mark.parametrize("option", ["namespace", "namespace_column"])
def test_option_namespace_is_refused_before_any_row(
    milvus_lite: LiteServer, collection_name: str, option: str
) -> None:
    make(milvus_lite, collection_name)
    value = "5" if option == "namespace" else "ns"
    rows = [{"id": f"r{i}", "values": [0.0, 1.0], "ns": "5"} for i in range(20)]
    with (
        pytest.raises(ConfigError) as caught,
        connect(milvus_lite.uri, collection=collection_name, on_error="report", **{option: value}) as client,
    ):
        client.write(rows)
    assert str(caught.value).startswith(f"option {option}: ")
    assert WHY in str(caught.value)
    assert count(milvus_lite, collection_name) == 20


def test_a_namespace_per_call_fails_its_rows_at_once_for_upsert_and_delete(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    make(milvus_lite, collection_name)
    with connect(milvus_lite.uri, collection=collection_name, on_error="report") as client:
        upserted = client.write([{"id": f"r{i}", "values": [0.0, 1.0]} for i in range(20)], namespace="5")
        deleted = client.delete([f"r{i}" for i in range(20)], namespace="5")
    for report in (upserted, deleted):
        assert (report.written, report.failed) == (0, 20)
        assert {f.error_type for f in report.failures} == {"Invalid"}
        assert all(WHY in f.error for f in report.failures)
    assert deleted.requests <= 1
    assert count(milvus_lite, collection_name) == 20


def test_clear_of_a_namespace_is_refused(milvus_lite: LiteServer, collection_name: str) -> None:
    make(milvus_lite, collection_name)
    with connect(milvus_lite.uri, collection=collection_name) as client, pytest.raises(ConfigError) as caught:
        client.clear(namespace="5")
    assert str(caught.value).startswith("namespace '5': ")
    assert WHY in str(caught.value)
    assert count(milvus_lite, collection_name) == 20


def test_without_namespace_the_partition_key_is_metadata(
    milvus_lite: LiteServer, collection_name: str
) -> None:
    make(milvus_lite, collection_name)
    with connect(milvus_lite.uri, collection=collection_name) as client:
        report = client.write([{"id": "n1", "values": [0.0, 1.0], "metadata": {"tenant": 7}}])
        assert report.ok and report.written == 1
        assert client.delete(["n1"]).written == 1
    assert count(milvus_lite, collection_name) == 20
