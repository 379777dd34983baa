"""``df.write.format("vectordb")`` with ``write_mode=import`` on the shared local Spark session.

The executors (other processes) write Parquet to the S3-compatible store over HTTP; the driver
checks the namespace before any task, then starts the import on the index host and waits for it.
Every vector is read back from the index exactly; refused rows are dead letters with their reasons.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.bulk.conftest import STORE_SECRET, S3Store
from tests.servers.pinecone_control import PineconeImportServer
from vectordb.connector import ConfigError, connect

DIM = 12
API_KEY = "pc-spark-key-5e1"


def table(n: int) -> pa.Table:
    rng = np.random.default_rng(7)
    matrix = rng.standard_normal((n, DIM), dtype=np.float32)
    vectors = [list(map(float, row)) for row in matrix]
    vectors[17][3] = float("nan")  # refused: NaN
    vectors[250] = vectors[250][:5]  # refused: another dimension
    return pa.table(
        {
            "id": [f"s{i}" for i in range(n)],
            "values": pa.array(vectors, type=pa.list_(pa.float32())),
            "sparse": pa.array(
                [
                    {"indices": [i, 1000 + i], "values": [1.5, -0.25]} if i % 4 == 0 else None
                    for i in range(n)
                ],
                type=pa.struct([("indices", pa.list_(pa.int32())), ("values", pa.list_(pa.float32()))]),
            ),
            "title": [f"title {i}" for i in range(n)],
        }
    )


def options(index_host: PineconeImportServer, s3_store: S3Store, prefix: str, **more: str) -> dict[str, str]:
    return {
        "uri": index_host.uri,
        "api_key": API_KEY,
        "namespace": "docs",
        "sparse_column": "sparse",
        "write_mode": "import",
        "import_uri": s3_store.uri(prefix),
        "import_poll_s": "0.05",
        **more,
    }


def test_a_spark_import_lands_every_vector_and_dead_letters_the_refused_rows(
    spark: Any, index_host: PineconeImportServer, s3_store: S3Store, prefix: str, tmp_path: Path
) -> None:
    data = table(400)
    dead, reports = tmp_path / "dead", tmp_path / "reports"
    df = spark.createDataFrame(data.to_pandas()).repartition(2)
    writer = df.write.format("vectordb").mode("append")
    for key, value in options(
        index_host,
        s3_store,
        prefix,
        on_error="dead_letter",
        dead_letter_path=str(dead),
        report_path=str(reports),
    ).items():
        writer = writer.option(key, value)
    writer.save()

    stored = index_host.state.snapshot().namespaces["docs"]
    good = [r for r in data.to_pylist() if r["id"] not in ("s17", "s250")]
    assert sorted(stored) == sorted(r["id"] for r in good)
    for row in good:
        got = stored[row["id"]]
        assert got.values_f32 == np.asarray(row["values"], dtype="<f4").tobytes(), row["id"]
        assert got.metadata == {"title": row["title"]}
        expected_sparse = None if row["sparse"] is None else row["sparse"]["indices"]
        assert got.sparse_indices == expected_sparse
    # the layout Pinecone reads: one file per task, in the job's namespace folder, nothing staged left
    files = s3_store.files(prefix)
    assert len(files) == 2 and all(
        f.split("/")[1:] in (["docs", "part-00000.parquet"], ["docs", "part-00001.parquet"]) for f in files
    ), files
    (job,) = index_host.imports.all()
    assert (job.status, job.records_imported, job.error_mode) == ("Completed", 398, "continue")
    # dead letters: exactly the refused rows, with their reasons
    letters = pq.read_table(dead).to_pylist()
    reasons = {r["id"]: r["error"] for r in letters}
    assert set(reasons) == {"s17", "s250"}
    assert "NaN" in reasons["s17"] and "5 dimensions; expected 12" in reasons["s250"]
    # the job's report: the same summary as an upsert write
    (report_file,) = reports.glob("job-*.json")
    report = json.loads(report_file.read_text())
    assert (report["written"], report["failed"], len(report["tasks"])) == (398, 2, 2)
    assert report["summary"].startswith("PARTIAL: 398/400 written, 2 failed")
    assert STORE_SECRET not in report_file.read_text() and API_KEY not in report_file.read_text()


def plan(raw: dict[str, str], *, streaming: bool = False, overwrite: bool = False) -> Any:
    from pyspark.sql.types import ArrayType, FloatType, StringType, StructField, StructType

    from vectordb.spark.plan import plan_write

    schema = StructType(
        [
            StructField("id", StringType()),
            StructField("values", ArrayType(FloatType())),
            StructField(
                "sparse",
                StructType(
                    [
                        StructField("indices", ArrayType(FloatType())),
                        StructField("values", ArrayType(FloatType())),
                    ]
                ),
            ),
        ]
    )
    return plan_write(raw, schema, overwrite, streaming=streaming)


def test_streaming_and_overwrite_refuse_import_on_the_driver(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    raw = options(index_host, s3_store, prefix)
    with pytest.raises(ConfigError, match="write_mode=import is for bounded input: a stream"):
        plan(raw, streaming=True)
    with pytest.raises(ConfigError, match=r'mode\("overwrite"\) is not supported'):
        plan({**raw, "allow_overwrite": "true"}, overwrite=True)
    assert plan(raw).options.write_mode == "import"  # the same options plan as a batch append


def test_an_existing_namespace_fails_the_job_before_any_task(
    spark: Any, index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    with connect(index_host.uri, api_key=API_KEY, namespace="docs") as upserts:
        upserts.upsert([{"id": "old", "values": [0.25] * DIM}])
    df = spark.createDataFrame(table(400).to_pandas())
    writer = df.write.format("vectordb").mode("append")
    for key, value in options(index_host, s3_store, prefix).items():
        writer = writer.option(key, value)
    with pytest.raises(Exception, match=r"namespace 'docs' \(1 vectors\) already exists") as info:
        writer.save()
    assert API_KEY not in str(info.value) and STORE_SECRET not in str(info.value)
    assert s3_store.files(prefix) == []  # no task ran
    assert index_host.imports.all() == []


def save(df: Any, raw: dict[str, str]) -> None:
    writer = df.write.format("vectordb").mode("append")
    for key, value in raw.items():
        writer = writer.option(key, value)
    writer.save()


def test_an_import_uri_the_driver_cannot_see_fails_the_job_and_imports_nothing(
    spark: Any, index_host: PineconeImportServer, s3_store: S3Store, prefix: str, tmp_path: Path
) -> None:
    """import_uri on each node's own disk: pyarrow's ``mock://`` filesystem lives in each process's memory, so
    every task stages its files where the driver's commit cannot see them, as on a cluster whose executors
    write to their own disks. The job must fail naming import_uri, not report every row written."""
    reports = tmp_path / "reports"
    df = spark.createDataFrame(table(400).to_pandas()).repartition(2)
    raw = options(index_host, s3_store, prefix, on_error="report", report_path=str(reports))
    with pytest.raises(Exception) as info:
        # import_source_uri: Pinecone cannot read mock://, which the driver refuses without it
        source = f"s3://{s3_store.bucket}/{prefix}"
        save(df, {**raw, "import_uri": f"mock://{tmp_path}/imports", "import_source_uri": source})
    message = str(info.value)
    assert (
        "option import_uri: the driver cannot see the files the tasks staged under import_uri" in message
        and "must be storage shared by the driver and the executors" in message
        and "no row counts as written" in message
    ), message
    assert index_host.imports.all() == []
    assert index_host.state.snapshot().namespaces == {}
    assert list(reports.glob("job-*.json")) == []  # no report says a row was written


def test_a_row_refused_while_staging_fails_the_job_before_the_import_and_the_fixed_job_imports(
    spark: Any, index_host: PineconeImportServer, s3_store: S3Store, prefix: str
) -> None:
    """on_error=fail: the two refused rows fail the job whatever happens next, so no import may start (it
    would fill the new namespace, and the fixed job's import would then be refused)."""
    data = table(400)
    df = spark.createDataFrame(data.to_pandas()).repartition(2)
    with pytest.raises(Exception) as info:
        save(df, options(index_host, s3_store, prefix))
    message = str(info.value)
    assert "2 of 400 rows were refused while staging" in message and "Nothing was imported" in message, (
        message
    )
    assert "did land" not in message and "upserts the same ids" not in message
    assert index_host.imports.all() == []
    assert index_host.state.snapshot().namespaces == {}
    assert s3_store.files(prefix) == []  # the job's abort dropped the staged files
    save(df.where("id not in ('s17', 's250')"), options(index_host, s3_store, prefix))
    (job,) = index_host.imports.all()
    assert (job.status, job.records_imported) == ("Completed", 398)
    assert len(index_host.state.snapshot().namespaces["docs"]) == 398


def test_an_aborted_import_job_does_not_promise_that_running_it_again_upserts(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A rerun of an import is another import, refused once a namespace exists: not the upsert of the same
    ids that a rerun of upserts is."""
    from vectordb.connector.report import WriteReport
    from vectordb.spark.commit import abort_job
    from vectordb.spark.task import TaskReport

    with caplog.at_level(logging.INFO, logger="vectordb.spark"):
        abort_job(
            plan(options(index_host, s3_store, prefix)), [TaskReport(report=WriteReport(written=398))], "j"
        )
    assert (
        "1 tasks had finished and staged 398 rows (the staged files the driver can reach are deleted)"
        in caplog.text
    )
    assert "what it imported stays and its namespace now exists" in caplog.text
    assert "otherwise nothing was imported and the job can run again" in caplog.text
    assert "upserts the same ids" not in caplog.text and "stay written" not in caplog.text
