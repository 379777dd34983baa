"""Deletes through Spark (option ``op_column``) into Qdrant (the Qdrant-protocol test server): a delete
row's vector is not read (README, "Deletes"), so text that is no JSON list (how a CSV file holds a
vector) or a null element in its vector cell does not fail it; an upsert row holding the same still
fails with its reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tests.servers import qdrant_grpc
from tests.servers.qdrant_grpc import QdrantServer

qdrant_session_server = qdrant_grpc.qdrant_session_server  # the fixture


def _write(spark: Any, table: pa.Table, uri: str, **options: str) -> None:
    writer = spark.createDataFrame(table).repartition(2).write.format("vectordb").option("uri", uri)
    for key, value in {"create": "true", "dimension": "3", **options}.items():
        writer = writer.option(key, value)
    writer.mode("append").save()


def test_spark_deletes_rows_whatever_their_vector_cells_hold(
    spark: Any, qdrant_session_server: QdrantServer, tmp_path: Path
) -> None:
    uri = qdrant_session_server.uri("rest", "spark_delete_cells")
    seed = pa.table({"id": list(range(8)), "values": pa.array([[1.0, 0.0, 0.0]] * 8, pa.list_(pa.float32()))})
    _write(spark, seed, uri)
    texts = pa.table(
        {
            "id": [0, 1, 2, 3],
            "values": ["n/a", "null", "[1, null, 3]", "n/a"],
            "op": ["delete", "delete", "delete", "upsert"],
        }
    )
    dead = tmp_path / "dead"
    _write(spark, texts, uri, op_column="op", on_error="dead_letter", dead_letter_path=str(dead))
    lists = pa.table(
        {
            "id": [4, 5],
            "values": pa.array([[1.0, None, 0.0], None], pa.list_(pa.float32())),
            "op": ["delete"] * 2,
        }
    )
    _write(spark, lists, uri, op_column="op")
    assert sorted(qdrant_session_server.store.points("spark_delete_cells")) == [3, 6, 7]
    (letter,) = pq.read_table(dead).to_pylist()
    assert (letter["id"], letter["op"]) == (3, "upsert")  # the row's own id, an int64 (766e0ed)
    assert "column 'values': vector text is not a JSON list of numbers: 'n/a'" in letter["error"]
