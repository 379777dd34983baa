"""Sliding windows give an element several windows: the sink wrote, counted and dead-lettered it once
per window (SlidingWindows(30, 10): each row 3 times, 2 failed rows 6 letters). An element is written
once, in one of its windows, with one report and one letter, and consecutive elements share batches."""

from __future__ import annotations

import json
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.transforms import window

from tests.servers.fixtures import ServerHandle
from vectordb.beam import WriteToVectorDB

from .conftest import counters


def _elements(good: int) -> list[window.TimestampedValue]:
    rows = [window.TimestampedValue({"id": f"g{i}", "values": [1.0, 2.0, float(i)]}, i) for i in range(good)]
    rows.append(window.TimestampedValue({"id": "bad", "values": "not a vector"}, 3))  # refused at reading
    rows.append(window.TimestampedValue({"id": "rej", "values": [1.0, 2.0, 3.0]}, 4))  # by the database
    return rows


@pytest.mark.parametrize("batching", ["bounded", "unbounded"])
def test_an_element_in_three_sliding_windows_is_written_counted_and_lettered_once(
    grpc_server: ServerHandle, tmp_path: Path, batching: str
) -> None:
    grpc_server.script(reject_ids=frozenset({"rej"}))
    letters = tmp_path / "letters"
    pipeline = beam.Pipeline(runner=FnApiRunner())
    result = (
        pipeline
        | beam.Create(_elements(8), reshuffle=False)
        | beam.WindowInto(window.SlidingWindows(30, 10))
        | WriteToVectorDB(grpc_server.uri, api_key="k", dimension=3, batching=batching, on_error="report")
    )
    _ = (
        result.failed
        | beam.Map(json.dumps)
        | "Global" >> beam.WindowInto(window.GlobalWindows())
        | beam.io.WriteToText(str(letters), file_name_suffix=".jsonl")
    )
    outcome = pipeline.run()
    outcome.wait_until_finish()
    ids = [
        json.loads(line)["id"] for path in tmp_path.glob("letters*") for line in path.read_text().splitlines()
    ]
    assert sorted(ids) == ["bad", "rej"]
    got = counters(outcome)
    assert (got["written"], got["failed"]) == (8, 2)
    assert sorted(grpc_server.arrived().ids()) == sorted(f"g{i}" for i in range(8))


@pytest.mark.parametrize("batching", ["bounded", "unbounded"])
def test_sliding_windows_batch_many_rows_a_request(grpc_server: ServerHandle, batching: str) -> None:
    """Bounded: each element's next window flushed the other window's batch, one request a row."""
    pipeline = beam.Pipeline(runner=FnApiRunner())
    timed = [window.TimestampedValue({"id": f"r{i}", "values": [1.0, 2.0, 3.0]}, i / 10) for i in range(2000)]
    _ = (
        pipeline
        | beam.Create(timed, reshuffle=False)
        | beam.WindowInto(window.SlidingWindows(60, 20))
        | WriteToVectorDB(grpc_server.uri, api_key="k", dimension=3, batching=batching, on_error="report")
    )
    outcome = pipeline.run()
    outcome.wait_until_finish()
    got = counters(outcome)
    assert got["written"] == 2000
    assert got["requests"] <= 60, got
