"""A file load that survives its driver being killed: run as a Structured Streaming query over the input
files (``maxFilesPerTrigger``, ``trigger(availableNow=True)``, a checkpoint), SIGKILLed half way (driver,
JVM and Python workers at once) and started again from its checkpoint.

The target is the project's Pinecone-protocol test server (``tests/servers``) in its own process,
which records every upsert request, so the rows each run sent are counted at the server. The second
run must send exactly the rows of the micro-batches Spark had not recorded as done, none of a batch
it had (so at most the rows the server lacked plus one micro-batch: the one the kill interrupted),
and the server must end holding every input row, exactly.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.servers.fixtures import ServerHandle, start_server_process

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

DRIVER = Path(__file__).with_name("load_driver.py")
FILES = 12
ROWS_PER_FILE = 50
DIM = 8
NAMESPACE = "resumed"


@pytest.fixture
def server() -> Iterator[ServerHandle]:
    with start_server_process("grpc") as handle:
        yield handle


def write_input(folder: Path) -> dict[str, bytes]:
    """``FILES`` Parquet files of ``ROWS_PER_FILE`` rows; id → its vector's float32 bytes."""
    folder.mkdir()
    rng = np.random.default_rng(11)
    expected = {}
    for f in range(FILES):
        ids = [f"f{f}-{i}" for i in range(ROWS_PER_FILE)]
        matrix = rng.standard_normal((ROWS_PER_FILE, DIM), dtype=np.float32)
        offsets = pa.array(np.arange(0, ROWS_PER_FILE * DIM + 1, DIM, dtype=np.int32))
        table = pa.table(
            {
                "id": ids,
                "values": pa.ListArray.from_arrays(offsets, pa.array(matrix.reshape(-1))),
                "file": [f] * len(ids),
            }
        )
        pq.write_table(table, folder / f"part-{f:03d}.parquet")
        expected.update({i: m.astype("<f4").tobytes() for i, m in zip(ids, matrix, strict=True)})
    return expected


def start(config: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "VIRTUAL_ENV"))}
    env.update(SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    with (config.parent / f"{config.stem}.log").open("ab") as log:
        return subprocess.Popen(
            [sys.executable, str(DRIVER), str(config)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,  # the JVM and the Python workers die with it
        )


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)


def committed(checkpoint: Path) -> set[int]:
    """The micro-batches Spark recorded as done."""
    commits = checkpoint / "commits"
    return {int(p.name) for p in commits.iterdir() if p.name.isdigit()} if commits.exists() else set()


def files_of(checkpoint: Path, batch: int) -> set[str]:
    """The input files micro-batch ``batch`` read (the file source's log in the checkpoint)."""
    lines = (checkpoint / "sources" / "0" / str(batch)).read_text().splitlines()[1:]
    return {Path(json.loads(line)["path"]).name for line in lines}


def sent(server: ServerHandle, after: int = 0) -> list[str]:
    """The ids of every accepted upsert request from the ``after``-th request on, repeats included."""
    return [v.id for r in server.arrived().requests[after:] if r.outcome == "ok" for v in r.vectors]


def test_a_killed_load_resumes_after_the_last_recorded_micro_batch(
    server: ServerHandle, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if shutil.which("java") is None:
        pytest.skip("Spark needs Java 17 or later")
    expected = write_input(tmp_path / "input")
    checkpoint = tmp_path / "checkpoint"
    config = tmp_path / "load.json"
    sink = {"uri": server.uri, "namespace": NAMESPACE, "batch_size": "20", "max_concurrency": "1"}
    config.write_text(
        json.dumps(
            {"input": str(tmp_path / "input"), "checkpoint": str(checkpoint), "max_files": 1, "sink": sink}
        )
    )

    server.script(delay_s=0.2)  # a micro-batch takes three requests of 0.2 s: time to be caught mid-way
    proc = start(config)
    try:
        deadline = time.monotonic() + 300
        # half the files loaded and the next micro-batch partly sent: kill it there
        while not (
            len(recorded := committed(checkpoint)) >= FILES // 2
            and len(sent(server)) > len(recorded) * ROWS_PER_FILE
        ):
            assert proc.poll() is None, (tmp_path / "load.log").read_text()[-4000:]
            assert time.monotonic() < deadline, "half the load did not finish in 300 s"
            time.sleep(0.05)
    finally:
        kill_group(proc)
    time.sleep(1)  # a request in flight at the kill is answered and recorded by the server
    done = committed(checkpoint)
    assert FILES // 2 <= len(done) < FILES
    first = sent(server)
    requests_before = len(server.arrived().requests)

    proc = start(config)
    try:
        assert proc.wait(timeout=600) == 0, (tmp_path / "load.log").read_text()[-4000:]
    finally:
        kill_group(proc)
    second = sent(server, requests_before)

    recorded_files = set().union(*(files_of(checkpoint, b) for b in done))
    recorded_rows = {i for i in expected if f"part-{int(i[1:].split('-')[0]):03d}.parquet" in recorded_files}
    assert len(recorded_rows) == len(done) * ROWS_PER_FILE
    # the second run sends every row Spark had not recorded, once, and none it had
    assert sorted(second) == sorted(set(expected) - recorded_rows)
    # so at most the rows the server lacked, plus the one micro-batch the kill interrupted
    assert len(second) <= len(set(expected) - set(first)) + ROWS_PER_FILE
    request.node.user_properties += [  # what the run measured (in --junitxml, junit_family=legacy)
        ("recorded_batches_at_kill", len(done)),
        ("rows_sent_before_kill", len(first)),
        ("rows_sent_after_restart", len(second)),
    ]
    arrived = server.arrived()
    assert arrived.ids(NAMESPACE) == set(expected)
    assert all(arrived.vector(i, NAMESPACE).values_f32 == v for i, v in expected.items())
