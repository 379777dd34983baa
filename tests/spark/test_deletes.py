"""Deletes through ``df.write.format("vectordb")`` (option ``op_column``) into Milvus Lite, read back with
pymilvus: one DataFrame of inserts, updates and deletes, its rows spread over two tasks; an op the
connector does not know is a dead letter with its op column; an op column of another type fails on
the driver before any job."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .conftest import job_ids, vectors_table

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer

DIM = 8


def save(df: Any, uri: str, collection: str, **options: str) -> None:
    writer = df.write.format("vectordb").option("uri", uri).option("collection", collection)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.mode("append").save()


def stored(server: LiteServer, collection: str) -> dict[str, Any]:
    server.client.load_collection(collection)
    rows = server.client.query(collection, filter='id != ""', output_fields=["*"], limit=1000)
    return {r["id"]: r for r in rows}


def test_one_write_inserts_updates_and_deletes(
    spark: Any, milvus_lite: LiteServer, collection_name: str, tmp_path: Path
) -> None:
    save(
        spark.createDataFrame(vectors_table(40, DIM)),
        milvus_lite.uri,
        collection_name,
        create="true",
        dimension=str(DIM),
    )
    rng = np.random.default_rng(3)
    changed = rng.standard_normal((10, DIM), dtype=np.float32)
    ids, values, ops = [], [], []
    for i in range(10):  # v0..v9 deleted: no vector, or one that is not read
        ids.append(f"v{i}")
        values.append(None if i % 2 else [float("nan")] * DIM)
        ops.append("DELETE")
    for i in range(10):  # v10..v19 updated
        ids.append(f"v{10 + i}")
        values.append(changed[i].tolist())
        ops.append("update_postimage" if i % 2 else "update")
    for i in range(3):  # new rows
        ids.append(f"n{i}")
        values.append([float(i) + 0.5] * DIM)  # none all zeros (Pinecone refuses them)
        ops.append("insert")
    ids += ["v20", "gone"]
    values += [[1.0] * DIM, None]
    ops += ["merge", "delete"]  # an op the connector does not know; a delete of an id never written
    table = pa.table(
        {
            "id": ids,
            "values": pa.array(values, type=pa.list_(pa.float32())),
            "op": ops,
            "title": [f"new {i}" for i in ids],
        }
    )
    dead = tmp_path / "dead"
    save(
        spark.createDataFrame(table).repartition(2),
        milvus_lite.uri,
        collection_name,
        op_column="op",
        on_error="dead_letter",
        dead_letter_path=str(dead),
    )

    rows = stored(milvus_lite, collection_name)
    assert sorted(rows) == sorted([f"v{i}" for i in range(10, 40)] + ["n0", "n1", "n2"])
    for i in range(10):
        row = rows[f"v{10 + i}"]
        assert np.asarray(row["vector"], dtype="<f4").tobytes() == changed[i].tobytes()
        assert row["title"] == f"new v{10 + i}" and "op" not in row  # the op column is no metadata
    assert rows["v20"]["title"] == "title 20"  # the unknown op changed nothing
    (letter,) = pq.read_table(dead).to_pylist()
    assert (letter["id"], letter["op"]) == ("v20", "merge")
    assert "Invalid: op 'merge' (column 'op')" in letter["error"]


def test_an_op_column_of_another_type_fails_before_any_job(
    spark: Any, milvus_lite: LiteServer, collection_name: str
) -> None:
    table = vectors_table(4, DIM).append_column("op", pa.array([0, 1, 0, 1], type=pa.int64()))
    df = spark.createDataFrame(table)
    before = job_ids(spark)
    with pytest.raises(Exception, match=r"option op_column: column 'op' has type int64; expected strings"):
        save(df, milvus_lite.uri, collection_name, create="true", dimension=str(DIM), op_column="op")
    assert job_ids(spark) == before
    assert not milvus_lite.client.has_collection(collection_name)
