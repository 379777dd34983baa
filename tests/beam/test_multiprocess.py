"""``WriteToVectorDB`` on the FnApiRunner with two worker processes, each with its own client.

``--direct_num_workers=2 --direct_running_mode=multi_processing``: the runner starts two SDK
worker processes (``sdk_worker_main``) and splits every stage's input between them. The server
runs in a third process and is asked what arrived.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from tests.servers.fixtures import ServerHandle
from vectordb.beam import WriteToVectorDB

from . import data
from .conftest import counters

SHARDS = 20  # 20,000 records
MULTI_PROCESS = ["--direct_num_workers=2", "--direct_running_mode=multi_processing"]


def check_two_workers(pids: list[int], driver_pid: int) -> None:
    if len(set(pids)) != 2 or driver_pid in pids:
        raise AssertionError(f"expected two worker processes besides {driver_pid}, saw {sorted(set(pids))}")


@pytest.mark.usefixtures("worker_env")
def test_two_worker_processes_reject_throttle_and_count(server_process: ServerHandle, tmp_path: Path) -> None:
    server_process.reset()
    rejected = data.rejected_ids(SHARDS)
    server_process.script(reject_ids=rejected, throttle_first=6, max_in_flight=3, retry_after_s=0.01)
    pipeline = beam.Pipeline(runner=FnApiRunner(), options=PipelineOptions(MULTI_PROCESS))
    records = pipeline | beam.Create(list(range(SHARDS))) | beam.FlatMap(data.records)
    _ = records | WriteToVectorDB(
        server_process.uri, max_concurrency=4, on_error="dead_letter", dead_letter_path=str(tmp_path)
    )
    _ = (
        records
        | "worker pid" >> beam.Map(lambda _: os.getpid())
        | beam.Distinct()
        | beam.combiners.ToList()
        | beam.Map(check_two_workers, os.getpid())
    )
    run = pipeline.run()
    run.wait_until_finish()

    want = data.expected(SHARDS)
    arrived = server_process.arrived()
    assert arrived.ids() == set(want) - rejected
    for row_id in arrived.ids():
        got = arrived.vector(row_id)
        assert got.values_f32 == want[row_id][0] and got.metadata == want[row_id][1], row_id

    letters = [
        json.loads(line) for f in tmp_path.glob("dead-letters-*.jsonl") for line in f.read_text().splitlines()
    ]
    assert sorted(letter["id"] for letter in letters) == sorted(rejected)
    for letter in letters:
        assert np.asarray(letter["values"], dtype=np.float32).tobytes() == want[letter["id"]][0]
        assert letter["error_type"] == "Rejected" and not letter["retryable"]

    throttled = arrived.count("throttled") + arrived.count("over_quota")
    assert throttled >= 6
    assert counters(run) == {
        "written": len(want) - len(rejected),
        "failed": len(rejected),
        "requests": len(arrived.requests),
        "retries": throttled,
        "throttled": throttled,
        "bytes_sent": sum(r.size for r in arrived.requests),
    }
