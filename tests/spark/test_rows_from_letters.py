"""README: a fixed letter written again writes the same row. Spark's dead-letter files hold ``id``,
``error`` ("Type: reason"), ``retryable``, ``attempts``, then the row (its ``error`` column as
``row_error``); written again as they are, they stored the reason as metadata and the row's ``error`` as
``row_error``. ``vectordb.spark.rows_from_letters`` gives the rows back: written again, fixed, they store
what a direct write of the fixed rows stores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from tests.servers.fixtures import ServerHandle
from vectordb.connector import ConfigError
from vectordb.spark import rows_from_letters

VECTORS = pa.list_(pa.float32())


def rows(second: list[float]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "values": pa.array([[1.0, 2.0, 3.0], second, [7.0, 8.0, 9.0]], VECTORS),
            "title": ["one", "two", "three"],
            "error": ["e1", "e2", "e3"],
        }
    )


def write(df: Any, server: ServerHandle, namespace: str, **options: str) -> None:
    writer = df.write.format("vectordb").option("uri", server.uri).option("namespace", namespace)
    writer.option("dimension", "3").options(**options).mode("append").save()


def test_letter_files_fixed_and_fed_back_store_what_the_fixed_rows_store(
    spark: Any, rest_server: ServerHandle, tmp_path: Path
) -> None:
    dead = tmp_path / "dead"
    write(
        spark.createDataFrame(rows([1.0, 2.0])),
        rest_server,
        "letters",
        on_error="dead_letter",
        dead_letter_path=str(dead),
    )
    letters = spark.read.parquet(str(dead))
    assert letters.columns == ["id", "error", "retryable", "attempts", "values", "title", "row_error"]
    fixed = letters.withColumn("values", F.array(*(F.lit(x).cast("float") for x in (4.0, 5.0, 6.0))))
    direct = spark.createDataFrame(rows([4.0, 5.0, 6.0]))

    back = rows_from_letters(fixed)
    assert back.dtypes == direct.dtypes
    assert [r.asDict() for r in back.collect()] == [r.asDict() for r in direct.where("id = 2").collect()]
    write(back, rest_server, "letters")
    write(direct, rest_server, "direct")
    write(fixed, rest_server, "as_is")

    stored = rest_server.arrived().namespaces
    assert stored["letters"] == stored["direct"]
    assert stored["direct"]["2"].metadata == {"title": "two", "error": "e2"}
    # the letter as it is stores its reason, and the row's own 'error' under another name
    assert set(stored["as_is"]["2"].metadata or {}) == {
        "error",
        "retryable",
        "attempts",
        "title",
        "row_error",
    }


def test_names_come_back_by_position_whatever_they_hold(spark: Any) -> None:
    names = ["id", "error", "retryable", "attempts", "row_error", "a.b`c", "row_row_id"]
    letters = spark.createDataFrame([("7", "Invalid: no", False, 0, "e", 1, "r")], names)
    assert rows_from_letters(letters).columns == ["id", "error", "a.b`c", "row_id"]
    assert rows_from_letters(letters, id_column=None).columns == ["error", "a.b`c", "row_id"]
    with pytest.raises(ConfigError, match=r"'id' and 'row_id'.*option id_column"):
        rows_from_letters(letters.withColumnRenamed("row_row_id", "row_id"))  # another id column's letters
