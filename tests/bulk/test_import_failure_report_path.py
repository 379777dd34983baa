"""An import job that fails in its commit still leaves its JSON report in ``report_path`` (README: each job leaves
its report; ``vectordb-load`` summarizes it after on_error=fail raised), as an upsert job does. The driver's steps
run in-process here (``plan_write`` -> ``write_task`` -> ``commit_job``, as ``VectorWriter`` calls them)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from tests.bulk.conftest import S3Store
from tests.servers.pinecone_control import ImportScript, PineconeImportServer
from vectordb.connector.errors import DeadlineExceeded, WriteFailed


def _batch() -> pa.RecordBatch:
    vectors = [[float(i + 1), 1.0, 2.0, 3.0] for i in range(10)]
    vectors[3][1] = float("nan")  # r3 is refused while staging
    return pa.record_batch(
        {"id": [f"r{i}" for i in range(10)], "values": pa.array(vectors, pa.list_(pa.float32()))}
    )


def _commit(raw: dict[str, str], batch: pa.RecordBatch) -> str:
    from pyspark.sql.types import ArrayType, FloatType, StringType, StructField, StructType

    from vectordb.spark.commit import commit_job
    from vectordb.spark.plan import plan_write
    from vectordb.spark.task import write_task

    schema = StructType([StructField("id", StringType()), StructField("values", ArrayType(FloatType()))])
    plan = plan_write(raw, schema, False)
    job = f"job-{plan.token}"
    commit_job(plan, [write_task(plan, iter([batch]), job)], job)
    return job


def _raw(index_host: PineconeImportServer, s3_store: S3Store, prefix: str, reports: Path) -> dict[str, str]:
    return {
        "uri": index_host.uri,
        "namespace": "docs",
        "report_path": str(reports),
        "write_mode": "import",
        "import_uri": s3_store.uri(prefix),
        "import_poll_s": "0.05",
    }


def test_rows_refused_while_staging_fail_the_job_and_its_report_is_written(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str, tmp_path: Path
) -> None:
    reports = tmp_path / "reports"
    with pytest.raises(WriteFailed, match="1 of 10 rows were refused while staging"):
        _commit({**_raw(index_host, s3_store, prefix, reports), "on_error": "fail"}, _batch())
    (file,) = reports.glob("job-*.json")
    report = json.loads(file.read_text())
    assert (report["written"], report["failed"], report["failed_ids_sample"]) == (0, 10, ["r3"])
    assert report["summary"].startswith("FAILED: 0/10 written, 10 failed"), report["summary"]
    assert index_host.imports.all() == []


def test_an_import_that_outlasts_import_timeout_s_fails_the_job_and_its_report_is_written(
    index_host: PineconeImportServer, s3_store: S3Store, prefix: str, tmp_path: Path
) -> None:
    index_host.imports.set_script(ImportScript(delay_s=1.0))
    reports = tmp_path / "reports"
    raw = {**_raw(index_host, s3_store, prefix, reports), "on_error": "report", "import_timeout_s": "0.2"}
    with pytest.raises(DeadlineExceeded, match="import_timeout_s"):
        _commit(raw, _batch())
    (file,) = reports.glob("job-*.json")
    report = json.loads(file.read_text())
    assert (report["written"], report["failed"]) == (0, 10), report
    assert {reason.split(":")[0]: n for reason, n in report["reasons"]} == {
        "DeadlineExceeded": 9,
        "Invalid": 1,
    }
    index_host.imports.join()
