"""Spark's job report (``report_path``) keeps the embedding stage's counts, retries and throttled
replies among them, which the job's summary line says too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.test_embed_report_traffic import ROWS, faulty
from tests.embedding.fixtures import embedding_options
from tests.servers.fixtures import ServerHandle


def test_sparks_job_report_keeps_them(spark: Any, tmp_path: Path, rest_server: ServerHandle) -> None:
    with faulty(answered_first=1) as server:  # the driver asks the model its dimension first
        (
            spark.createDataFrame(ROWS.to_pandas())
            .coalesce(1)
            .write.format("vectordb")
            .option("uri", rest_server.uri)
            .option("report_path", str(tmp_path / "reports"))
            .options(**{k: str(v) for k, v in {**embedding_options(server), "embed_batch_size": 50}.items()})
            .mode("append")
            .save()
        )
    (path,) = (tmp_path / "reports").glob("job-*.json")
    report = json.loads(path.read_text())
    assert (report["embedded"], report["embed_retries"], report["embed_throttled"]) == (200, 3, 2), report
    assert "200 embedded in 7 requests, 3 retries, 2 throttled" in report["summary"]


def test_the_commands_summary_says_them() -> None:
    from vectordb.connector.cli import summary

    counts = {"written": 200, "requests": 1, "embedded": 200, "embed_requests": 7, "embed_retries": 3}
    lines = summary(counts | {"embed_throttled": 2}, target="t", wall_s=1.0).splitlines()
    assert "embedded: 200 rows in 7 requests, 3 retries, 2 throttled" in lines
    assert not any(
        line.startswith("embedded:") for line in summary({"written": 1}, target="t", wall_s=1.0).splitlines()
    )
