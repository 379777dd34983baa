"""Through Spark into a real database: Milvus Lite, the embedded default, read back with pymilvus."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from jobs.ingest import main

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


def test_a_partitions_first_rows_of_another_length_are_dead_letters_not_the_dimension(
    spark: Any, milvus_lite: LiteServer, collection_name: str, tmp_path: Any
) -> None:
    """create=true, no dimension given: a task agrees on its rows' most common length, never on its first row's."""
    import pyarrow as pa

    table = vectors_table(2000, 32)
    values = table.column("values").to_pylist()
    short = {f"v{i}" for i in range(1000, 1010)}  # the first rows of the second partition
    for i in range(1000, 1010):
        values[i] = values[i][:31]
    table = table.set_column(1, "values", pa.array(values, type=pa.list_(pa.float32())))
    dead = tmp_path / "dead"
    (
        spark.createDataFrame(table)
        .coalesce(2)  # rows 0-999 and 1000-1999, in order
        .write.format("vectordb")
        .option("uri", milvus_lite.uri)
        .option("collection", collection_name)
        .option("create", "true")
        .option("on_error", "dead_letter")
        .option("dead_letter_path", str(dead))
        .mode("append")
        .save()
    )
    letters = spark.read.parquet(str(dead)).collect()
    assert {r["id"] for r in letters} == short
    assert {r["error"] for r in letters} == {"Invalid: vector has 31 dimensions; expected 32"}
    assert milvus_lite.client.get_collection_stats(collection_name)["row_count"] == 1990
