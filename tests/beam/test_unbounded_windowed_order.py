"""Unbounded batching in windows other than the global one: the same id twice in one bundle lands in
input order (README, "What happens to each row": the last occurrence wins, upserts and deletes alike).
``GroupIntoBatches`` kept a buffer per window and flushed each at its window's end, so a row of window
[0, 100) landed after a later row of window [100, 200): the older vector stayed, a deleted id came back.
Reports and letters still come out in their rows' windows."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing import test_stream
from apache_beam.transforms import window

from tests.servers.fixtures import ServerHandle, start_server
from vectordb.beam import WriteToVectorDB
from vectordb.connector.transports.base import forget_shared

# event time 50 is window [0, 100), 150 is [100, 200): each id's later occurrence in an earlier window
TIMED = [
    ({"id": "X", "values": [1.0, 2.0, 3.0]}, 150),
    ({"id": "X", "op": "delete"}, 50),
    ({"id": "Y", "values": [1.0, 2.0, 3.0]}, 50),
    ({"id": "Y", "values": [9.0, 9.0, 9.0]}, 150),
    ({"id": "Z", "values": [1.0, 2.0]}, 150),  # the wrong dimension: a letter, in window [100, 200)
]


@pytest.fixture
def server() -> Iterator[ServerHandle]:
    with start_server("rest") as running:
        yield running
        forget_shared()


REPORTS: list[tuple[float, int]] = []  # filled by the in-process runner: (window start, rows written)
LETTERS: list[tuple[float, str]] = []


def _report(report: Any, w: Any = beam.DoFn.WindowParam) -> None:
    REPORTS.append((float(w.start), report.written))


def _letter(letter: dict[str, Any], w: Any = beam.DoFn.WindowParam) -> None:
    LETTERS.append((float(w.start), letter["id"]))


def _run(pipeline: beam.Pipeline, result: Any) -> None:
    _ = result.written | "Reports" >> beam.Map(_report)
    _ = result.failed | "Letters" >> beam.Map(_letter)
    REPORTS.clear()
    LETTERS.clear()
    pipeline.run().wait_until_finish()


def _check_outputs() -> None:
    """Each report in its rows' window, each letter in its row's."""
    written: dict[float, int] = {}
    for start, count in REPORTS:
        written[start] = written.get(start, 0) + count
    assert written == {0.0: 2, 100.0: 2}  # X delete, Y; X, Y' (Z failed)
    assert LETTERS == [(100.0, "Z")]


def _assert_last_occurrence_wins(server: ServerHandle) -> None:
    final = server.arrived().final
    assert ("", "X") not in final  # deleted last, in input order
    assert final[("", "Y")].values.tolist() == [9.0, 9.0, 9.0]


def test_batching_unbounded_in_windows_keeps_input_order(server: ServerHandle) -> None:
    pipeline = beam.Pipeline(runner=FnApiRunner())
    rows = (
        pipeline
        | beam.Create(list(range(len(TIMED))), reshuffle=False)
        | beam.Map(lambda i: window.TimestampedValue(*TIMED[i]))
        | beam.WindowInto(window.FixedWindows(100))
    )
    result = rows | WriteToVectorDB(
        server.uri, dimension=3, on_error="report", batching="unbounded", rows_per_batch=10
    )
    _run(pipeline, result)
    _assert_last_occurrence_wins(server)
    _check_outputs()


def test_a_stream_in_windows_keeps_input_order(server: ServerHandle) -> None:
    options = PipelineOptions([])
    options.view_as(StandardOptions).streaming = True
    pipeline = beam.Pipeline(options=options)
    stream = (
        test_stream.TestStream()
        .add_elements([window.TimestampedValue(*timed) for timed in TIMED])
        .advance_watermark_to_infinity()
    )
    result = (
        pipeline
        | stream
        | beam.WindowInto(window.FixedWindows(100))
        | WriteToVectorDB(server.uri, dimension=3, on_error="report", max_buffering_s=0.5)
    )
    _run(pipeline, result)
    _assert_last_occurrence_wins(server)
    _check_outputs()


def test_sliding_windows_batch_each_window_and_keep_input_order(server: ServerHandle) -> None:
    """An element in two sliding windows is one occurrence, written in its first window (the one that
    starts last); an id's later occurrence sends the batch holding its earlier one first."""
    timed = [({"id": f"a{i}", "values": [1.0, 2.0, float(i)]}, 10) for i in range(4)]
    timed += [({"id": "Y", "values": [1.0, 2.0, 3.0]}, 40), ({"id": "Y", "values": [9.0, 9.0, 9.0]}, 60)]
    pipeline = beam.Pipeline(runner=FnApiRunner())
    rows = (
        pipeline
        | beam.Create(list(range(len(timed))), reshuffle=False)
        | beam.Map(lambda i: window.TimestampedValue(*timed[i]))
        | beam.WindowInto(window.SlidingWindows(100, 50))
    )
    result = rows | WriteToVectorDB(server.uri, dimension=3, on_error="report", batching="unbounded")
    _run(pipeline, result)
    assert server.arrived().final[("", "Y")].values.tolist() == [9.0, 9.0, 9.0]
    # a0..a3 and Y in [0, 100) (also in [-50, 50)), sent when Y' came; Y' in [50, 150) (also [0, 100))
    assert sorted(REPORTS) == [(0.0, 5), (50.0, 1)]
    assert LETTERS == []
