"""Spark test set-up: one ``local[2]`` session for every test here, and protocol servers in their own processes.

The session is the expensive part (a JVM, ~20 s on a loaded 2-core machine), so every test shares
it. ``local[2,2]`` is ``local[2]`` whose tasks may fail twice (``spark.task.maxFailures`` has no
effect in local mode otherwise), for the killed-task test. The session also runs the Spark Connect
plugin on a free loopback port, so the Connect test talks to this JVM instead of starting another.
Executors are other processes: servers run as processes too (``start_server_process``), and the
test asks them what arrived.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from jobs.spark_cluster import free_port
from tests.servers.fixtures import ServerHandle, start_server_process

ROOT = Path(__file__).resolve().parents[2]

# Before any JVM starts: bind loopback only, and run executors' Python with this interpreter
# (it has the connector); the repository root lets workers import tests.spark.udfs.
os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)


CONNECT_MODULES = {  # pyspark[connect]'s extras (module: package)
    "grpc": "grpcio",
    "grpc_status": "grpcio-status",
    "google.rpc": "googleapis-common-protos",
    "zstandard": "zstandard",
}


def connect_missing() -> str | None:
    """What a Spark Connect client lacks here, or ``None``.

    Looked up, not imported: importing ``pyspark.sql.connect`` without them can end the process.
    """
    missing = [
        package for module, package in CONNECT_MODULES.items() if importlib.util.find_spec(module) is None
    ]
    return f"Spark Connect needs {', '.join(missing)} (pyspark[connect])" if missing else None


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The shared classic session, with ``format("vectordb")`` registered (the dev install is editable)."""
    pytest.importorskip("pyspark")
    from pyspark.errors import PySparkRuntimeError
    from pyspark.sql import SparkSession

    from vectordb.spark import register

    builder = (
        SparkSession.builder.master("local[2,2]")
        .appName("vectordb-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
    )
    connect = connect_missing() is None
    if connect:
        builder = builder.config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin").config(
            "spark.connect.grpc.binding.address", "127.0.0.1"
        )
    for attempt in (1, 2):
        if connect:  # a port found free may be taken before the JVM binds it, which then exits: once more
            builder = builder.config("spark.connect.grpc.binding.port", str(free_port()))
        try:
            session = builder.getOrCreate()
            break
        except PySparkRuntimeError as exc:  # JAVA_GATEWAY_EXITED: the JVM did not start
            if attempt == 2 or "JAVA_GATEWAY_EXITED" not in str(exc):
                raise
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def grpc_process() -> Iterator[ServerHandle]:
    with start_server_process("grpc") as handle:
        yield handle


@pytest.fixture(scope="session")
def rest_process() -> Iterator[ServerHandle]:
    with start_server_process("rest") as handle:
        yield handle


@pytest.fixture
def grpc_server(grpc_process: ServerHandle) -> ServerHandle:
    """The session's gRPC server in its own process, emptied and with the default script."""
    grpc_process.reset()
    return grpc_process


@pytest.fixture
def rest_server(rest_process: ServerHandle) -> ServerHandle:
    rest_process.reset()
    return rest_process


@pytest.fixture
def own_server() -> Iterator[ServerHandle]:
    """A gRPC server only this test's tasks connect to: idle reused workers hold channels to the shared
    one, and a micro-batch cancelled by ``stop()`` may still send after its test ends."""
    with start_server_process("grpc") as handle:
        yield handle


def job_ids(spark: Any) -> set[int]:
    """Every job id the session's status tracker knows (jobs of no group included)."""
    return set(spark.sparkContext.statusTracker().getJobIdsForGroup())


def vectors_table(n: int, dim: int, *, seed: int = 7, start: int = 0) -> pa.Table:
    """``id`` (string), ``values`` (list<float32>, random), ``title``, ``n``: exact float32s to compare."""
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((n, dim), dtype=np.float32)
    offsets = pa.array(np.arange(0, n * dim + 1, dim, dtype=np.int32))
    return pa.table(
        {
            "id": pa.array([f"v{start + i}" for i in range(n)]),
            "values": pa.ListArray.from_arrays(offsets, pa.array(matrix.reshape(-1))),
            "title": pa.array([f"title {start + i}" for i in range(n)]),
            "n": pa.array(np.arange(start, start + n, dtype=np.int64)),
        }
    )


def float32_rows(table: pa.Table, column: str = "values") -> dict[str, bytes]:
    """id → the row's vector as little-endian float32 bytes, as the server records it."""
    ids = table.column("id").to_pylist()
    vectors = table.column(column).to_pylist()
    return {i: np.asarray(v, dtype="<f4").tobytes() for i, v in zip(ids, vectors, strict=True)}
