"""A task whose Python worker is killed mid-write is retried by Spark: no row lost, none counted twice.

The test kills the process itself, from outside, as a lost executor would die: SIGKILL to one of
the Python workers of this session's JVM that holds a connection to the server while it writes.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.servers.fixtures import ServerHandle

from .conftest import float32_rows, vectors_table


def writing_workers(spark: Any, port: int) -> list[Any]:
    """This JVM's Python worker processes with an open connection to ``port`` (the writers at work)."""
    psutil = pytest.importorskip("psutil")
    jvm = psutil.Process(spark.sparkContext._gateway.proc.pid)
    found = []
    for proc in jvm.children(recursive=True):
        try:
            if any(c.raddr and c.raddr.port == port for c in proc.net_connections(kind="tcp")):
                found.append(proc)
        except psutil.NoSuchProcess:
            continue
    return found


def kill_a_writer_midway(spark: Any, server: ServerHandle, after_requests: int, killed: list[int]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if len(server.arrived().accepted) >= after_requests:
            workers = writing_workers(spark, server.port)
            if workers:
                workers[0].send_signal(signal.SIGKILL)
                killed.append(workers[0].pid)
                return
        time.sleep(0.05)


def test_killed_task_is_retried_without_loss_or_duplicates(
    spark: Any, own_server: ServerHandle, tmp_path: Path
) -> None:
    grpc_server = own_server
    table = vectors_table(4000, 16)
    rejected = {"v1", "v2001"}  # a dead letter in each partition, whichever dies
    grpc_server.script(reject_ids=frozenset(rejected), delay_s=0.03)
    killed: list[int] = []
    killer = threading.Thread(target=kill_a_writer_midway, args=(spark, grpc_server, 12, killed))
    killer.start()
    try:
        (
            spark.createDataFrame(table)
            .write.format("vectordb")
            .option("uri", grpc_server.uri)
            .option("batch_size", "50")
            .option("max_concurrency", "1")
            .option("on_error", "dead_letter")
            .option("dead_letter_path", str(tmp_path / "dead"))
            .option("report_path", str(tmp_path / "reports"))
            .mode("append")
            .save()
        )
    finally:
        killer.join()
    assert killed, "no writer was killed"
    arrived = grpc_server.arrived()
    expected = {k: v for k, v in float32_rows(table).items() if k not in rejected}
    assert {vid: v.values_f32 for (_, vid), v in arrived.final.items()} == expected  # nothing lost
    sent = sum(len(r.vectors) for r in arrived.accepted)
    assert sent > len(expected)  # the killed attempt had written rows: its retry sent them again
    (report_file,) = (tmp_path / "reports").glob("job-*.json")
    report = json.loads(report_file.read_text())
    assert (report["written"], report["failed"]) == (3998, 2)  # counted once: the retry's report only
    assert sorted(t["attempt"] for t in report["tasks"]) == [0, 1]
    letters = sorted(r["id"] for r in spark.read.parquet(str(tmp_path / "dead")).collect())
    assert letters == sorted(rejected)  # the killed attempt's staged file was dropped, not published
