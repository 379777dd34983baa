"""Unbounded input: the ``WriteReport``s on ``.written`` and the letters on ``.failed`` count every row.

On the DirectRunner the sink's Metrics counters miss the increments of bundles that a
``GroupIntoBatches`` timer flushes (a plain DoFn after ``GroupIntoBatches.WithShardedKey`` loses its
own the same way, and so does one after a ``Reshuffle`` in streaming mode): with unbounded input,
``PipelineResult.metrics()`` may count fewer rows than were written. The reports are the exact count,
in streaming mode (``TestStream``) and with ``batching="unbounded"`` on bounded input alike.
"""

from __future__ import annotations

from typing import Any

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.testing import test_stream

from tests.servers.fixtures import ServerHandle
from vectordb.beam import WriteToVectorDB

UPSERTS = [{"id": f"a{i}", "values": [1.0, float(i), 0.5], "tenant": "t1"} for i in range(40)]
LATER = [
    {"id": "a0", "op": "delete", "tenant": "t1"},
    {"id": "a1", "op": "Delete", "tenant": "t1"},
    {"id": "zz", "op": "delete", "tenant": "t9"},
    {"id": "a2", "op": "merge", "tenant": "t1"},  # refused where it is read
    {"id": None, "op": "delete", "tenant": "t1"},  # refused by the write's checks
]


REPORTS: list[Any] = []  # filled by the in-process runner (module functions are pickled by reference)
FAILED: list[dict[str, Any]] = []


def _report(report: Any) -> None:
    REPORTS.append(report)


def _failed(letter: dict[str, Any]) -> None:
    FAILED.append(letter)


def _totals(reports: list[Any]) -> list[tuple[str, int]]:
    return [(name, sum(getattr(r, name) for r in reports)) for name in ("written", "deleted", "failed")]


@pytest.mark.parametrize("streaming", [True, False])
def test_the_reports_of_unbounded_input_account_for_every_row(
    rest_server: ServerHandle, streaming: bool
) -> None:
    options = PipelineOptions()
    options.view_as(StandardOptions).streaming = streaming
    pipeline = beam.Pipeline(options=options)
    if streaming:
        rows = (
            pipeline
            | test_stream.TestStream()
            .add_elements(UPSERTS)
            .advance_processing_time(5)
            .advance_watermark_to(10)
            .add_elements(LATER)
            .advance_watermark_to_infinity()
        )
    else:
        rows = pipeline | beam.Create(UPSERTS + LATER)
    result = rows | WriteToVectorDB(
        rest_server.uri,
        namespace_column="tenant",
        op_column="op",
        on_error="report",
        batching="unbounded",
        rows_per_batch=7,
        max_buffering_s=0.5,
    )
    _ = result.written | "Reports" >> beam.Map(_report)
    _ = result.failed | "Failed" >> beam.Map(_failed)
    REPORTS.clear()
    FAILED.clear()
    pipeline.run().wait_until_finish()
    # 40 upserts and 3 deletes written (one of an id the index has not), one row failed in the write
    assert _totals(REPORTS) == [("written", 43), ("deleted", 3), ("failed", 1)]
    # every failed row once: the one refused where it was read, the one refused by the write
    assert sorted(str(letter.get("id")) for letter in FAILED) == ["None", "a2"]
    assert {ns: sorted(ids) for ns, ids in rest_server.arrived().namespaces.items() if ids} == {
        "t1": sorted(f"a{i}" for i in range(2, 40))
    }
