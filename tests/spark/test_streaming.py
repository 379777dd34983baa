"""writeStream.format("vectordb"): micro-batches land; a restart from the checkpoint repeats no finished one.

The ``rate-micro-batch`` source is deterministic: batch ``k`` holds values ``k*R .. (k+1)*R - 1``,
so the rows of every micro-batch (named in the per-batch reports, and in Spark's commit log once
Spark has recorded it as done) are known exactly.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from tests.servers.fixtures import ServerHandle

ROWS_PER_BATCH = 40


def start_query(spark: Any, server: ServerHandle, tmp_path: Path) -> Any:
    stream = (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", ROWS_PER_BATCH)
        .option("numPartitions", 2)
        .load()
        .selectExpr(
            "concat('s', cast(value as string)) as id",
            "array(cast(value as float), cast(value % 7 as float), -0.5f) as values",
            "value",
        )
    )
    return (
        stream.writeStream.format("vectordb")
        .option("uri", server.uri)
        .option("namespace", "stream")
        .option("report_path", str(tmp_path / "reports"))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="0 seconds")
        .start()
    )


def run_until(query: Any, committed: int, reports: Path, timeout_s: float = 120) -> None:
    """Let ``query`` run until ``committed`` micro-batch reports exist in total, then stop it."""
    deadline = time.monotonic() + timeout_s
    try:
        while len(list(reports.glob("batch-*.json"))) < committed:
            assert query.exception() is None, query.exception()
            assert time.monotonic() < deadline, f"fewer than {committed} micro-batches in {timeout_s} s"
            time.sleep(0.2)
    finally:
        query.stop()


def batch_reports(reports: Path) -> dict[int, dict[str, Any]]:
    return {int(p.stem.split("-")[1]): json.loads(p.read_text()) for p in reports.glob("batch-*.json")}


def spark_commits(checkpoint: Path) -> set[int]:
    """The micro-batches Spark recorded as done: a replay after a restart starts after the last of them."""
    return {int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit()}


def rows_of(batch_ids: set[int]) -> set[str]:
    return {f"s{v}" for b in batch_ids for v in range(b * ROWS_PER_BATCH, (b + 1) * ROWS_PER_BATCH)}


def test_micro_batches_land_and_a_restart_repeats_none(
    spark: Any, own_server: ServerHandle, tmp_path: Path
) -> None:
    grpc_server = own_server
    reports = tmp_path / "reports"
    run_until(start_query(spark, grpc_server, tmp_path), 3, reports)
    first = batch_reports(reports)
    done = spark_commits(tmp_path / "checkpoint")
    seen_before = len(grpc_server.arrived().requests)

    run_until(start_query(spark, grpc_server, tmp_path), len(first) + 2, reports)
    both = batch_reports(reports)
    assert len(first) >= 3 and len(both) >= len(first) + 2  # several micro-batches landed, in both runs
    assert len(done) >= 2 and done <= set(first)
    assert sorted(both) == list(range(len(both)))  # contiguous from 0: nothing skipped
    assert all(r["written"] == ROWS_PER_BATCH and r["failed"] == 0 for r in both.values())

    arrived = grpc_server.arrived()
    after_restart = {v.id for r in arrived.requests[seen_before:] if r.outcome == "ok" for v in r.vectors}
    # the restart repeats no batch Spark had recorded as done; one whose commit our sink finished
    # but Spark had not recorded when stop() came is run again: the same rows, upserted again
    assert not after_restart & rows_of(done)
    assert rows_of(set(both)) <= arrived.ids("stream")
    extra = arrived.ids("stream") - rows_of(set(both))
    assert extra <= rows_of({max(both) + 1})  # a batch cancelled by stop() may have sent rows
    got = arrived.vector("s45", "stream")
    assert got.values_f32 == np.array([45, 45 % 7, -0.5], dtype="<f4").tobytes()
    assert got.metadata == {"value": 45.0}
