"""df.write.format("vectordb") on the shared local[2] session, into the protocol test servers (own processes).

Every write is checked on the server side: the final state per (namespace, id), float32 bytes
compared exactly with the input, metadata and sparse values as they arrived.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.servers.fixtures import ServerHandle

from .conftest import float32_rows, vectors_table


def read_report(directory: Path) -> dict[str, Any]:
    """The one job report ``report_path`` holds."""
    files = sorted(directory.glob("job-*.json"))
    assert len(files) == 1, files
    return json.loads(files[0].read_text())


def test_grpc_write_lands_byte_for_byte(spark: Any, grpc_server: ServerHandle, tmp_path: Path) -> None:
    table = vectors_table(3000, 16)
    df = spark.createDataFrame(table).repartition(3)
    (
        df.write.format("vectordb")
        .option("uri", grpc_server.uri)
        .option("namespace", "docs")
        .option("batch_size", "128")
        .option("report_path", str(tmp_path))
        .mode("append")
        .save()
    )
    arrived = grpc_server.arrived()
    final = {vid: v.values_f32 for (ns, vid), v in arrived.final.items() if ns == "docs"}
    assert final == float32_rows(table)
    assert arrived.vector("v42", "docs").metadata == {"title": "title 42", "n": 42.0}
    assert all(0 < len(r.vectors) <= 128 for r in arrived.requests)
    assert arrived.count("ok") == len(arrived.requests)  # nothing sent twice, nothing refused
    assert sum(r.vector_count for r in arrived.requests) == 3000
    report = read_report(tmp_path)
    assert (report["written"], report["failed"], len(report["tasks"])) == (3000, 0, 3)


def test_rest_double_vectors_sparse_metadata_struct_and_namespace_column(
    spark: Any, rest_server: ServerHandle
) -> None:
    n, dim = 400, 12
    rng = np.random.default_rng(3)
    dense = rng.standard_normal((n, dim))  # float64: sent as float32
    table = pa.table(
        {
            "id": pa.array([f"d{i}" for i in range(n)]),
            "values": pa.array(list(dense), type=pa.list_(pa.float64())),
            "sparse": pa.array(
                [{"indices": [i % 7, 100 + i], "values": [0.5, -float(i)]} for i in range(n)],
                type=pa.struct([("indices", pa.list_(pa.int32())), ("values", pa.list_(pa.float32()))]),
            ),
            "tenant": pa.array(["a" if i % 3 else "b" for i in range(n)]),
            "metadata": pa.array(
                [{"lang": "en", "year": 2000 + i} for i in range(n)],
                type=pa.struct([("lang", pa.string()), ("year", pa.int64())]),
            ),
        }
    )
    (
        spark.createDataFrame(table)
        .write.format("vectordb")
        .option("uri", rest_server.uri)
        .option("sparse_column", "sparse")
        .option("namespace_column", "tenant")
        .mode("append")
        .save()
    )
    arrived = rest_server.arrived()
    assert len(arrived.final) == n
    for i in (0, 1, 2, 399):
        ns = "a" if i % 3 else "b"
        got = arrived.vector(f"d{i}", ns)
        assert got.values_f32 == dense[i].astype("<f4").tobytes()
        assert got.sparse_indices == [i % 7, 100 + i]
        assert got.sparse_values_f32 == np.array([0.5, -float(i)], dtype="<f4").tobytes()
        assert got.metadata == {"lang": "en", "year": 2000 + i}


def test_spark_ml_vectors_dense_and_sparse(spark: Any, grpc_server: ServerHandle) -> None:
    from pyspark.ml.linalg import Vectors

    rows = [
        ("m0", Vectors.dense([0.5, -1.25, 2.0, 0.0])),
        ("m1", Vectors.sparse(4, [1, 3], [3.5, -0.25])),
        ("m2", Vectors.dense([1.0, 2.0, 3.0, 4.0])),
        ("m3", Vectors.sparse(4, [2], [1.5])),  # (all zeros, an empty one is refused by Pinecone)
    ]
    df = spark.createDataFrame(rows, ["id", "embedding"]).coalesce(1)
    df.write.format("vectordb").option("uri", grpc_server.uri).option("vector_column", "embedding").mode(
        "append"
    ).save()
    arrived = grpc_server.arrived()
    expected = {
        "m0": [0.5, -1.25, 2.0, 0.0],
        "m1": [0.0, 3.5, 0.0, -0.25],
        "m2": [1.0, 2.0, 3.0, 4.0],
        "m3": [0.0, 0.0, 1.5, 0.0],
    }
    assert {k: v.values.tolist() for k, v in arrived.namespaces[""].items()} == expected


def test_ml_vector_dead_letters_of_dense_and_sparse_batches_are_one_schema(
    spark: Any, grpc_server: ServerHandle, tmp_path: Path
) -> None:
    from pyspark.ml.linalg import Vectors

    dense_only = [(f"d{i}", Vectors.dense([i + 0.1, 0.2, 0.3])) for i in range(3)]
    mixed = [("s0", Vectors.sparse(3, [1], [0.7])), ("s1", Vectors.dense([0.1, 0.2, 0.3]))]
    grpc_server.script(reject_ids=frozenset({"d1", "s0"}))
    dead = tmp_path / "dead"
    for rows in (dense_only, mixed):  # two jobs, one letter file each, into one folder
        spark.createDataFrame(rows, ["id", "embedding"]).coalesce(1).write.format("vectordb").option(
            "uri", grpc_server.uri
        ).option("vector_column", "embedding").option("on_error", "dead_letter").option(
            "dead_letter_path", str(dead)
        ).mode("append").save()
    files = sorted(dead.glob("*.parquet"))
    assert len(files) == 2
    (typ,) = {pq.read_schema(f).field("embedding").type for f in files}
    assert typ.value_type == pa.float64()
    letters = {r["id"]: r["embedding"] for r in spark.read.parquet(str(dead)).collect()}
    assert letters == {"d1": [1.1, 0.2, 0.3], "s0": [0.0, 0.7, 0.0]}  # the ML values, not float32's


def test_dead_letters_hold_exactly_the_failed_rows(
    spark: Any, grpc_server: ServerHandle, tmp_path: Path
) -> None:
    table = vectors_table(2000, 8)
    values = table.column("values").to_pylist()
    values[7] = [math.nan] * 8  # refused before sending: never reaches the server
    table = table.set_column(1, "values", pa.array(values, type=pa.list_(pa.float32())))
    rejected = {"v3", "v500", "v1999"}
    grpc_server.script(reject_ids=frozenset(rejected))
    dead = tmp_path / "dead"
    (
        spark.createDataFrame(table)
        .repartition(3)
        .write.format("vectordb")
        .option("uri", grpc_server.uri)
        .option("on_error", "dead_letter")
        .option("dead_letter_path", str(dead))
        .option("report_path", str(tmp_path / "reports"))
        .mode("append")
        .save()
    )
    letters = {r["id"]: r.asDict() for r in spark.read.parquet(str(dead)).collect()}
    assert set(letters) == rejected | {"v7"}
    assert spark.read.parquet(str(dead)).columns == [
        "id",
        "error",
        "retryable",
        "attempts",
        "values",
        "title",
        "n",
    ]
    assert letters["v7"]["error"] == "Invalid: column 'values': vector has NaN or infinity at index 0"
    assert letters["v7"]["attempts"] == 0
    assert letters["v500"]["error"].startswith("Rejected: ") and "'v500'" in letters["v500"]["error"]
    assert letters["v500"]["attempts"] >= 1 and letters["v500"]["retryable"] is False
    assert (letters["v500"]["title"], letters["v500"]["n"]) == ("title 500", 500)
    assert np.asarray(letters["v3"]["values"], dtype="<f4").tobytes() == float32_rows(table)["v3"]
    assert not list(dead.glob("_temporary*"))  # staged files were published or deleted
    assert set(grpc_server.arrived().ids()) == {f"v{i}" for i in range(2000)} - rejected - {"v7"}
    report = read_report(tmp_path / "reports")
    assert (report["written"], report["failed"]) == (1996, 4)
    assert len(report["dead_letter_files"]) == len(list(dead.glob("*.parquet")))


def test_throttling_ends_with_everything_written(
    spark: Any, grpc_server: ServerHandle, tmp_path: Path
) -> None:
    table = vectors_table(2000, 8)
    grpc_server.script(throttle_first=8, retry_after_s=0.05)
    (
        spark.createDataFrame(table)
        .write.format("vectordb")
        .option("uri", grpc_server.uri)
        .option("report_path", str(tmp_path))
        .mode("append")
        .save()
    )
    arrived = grpc_server.arrived()
    assert arrived.count("throttled") == 8
    assert {vid: v.values_f32 for (_, vid), v in arrived.final.items()} == float32_rows(table)
    report = read_report(tmp_path)
    assert (report["written"], report["failed"], report["throttled"]) == (2000, 0, 8)
    assert report["retries"] >= 8


def test_on_error_fail_fails_the_job_with_the_reasons(spark: Any, grpc_server: ServerHandle) -> None:
    grpc_server.script(reject_ids=frozenset({"v5"}))
    df = spark.createDataFrame(vectors_table(1000, 8))
    with pytest.raises(Exception, match="WriteFailed") as caught:
        df.write.format("vectordb").option("uri", grpc_server.uri).mode("append").save()
    message = str(caught.value)
    assert "1 of 1000 rows failed (first ids: v5)" in message
    assert "Set on_error='report' or 'dead_letter'" in message
    assert len(grpc_server.arrived().ids()) == 999  # the other rows landed, and stay


def test_on_error_report_succeeds_and_counts(spark: Any, grpc_server: ServerHandle, tmp_path: Path) -> None:
    grpc_server.script(reject_ids=frozenset({"v5", "v6"}))
    df = spark.createDataFrame(vectors_table(1000, 8))
    (
        df.write.format("vectordb")
        .option("uri", grpc_server.uri)
        .option("on_error", "report")
        .option("report_path", str(tmp_path))
        .mode("append")
        .save()
    )
    report = read_report(tmp_path)
    assert (report["written"], report["failed"]) == (998, 2)
    assert sorted(report["failed_ids_sample"]) == ["v5", "v6"]
    assert report["reasons"][0][0].startswith("Rejected: ")


def test_rows_of_another_length_than_the_index_are_refused_before_sending(
    spark: Any, grpc_server: ServerHandle, tmp_path: Path
) -> None:
    grpc_server.script(dimension=16)  # the driver learns it; the 8-d rows never reach the server
    df = spark.createDataFrame(vectors_table(300, 8)).repartition(2)
    (
        df.write.format("vectordb")
        .option("uri", grpc_server.uri)
        .option("on_error", "report")
        .option("report_path", str(tmp_path))
        .mode("append")
        .save()
    )
    report = read_report(tmp_path)
    assert (report["written"], report["failed"], report["requests"]) == (0, 300, 0)
    assert "vector has 8 dimensions; expected 16" in report["reasons"][0][0]
    assert grpc_server.arrived().requests == []


def test_one_client_per_worker_process_across_tasks(
    spark: Any, grpc_server: ServerHandle, tmp_path: Path
) -> None:
    df = spark.createDataFrame(vectors_table(1200, 8)).repartition(6)
    df.write.format("vectordb").option("uri", grpc_server.uri).option("report_path", str(tmp_path)).mode(
        "append"
    ).save()
    tasks = read_report(tmp_path)["tasks"]
    assert len(tasks) == 6
    assert len({t["pid"] for t in tasks}) < 6  # Python workers are reused...
    assert max(t["client_tasks"] for t in tasks) >= 2  # ...and so is the client in them
    assert len(grpc_server.arrived().ids()) == 1200


def test_job_wide_rate_budget_is_split_among_tasks(
    spark: Any, grpc_server: ServerHandle, tmp_path: Path
) -> None:
    df = spark.createDataFrame(vectors_table(4000, 4)).repartition(2)
    (
        df.write.format("vectordb")
        .option("uri", grpc_server.uri)
        .option("max_rows_per_second", "2000")
        .option("budget_tasks", "2")
        .option("report_path", str(tmp_path))
        .mode("append")
        .save()
    )
    requests = grpc_server.arrived().requests
    span = max(r.started_s for r in requests) - min(r.started_s for r in requests)
    # each task: 4 requests of 500 rows at 1000 rows/s after a 100-row burst: sent at 0.4, 0.9, 1.4, 1.9 s
    assert span >= 1.3
    assert sum(r.vector_count for r in requests) == 4000
    assert read_report(tmp_path)["written"] == 4000


def test_save_path_is_the_uri(spark: Any, grpc_server: ServerHandle) -> None:
    spark.createDataFrame(vectors_table(10, 4)).write.format("vectordb").mode("append").save(grpc_server.uri)
    assert len(grpc_server.arrived().ids()) == 10


@pytest.mark.parametrize("namespace", ["docs", None])
def test_overwrite_replaces_the_namespace_or_the_whole_index(
    spark: Any, grpc_server: ServerHandle, namespace: str | None
) -> None:
    from vectordb.connector import connect

    with connect(grpc_server.uri) as client:  # what an earlier load left: two namespaces
        assert client.upsert(vectors_table(30, 4), namespace="docs").ok
        assert client.upsert(vectors_table(7, 4), namespace="other").ok
    new = vectors_table(40, 4).slice(20)  # ids v20..v39: v0..v19 must be gone afterwards
    writer = spark.createDataFrame(new).write.format("vectordb").option("uri", grpc_server.uri)
    if namespace is not None:
        writer = writer.option("namespace", namespace)
    writer.option("allow_overwrite", "true").mode("overwrite").save()

    arrived = grpc_server.arrived()
    target = namespace or ""
    assert arrived.ids(target) == {f"v{i}" for i in range(20, 40)}
    if namespace is not None:
        assert arrived.ids("other") == {f"v{i}" for i in range(7)}  # other namespaces stay
        assert len(arrived.ids("docs")) == 20
    else:
        assert set(arrived.namespaces) == {""}  # the whole index was cleared first


def test_empty_dataframe_writes_nothing(spark: Any, grpc_server: ServerHandle) -> None:
    df = spark.createDataFrame(vectors_table(10, 4)).limit(0)
    df.write.format("vectordb").option("uri", grpc_server.uri).mode("append").save()
    assert grpc_server.arrived().requests == []


def test_dead_letter_directory_accumulates_jobs_without_clobbering(
    spark: Any, grpc_server: ServerHandle, tmp_path: Path
) -> None:
    grpc_server.script(reject_ids=frozenset({"v1"}))
    df = spark.createDataFrame(vectors_table(20, 4))
    for _ in range(2):
        df.write.format("vectordb").option("uri", grpc_server.uri).option("on_error", "dead_letter").option(
            "dead_letter_path", str(tmp_path)
        ).mode("append").save()
    ids = [r["id"] for r in spark.read.parquet(str(tmp_path)).collect()]
    assert ids == ["v1", "v1"]  # one per job: each job's files have its own names
    assert sorted(os.listdir(tmp_path)) == sorted(p.name for p in tmp_path.glob("job-*-part-*.parquet"))


def test_the_plans_spark_records_never_hold_the_key(spark: Any, grpc_server: ServerHandle) -> None:
    """What the Spark UI and the history server show of a write: its plan, call site and description."""
    key = "s3cr3t-plan-k3y"
    (
        spark.createDataFrame(vectors_table(10, 4))
        .write.format("vectordb")
        .option("uri", grpc_server.uri)
        .option("api_key", key)
        .mode("append")
        .save()
    )
    executions = spark._jsparkSession.sharedState().statusStore().executionsList()
    recorded = [executions.apply(i) for i in range(executions.size())]
    shown = [f"{e.description()} {e.details()} {e.physicalPlanDescription()}" for e in recorded]
    assert any("AppendData vectordb" in text for text in shown)
    assert not any(key in text for text in shown)
    assert len(grpc_server.arrived().ids()) == 10


def test_a_streaming_overwrite_is_refused_for_what_it_is_whatever_allow_overwrite_says(
    grpc_server: ServerHandle,
) -> None:
    """outputMode("complete") first pointed to allow_overwrite=true, which only led to this refusal."""
    from pyspark.sql.types import ArrayType, FloatType, StringType, StructField, StructType

    from vectordb.connector.errors import ConfigError
    from vectordb.spark.plan import plan_write

    schema = StructType([StructField("id", StringType()), StructField("values", ArrayType(FloatType()))])
    for extra in ({}, {"allow_overwrite": "true"}):
        with pytest.raises(ConfigError, match=r"not supported for streaming writes"):
            plan_write({"uri": grpc_server.uri, **extra}, schema, True, streaming=True)
