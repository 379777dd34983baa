"""Through Spark into a real database: Milvus Lite, the embedded default, read back with pymilvus."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from vectordb.spark.load import main

from .conftest import float32_rows, job_ids, vectors_table

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer


def stored(server: LiteServer, collection: str, ids: list[str]) -> dict[str, Any]:
    server.client.load_collection(collection)
    rows = server.client.get(collection, ids=ids, output_fields=["*"])
    return {r["id"]: r for r in rows}


def test_write_creates_the_collection_and_lands_exactly(
    spark: Any, milvus_lite: LiteServer, collection_name: str
) -> None:
    table = vectors_table(1000, 8)
    (
        spark.createDataFrame(table)
        .repartition(2)
        .write.format("vectordb")
        .option("uri", milvus_lite.uri)
        .option("collection", collection_name)
        .option("create", "true")
        .option("dimension", "8")
        .mode("append")
        .save()
    )
    assert milvus_lite.client.get_collection_stats(collection_name)["row_count"] == 1000
    expected = float32_rows(table)
    got = stored(milvus_lite, collection_name, ["v0", "v499", "v999"])
    for vid in ("v0", "v499", "v999"):
        assert np.asarray(got[vid]["vector"], dtype="<f4").tobytes() == expected[vid]
    assert (got["v499"]["title"], got["v499"]["n"]) == ("title 499", 499)


def test_overwrite_replaces_the_collection_contents(
    spark: Any, milvus_lite: LiteServer, collection_name: str
) -> None:
    def save(table: Any, mode: str) -> None:
        (
            spark.createDataFrame(table)
            .write.format("vectordb")
            .option("uri", milvus_lite.uri)
            .option("collection", collection_name)
            .option("create", "true")
            .option("dimension", "8")
            .option("allow_overwrite", "true")
            .mode(mode)
            .save()
        )

    save(vectors_table(50, 8), "append")
    save(vectors_table(20, 8, seed=9, start=100), "overwrite")
    milvus_lite.client.load_collection(collection_name)
    ids = [
        r["id"] for r in milvus_lite.client.query(collection_name, filter='id != ""', output_fields=["id"])
    ]
    assert sorted(ids) == sorted(f"v{i}" for i in range(100, 120))


def test_dimension_mismatch_fails_before_any_job(
    spark: Any, milvus_lite: LiteServer, collection_name: str
) -> None:
    milvus_lite.client.create_collection(collection_name, dimension=8, id_type="string", max_length=64)
    df = spark.createDataFrame(vectors_table(10, 16))
    before = job_ids(spark)
    with pytest.raises(Exception, match=r"dimension mismatch: collection .* has dim 8, data has 16"):
        df.write.format("vectordb").option("uri", milvus_lite.uri).option(
            "collection", collection_name
        ).option("dimension", "16").mode("append").save()
    assert job_ids(spark) == before


def test_ingest_job_into_the_embedded_default(
    spark: Any, milvus_lite: LiteServer, collection_name: str
) -> None:
    assert (
        main(["--sample", "600", "--dim", "12", "--uri", milvus_lite.uri, "--collection", collection_name])
        == 0
    )
    assert milvus_lite.client.get_collection_stats(collection_name)["row_count"] == 600
    row = stored(milvus_lite, collection_name, ["5"])["5"]
    assert len(row["vector"]) == 12 and row["title"] == "sample 5"


def write_short_row_case(spark: Any, uri: str, collection: str, dead: Any, **options: str) -> None:
    """8 good 4-d rows in one partition and, alone in the other (written first as often as not), one
    2-d row; no shuffle, so the write is the only job."""
    good = [(f"g{i}", [float(i)] * 4) for i in range(8)]
    rdd = spark.sparkContext.parallelize([good, [("short", [9.0, 9.0])]], 2).flatMap(lambda rows: rows)
    writer = (
        spark.createDataFrame(rdd, "id string, values array<float>")
        .write.format("vectordb")
        .option("uri", uri)
        .option("collection", collection)
        .option("create", "true")
        .option("on_error", "dead_letter")
        .option("dead_letter_path", str(dead))
    )
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.mode("append").save()


def test_create_without_a_dimension_is_refused_before_any_job_when_rows_would_decide_it(
    spark: Any, milvus_lite: LiteServer, collection_name: str, tmp_path: Any
) -> None:
    """One partition's bad row must not decide a new collection's dimension for the others."""
    before = job_ids(spark)
    with pytest.raises(Exception, match=r"option dimension: .* create=true would let the rows"):
        write_short_row_case(spark, milvus_lite.uri, collection_name, tmp_path / "dead")
    assert job_ids(spark) == before
    assert not milvus_lite.client.has_collection(collection_name)


@pytest.mark.parametrize("how", ["stated", "existing"])
def test_the_short_row_is_the_dead_letter_whichever_partition_is_written_first(
    spark: Any, milvus_lite: LiteServer, collection_name: str, tmp_path: Any, how: str
) -> None:
    """The dimension comes from the option, or from the collection the driver finds; never from a task."""
    options = {"dimension": "4"}
    if how == "existing":
        milvus_lite.client.create_collection(collection_name, dimension=4, id_type="string", max_length=64)
        options = {}
    dead = tmp_path / "dead"
    write_short_row_case(spark, milvus_lite.uri, collection_name, dead, **options)
    letters = spark.read.parquet(str(dead)).collect()
    assert [(r["id"], r["error"]) for r in letters] == [
        ("short", "Invalid: vector has 2 dimensions; expected 4")
    ]
    milvus_lite.client.load_collection(collection_name)
    stored = milvus_lite.client.query(collection_name, filter='id != ""', output_fields=["id"])
    assert sorted(r["id"] for r in stored) == [f"g{i}" for i in range(8)]


def test_option_sparse_column_not_the_first_batch_gives_the_collection_its_sparse_field(
    spark: Any, milvus_lite: LiteServer, collection_name: str
) -> None:
    """Batches of two rows, the first of null sparse values: the collection still gets its sparse field,
    the null rows fail alone saying so, and the sparse rows land."""
    from pyspark.sql import types as T

    sparse = T.StructType(
        [
            T.StructField("indices", T.ArrayType(T.IntegerType())),
            T.StructField("values", T.ArrayType(T.FloatType())),
        ]
    )
    schema = T.StructType(
        [
            T.StructField("id", T.StringType()),
            T.StructField("values", T.ArrayType(T.FloatType())),
            T.StructField("sp", sparse),
        ]
    )
    rows = [("n1", [1.0, 2.0], None), ("n2", [1.0, 2.0], None), ("s3", [1.0, 2.0], ([1], [0.5]))]
    rows.append(("s4", [1.0, 2.0], ([2], [0.75])))
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "2")
    try:
        with pytest.raises(Exception, match=r"no sparse vector \('sp' is null or empty\)"):
            (
                spark.createDataFrame(rows, schema)
                .coalesce(1)
                .write.format("vectordb")
                .option("uri", milvus_lite.uri)
                .option("collection", collection_name)
                .option("create", "true")
                .option("dimension", "2")
                .option("sparse_column", "sp")
                .mode("append")
                .save()
            )
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    got = stored(milvus_lite, collection_name, ["n1", "n2", "s3", "s4"])
    assert {i: {int(k): float(v) for k, v in r["sparse"].items()} for i, r in got.items()} == {
        "s3": {1: 0.5},
        "s4": {2: 0.75},
    }
