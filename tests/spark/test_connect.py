"""Spark Connect: a client session writes through the data source; its errors arrive readable.

The shared session runs the Spark Connect plugin (see conftest), so the client talks to the same
JVM over gRPC, as a Databricks serverless or shared-cluster notebook does. The client runs in a
process of its own (``connect_client.py``): a Connect session changes process-wide state.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.servers.fixtures import ServerHandle

from .conftest import connect_missing


def test_connect_client_writes_and_reads_errors(spark: Any, grpc_server: ServerHandle) -> None:
    missing = connect_missing()
    if missing:
        pytest.skip(missing)
    port = spark.conf.get("spark.connect.grpc.binding.port")
    client = Path(__file__).with_name("connect_client.py")
    result = subprocess.run(
        [sys.executable, str(client), f"sc://127.0.0.1:{port}", grpc_server.uri],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    said = json.loads(result.stdout.strip().splitlines()[-1])
    assert said["frame"].startswith("pyspark.sql.connect")
    assert "option vector_column: no column 'embedding'" in said["error"]
    arrived = grpc_server.arrived()
    assert arrived.ids("connect") == {f"k{i}" for i in range(500)}
    assert arrived.vector("k3", "connect").values_f32 == (np.arange(24, 32, dtype="<f4") / 8).tobytes()
    assert sum(r.vector_count for r in arrived.requests) == 500  # the failed write sent nothing
