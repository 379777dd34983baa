"""Named dense vectors through Spark into Milvus Lite and PostgreSQL: read back per name with pymilvus and
psycopg; an existing target lacking a name, or with another dimension, fails on the driver before any job."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pytest

from tests.integration.pg_server import PgServer, pg_server_fixture, pg_table_fixture  # noqa: F401

from .conftest import job_ids

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer

DIMS = {"title": 8, "body": 5}
COLUMNS = "title:title_vec,body:body_vec"


def named_table(n: int, seed: int = 11) -> tuple[pa.Table, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    vectors = {name: rng.standard_normal((n, dim), dtype=np.float32) for name, dim in DIMS.items()}
    columns: dict[str, Any] = {"id": [f"s{i}" for i in range(n)]}
    for name, matrix in vectors.items():
        offsets = pa.array(np.arange(0, n * matrix.shape[1] + 1, matrix.shape[1], dtype=np.int32))
        columns[f"{name}_vec"] = pa.ListArray.from_arrays(offsets, pa.array(matrix.reshape(-1)))
    columns["n"] = pa.array(np.arange(n, dtype=np.int64))
    return pa.table(columns), vectors


def save(spark: Any, table: pa.Table | Any, uri: str, **options: str) -> None:
    frame = spark.createDataFrame(table).repartition(2) if isinstance(table, pa.Table) else table
    writer = frame.write.format("vectordb").option("uri", uri)
    for key, value in {"vector_columns": COLUMNS, **options}.items():
        writer = writer.option(key, value)
    writer.mode("append").save()


def test_spark_writes_each_name_to_its_milvus_field(
    spark: Any, milvus_lite: LiteServer, collection_name: str
) -> None:
    table, vectors = named_table(400)
    options = {"collection": collection_name, "create": "true", "vector_dimensions": "title:8,body:5"}
    save(spark, table, milvus_lite.uri, **options)
    milvus_lite.client.load_collection(collection_name)
    rows = milvus_lite.client.query(collection_name, filter='id != ""', output_fields=["*"], limit=1000)
    assert len(rows) == 400
    for row in rows:
        i = int(row["id"][1:])
        for name in DIMS:
            assert np.asarray(row[name], np.float32).tobytes() == vectors[name][i].tobytes(), (
                row["id"],
                name,
            )
        assert row["n"] == i


def test_spark_writes_each_name_to_its_postgres_column(
    spark: Any, pg_server: PgServer, pg_table: str
) -> None:
    table, vectors = named_table(400, seed=12)
    save(spark, table, pg_server.uri(pg_table), create="true", vector_dimensions="title:8,body:5")
    with pg_server.connect() as conn:
        rows = conn.execute(f'SELECT id, title::real[], body::real[], metadata FROM "{pg_table}"').fetchall()
    assert len(rows) == 400
    for row_id, title, body, metadata in rows:
        i = int(row_id[1:])
        assert np.asarray(title, np.float32).tobytes() == vectors["title"][i].tobytes(), row_id
        assert np.asarray(body, np.float32).tobytes() == vectors["body"][i].tobytes(), row_id
        assert metadata == {"n": i}


def test_a_milvus_collection_without_a_name_fails_on_the_driver(
    spark: Any, milvus_lite: LiteServer, collection_name: str
) -> None:
    milvus_lite.client.create_collection(
        collection_name, dimension=8, vector_field_name="title", id_type="string", max_length=64
    )
    frame = spark.createDataFrame(named_table(10)[0])
    before = job_ids(spark)
    with pytest.raises(
        Exception, match=r"option vector_columns: name 'body': milvus collection .* has no field"
    ):
        save(spark, frame, milvus_lite.uri, collection=collection_name)
    assert job_ids(spark) == before


def test_a_postgres_column_of_another_dimension_fails_on_the_driver(
    spark: Any, pg_server: PgServer, pg_table: str
) -> None:
    with pg_server.connect() as conn:
        conn.execute(
            f'CREATE TABLE "{pg_table}" (id text PRIMARY KEY, title vector(8), body vector(6), metadata jsonb)'
        )
    frame = spark.createDataFrame(named_table(10)[0])
    before = job_ids(spark)
    with pytest.raises(
        Exception,
        match=r"option vector_columns: name 'body': table \w+ column 'body' is vector\(6\), the write's",
    ):
        save(spark, frame, pg_server.uri(pg_table), vector_dimensions="title:8,body:5")
    assert job_ids(spark) == before
