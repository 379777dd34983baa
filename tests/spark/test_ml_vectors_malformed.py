"""Spark ML vectors no one checked (``VectorUDT`` read from Parquet with a user schema) into Milvus Lite.

PySpark checks a ``SparseVector`` it makes, not one a file holds: a sparse row whose index is its size
scattered its value into the next row's vector, one past the last row's end killed the task. Each such
row must fail alone, its reason naming the column, and every other row land as it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer

ROWS = """select * from values
  ('r0', named_struct('type', cast(1 as tinyint), 'size', cast(null as int), 'indices', cast(null as array<int>),
                      'values', array(1d, 2d, 3d))),
  ('r1', named_struct('type', cast(0 as tinyint), 'size', 3, 'indices', array(3), 'values', array(9d))),
  ('r2', named_struct('type', cast(0 as tinyint), 'size', 3, 'indices', array(0, 2), 'values', array(5d, 6d))),
  ('r3', named_struct('type', cast(0 as tinyint), 'size', 3, 'indices', array(-1), 'values', array(7d))),
  ('r4', named_struct('type', cast(0 as tinyint), 'size', 3, 'indices', array(7), 'values', array(8d)))
  as t(id, values)"""


def unchecked_ml_vectors(spark: Any, tmp_path: Path) -> Any:
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql import types as T

    path = str(tmp_path / "ml.parquet")
    spark.sql(ROWS).coalesce(1).write.parquet(path)
    schema = T.StructType([T.StructField("id", T.StringType()), T.StructField("values", VectorUDT())])
    return spark.read.schema(schema).parquet(path)


@pytest.mark.parametrize("on_error", ["fail", "dead_letter"])
def test_malformed_sparse_ml_vectors_fail_alone_and_the_others_land_as_they_are(
    spark: Any, milvus_lite: LiteServer, collection_name: str, tmp_path: Path, on_error: str
) -> None:
    dead = tmp_path / "dead"
    writer = (
        unchecked_ml_vectors(spark, tmp_path)
        .write.format("vectordb")
        .option("uri", milvus_lite.uri)
        .option("collection", collection_name)
        .option("create", "true")
        .option("dimension", "3")
        .option("on_error", on_error)
        .mode("append")
    )
    if on_error == "fail":
        with pytest.raises(Exception, match=r"column 'values': sparse ML vector index 3 is outside 0\.\.2"):
            writer.save()
    else:
        writer.option("dead_letter_path", str(dead)).save()
        letters = {r["id"]: r for r in pq.read_table(dead).to_pylist()}
        assert sorted(letters) == ["r1", "r3", "r4"]
        assert letters["r4"]["error"] == "Invalid: column 'values': sparse ML vector index 7 is outside 0..2"
        assert letters["r3"]["values"] is None  # no vector to keep: it was none
    milvus_lite.client.load_collection(collection_name)
    got = milvus_lite.client.get(
        collection_name, ids=["r0", "r1", "r2", "r3", "r4"], output_fields=["vector"]
    )
    assert {r["id"]: [round(float(x), 3) for x in r["vector"]] for r in got} == {
        "r0": [1.0, 2.0, 3.0],
        "r2": [5.0, 0.0, 6.0],
    }


def test_a_failed_rows_null_struct_with_not_null_fields_is_a_dead_letter(
    spark: Any, milvus_lite: LiteServer, collection_name: str, tmp_path: Path
) -> None:
    df = spark.sql(
        "select id, values, case when id = 'a' then named_struct('x', 1) end as st from values "
        "('a', array(1.0f, 2.0f)), ('b', array(1.0f)) as t(id, values)"
    ).coalesce(1)
    dead = tmp_path / "dead"
    (
        df.write.format("vectordb")
        .option("uri", milvus_lite.uri)
        .option("collection", collection_name)
        .option("create", "true")
        .option("dimension", "2")
        .option("on_error", "dead_letter")
        .option("dead_letter_path", str(dead))
        .mode("append")
        .save()
    )
    (letter,) = pq.read_table(dead).to_pylist()
    assert (letter["id"], letter["st"]) == ("b", None)
