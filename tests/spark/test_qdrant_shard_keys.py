"""Through Spark into Qdrant with ``namespace_mode=shard_key``, ``create=true`` and ``namespace_column``: the
tasks make each namespace's shard key the first time they meet it (they keep ``create`` in this mode), and
every row lands under its own shard key; before, no such key was made and every row failed."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from tests.servers import qdrant_grpc
from tests.servers.qdrant_grpc import QdrantServer

qdrant_session_server = qdrant_grpc.qdrant_session_server  # the fixture


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_spark_makes_each_namespace_columns_shard_key(
    spark: Any, qdrant_session_server: QdrantServer, transport: str
) -> None:
    collection = f"spark_shards_{transport}"
    rows = pd.DataFrame(
        {
            "id": list(range(40)),
            "values": [[1.0, float(i), 0.0] for i in range(40)],
            "tenant": [f"tenant-{i % 4}" for i in range(40)],
        }
    )
    (
        spark.createDataFrame(rows)
        .repartition(3)
        .write.format("vectordb")
        .option("uri", qdrant_session_server.uri(transport, collection))
        .option("create", "true")
        .option("dimension", "3")
        .option("namespace_mode", "shard_key")
        .option("namespace_column", "tenant")
        .mode("append")
        .save()
    )
    store = qdrant_session_server.store
    assert store.describe(collection).shard_keys == {f"tenant-{k}" for k in range(4)}
    stored = store.points_by_shard(collection)
    assert sorted(stored) == sorted((f"tenant-{i % 4}", i) for i in range(40))


def test_spark_without_a_namespace_in_shard_key_mode_is_refused_on_the_driver(
    spark: Any, qdrant_session_server: QdrantServer
) -> None:
    """A DataFrame's rows name no shard key of their own: without option namespace or namespace_column the
    driver refuses the write, where every task failed alike with the same ConfigError."""
    from pyspark.errors import PySparkException

    rows = pd.DataFrame({"id": [1, 2], "values": [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]})
    writer = (
        spark.createDataFrame(rows)
        .write.format("vectordb")
        .option("uri", qdrant_session_server.uri("grpc", "spark_shards_none"))
        .option("create", "true")
        .option("dimension", "3")
        .option("namespace_mode", "shard_key")
    )
    with pytest.raises(PySparkException) as raised:
        writer.mode("append").save()
    text = str(raised.value)
    assert "Failed to initialize Python data source writer" in text, text[-2000:]
    assert "ConfigError: option namespace: namespace_mode=shard_key" in text, text[-2000:]
