"""Through Spark into a real Weaviate (weaviate-server v1.35.2): executors write over gRPC, every object is read
back with the official weaviate-client and compared exactly, a row of another dimension becomes a dead letter
with its reason while the rest land, and ``mode("overwrite")`` empties the tenant first."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from vectordb.connector.ids import ORIGINAL_ID_KEY

from .conftest import float32_rows, vectors_table

if TYPE_CHECKING:
    from tests.integration.weaviate_server import WeaviateServer


def stored(server: WeaviateServer, name: str, tenant: str) -> dict[str, tuple[bytes, dict[str, Any]]]:
    """id → (float32 bytes, properties) of every object of ``tenant``, as weaviate-client reads them."""
    client = server.client()
    try:
        view = client.collections.get(name).with_tenant(tenant)
        out = {}
        for obj in view.iterator(include_vector=True):
            props = {k: v for k, v in obj.properties.items() if v is not None}
            out[props.pop(ORIGINAL_ID_KEY)] = (np.asarray(obj.vector["default"], "<f4").tobytes(), props)
        return out
    finally:
        client.close()


def save(spark: Any, server: WeaviateServer, name: str, table: pa.Table, mode: str, **options: str) -> None:
    writer = spark.createDataFrame(table).repartition(3).write.format("vectordb")
    options = {
        "uri": server.uri(name),
        "grpc_port": str(server.grpc_port),
        "create": "true",
        "dimension": str(len(table["values"][0])),
        "namespace": "docs",
        **options,
    }
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.mode(mode).save()


def test_spark_writes_weaviate_exactly_and_overwrite_clears_the_tenant(
    spark: Any, weaviate_server: WeaviateServer, weaviate_collection: str, tmp_path: Path
) -> None:
    table = vectors_table(600, 8)
    values = table.column("values").to_pylist()
    values[5] = values[5][:7]  # another dimension: refused before sending, a dead letter
    table = table.set_column(1, "values", pa.array(values, type=pa.list_(pa.float32())))
    save(
        spark,
        weaviate_server,
        weaviate_collection,
        table,
        "append",
        dimension="8",
        on_error="dead_letter",
        dead_letter_path=str(tmp_path / "dead"),
    )
    got = stored(weaviate_server, weaviate_collection, "docs")
    expected = float32_rows(table)
    assert sorted(got) == sorted(set(expected) - {"v5"})
    for raw_id, (vector, props) in got.items():
        n = int(raw_id[1:])
        assert vector == expected[raw_id], raw_id
        assert props == {"title": f"title {n}", "n": n}
        assert type(props["n"]) is int  # int64 stayed an int property
    letters = pq.read_table(tmp_path / "dead").to_pylist()
    assert [(d["id"], d["error"]) for d in letters] == [
        ("v5", "Invalid: vector has 7 dimensions; expected 8")
    ]

    save(
        spark,
        weaviate_server,
        weaviate_collection,
        vectors_table(20, 8, seed=9, start=1000),
        "overwrite",
        allow_overwrite="true",
    )
    assert sorted(stored(weaviate_server, weaviate_collection, "docs")) == sorted(
        f"v{i}" for i in range(1000, 1020)
    )


def test_a_multi_tenant_collection_without_a_tenant_option_is_refused_on_the_driver(
    spark: Any, weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    """A DataFrame's rows name no tenant of their own: with neither option namespace nor namespace_column, a
    write into a multi-tenant collection is a ConfigError on the driver, before an overwrite clears anything
    (every task failed alike, the overwrite having emptied every tenant)."""
    import pytest
    from pyspark.errors import PySparkException

    table = vectors_table(20, 8)
    save(spark, weaviate_server, weaviate_collection, table, "append")  # tenant "docs": multi-tenant
    for mode in ("append", "overwrite"):
        writer = spark.createDataFrame(table).write.format("vectordb").mode(mode)
        writer = writer.option("uri", weaviate_server.uri(weaviate_collection))
        writer = writer.option("grpc_port", str(weaviate_server.grpc_port)).option("allow_overwrite", "true")
        with pytest.raises(PySparkException) as raised:
            writer.save()
        text = str(raised.value)
        assert "ConfigError: option namespace: collection" in text and "is multi-tenant" in text, text[-2000:]
    assert len(stored(weaviate_server, weaviate_collection, "docs")) == 20
