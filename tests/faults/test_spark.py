"""A Spark job whose database is killed and restarted mid-job: the job report, the dead letters and the
database account for every row.

Local Spark (tests/spark/conftest.py's session), ``on_error=dead_letter``, the default retries, and
the Pinecone gRPC test server in its own process with its journal, SIGKILLed once a quarter of the
rows landed and started again on the same port half a second later. The default retries ride out
the restart (a host that answered before and now refuses is waited for longer: ``Backoff``), so no
row is a dead letter; had one been, it would carry its reason. Every row is stored exactly once,
with its exact vector and metadata; the report's counts are the dead letters' and the database's.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.faults.conftest import count_pinecone, read_pinecone
from tests.faults.tools import KillMidWrite, Outcome, assert_account, expected_rows, rows
from tests.servers.fixtures import RestartableServer
from tests.spark.conftest import spark  # noqa: F401 - the session's SparkSession, requested by name
from vectordb.connector.report import BatchFailure, WriteReport

ROWS = 4000

pytestmark = pytest.mark.timeout(240)


def test_a_spark_job_through_a_database_killed_and_restarted(
    spark: Any,  # noqa: F811 - the fixture imported above
    pinecone_grpc_process: RestartableServer,
    tmp_path: Path,
    fault_log: Any,
) -> None:
    server = pinecone_grpc_process
    namespace = f"spark-{uuid.uuid4().hex[:8]}"
    table = rows(ROWS, seed=11)
    frame = spark.createDataFrame(table)
    fault = KillMidWrite(
        count=lambda: count_pinecone(server, namespace),
        at_rows=ROWS // 4,
        kill=server.kill,
        restart=server.start,
        pause_s=0.5,
        give_up_s=120,
    )
    dead, reports = tmp_path / "dead", tmp_path / "reports"
    with fault:
        (
            frame.write.format("vectordb")
            .option("uri", server.handle.uri)
            .option("namespace", namespace)
            .option("batch_size", "25")
            .option("max_concurrency", "2")
            .option("max_rows_per_second", "1500")  # the job lasts a few seconds: the kill lands in it
            .option("budget_tasks", "2")
            .option("on_error", "dead_letter")
            .option("dead_letter_path", str(dead))
            .option("report_path", str(reports))
            .mode("append")
            .save()
        )
    fault.wait()
    (report_file,) = reports.glob("job-*.json")
    job = json.loads(report_file.read_text())
    written_letters = any(dead.glob("**/*.parquet"))
    letters = [r.asDict() for r in spark.read.parquet(str(dead)).collect()] if written_letters else []
    failures = [
        BatchFailure(ids=(r["id"],), error=r["error"], error_type=r["error"].split(":", 1)[0], retryable=True)
        for r in letters
    ]
    report = WriteReport(written=job["written"], failed=job["failed"], failures=failures)
    numbers = assert_account(
        expected_rows(table), Outcome(report, None, 0.0, 0.0), read_pinecone(server, namespace)
    )
    assert job["failed"] == len(letters), f"{len(letters)} dead letters for {job['failed']} failed rows"
    for letter in letters:
        assert letter["retryable"] and server.handle.host in letter["error"], letter
    fault_log(struck_at=fault.struck_at_rows, **numbers, dead_letters=len(letters), retries=job["retries"])
    assert numbers["stored"] > (fault.struck_at_rows or 0), job["summary"]
    assert job["failed"] == 0, job["summary"]  # the restart was ridden out
