"""Through Spark into Qdrant (the Qdrant-protocol test server, REST and gRPC): executors write over
sockets to the server in this process; every row is read back and compared exactly, and a row of
another dimension becomes a dead letter with its reason while the rest land."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.servers import qdrant_grpc
from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector.ids import ORIGINAL_ID_KEY, point_id

from .conftest import float32_rows, vectors_table

qdrant_session_server = qdrant_grpc.qdrant_session_server  # the fixture


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_spark_writes_qdrant_exactly(
    spark: Any, qdrant_session_server: QdrantServer, transport: str, tmp_path: Path
) -> None:
    collection = f"spark_{transport}"
    table = vectors_table(600, 8)
    ids = table.column("id").to_pylist()
    ids[5] = "bad-row"
    values = table.column("values").to_pylist()
    values[5] = values[5][:7]  # another dimension: refused before sending, a dead letter
    table = table.set_column(0, "id", pa.array(ids)).set_column(
        1, "values", pa.array(values, type=pa.list_(pa.float32()))
    )
    (
        spark.createDataFrame(table.to_pandas())
        .repartition(3)
        .write.format("vectordb")
        .option("uri", qdrant_session_server.uri(transport, collection))
        .option("create", "true")
        .option("metric", "dotproduct")
        .option("dimension", "8")
        .option("namespace", "docs")
        .option("on_error", "dead_letter")
        .option("dead_letter_path", str(tmp_path / "dead"))
        .mode("append")
        .save()
    )
    stored = qdrant_session_server.store.points(collection)
    expected = float32_rows(table)
    assert len(stored) == 599
    for raw_id, vector in expected.items():
        if raw_id == "bad-row":
            assert point_id(raw_id) not in stored
            continue
        point = stored[point_id(raw_id)]
        assert point.vector().tobytes() == vector
        n = int(raw_id[1:])
        assert point.payload == {"title": f"title {n}", "n": n, "namespace": "docs", ORIGINAL_ID_KEY: raw_id}
    letters = pq.read_table(tmp_path / "dead").to_pylist()
    assert [(d["id"], d["error"]) for d in letters] == [
        ("bad-row", "Invalid: vector has 7 dimensions; expected 8")
    ]
