"""``spark.speculation=true``: every write is refused, before any row is sent, naming the conf and the way out.

A speculative copy of a task writes the partition again while the first attempt still writes, and a
request already sent lands even after Spark kills the attempt that lost: an id upserted then deleted in
one task could end stored while the job reports success. ``writer()`` on the driver is not given the
session's conf (Spark passes it options, schema and save mode only), so each task refuses first.

The session with speculation on runs in ``speculation_driver.py`` (a conf needs its own JVM); speculation
off is the shared session, which writes the same rows as before.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from jobs.spark_cluster import free_port
from tests.servers.fixtures import ServerHandle

from .conftest import connect_missing

DRIVER = Path(__file__).with_name("speculation_driver.py")
REFUSAL = "ConfigError: spark.speculation=true: Spark may run a second copy of a slow task"
WAY_OUT = "started with spark.speculation=false (spark-submit --conf spark.speculation=false"


@pytest.mark.timeout(900)  # a JVM of its own, and a Connect client's
def test_speculation_refuses_every_write_before_a_row_is_sent(grpc_server: ServerHandle) -> None:
    pytest.importorskip("pyspark")
    port = None if connect_missing() else str(free_port())
    result = subprocess.run(
        [sys.executable, str(DRIVER), grpc_server.uri, *([port] if port else [])],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    said: dict[str, str] = json.loads(result.stdout.strip().splitlines()[-1])
    writes = ["batch", "stream", *(["connect"] if port else [])]
    for write in writes:
        assert REFUSAL in said[write], (write, said[write][-3000:])
        assert WAY_OUT in said[write], (write, said[write][-3000:])
    assert "spark.speculation" in said["set"]  # a running session cannot turn it off: the message says so
    arrived = grpc_server.arrived()
    assert (arrived.requests, arrived.deletes) == ([], [])


def test_without_speculation_the_same_write_ends_as_its_last_occurrence(
    spark: Any, grpc_server: ServerHandle
) -> None:
    from .speculation_driver import rows

    assert spark.conf.get("spark.speculation", "false") == "false"
    rows(spark).write.format("vectordb").option("uri", grpc_server.uri).option("op_column", "op").option(
        "on_error", "report"
    ).mode("append").save()
    arrived = grpc_server.arrived()
    assert arrived.ids() == {f"r{i}" for i in range(700)} - {"r60", "r30"}
    assert [d.ids for d in arrived.deletes] == [["r30"]]
